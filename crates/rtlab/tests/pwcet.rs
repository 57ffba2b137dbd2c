//! `rtlab show RUN --pwcet`: the worst-case estimate of every series of a
//! stored run, or the reasons it was refused.

mod common;

use common::{rtlab, run};

#[test]
fn show_adds_a_worst_case_estimate_or_says_why_not() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let measured = run(rtlab(state).args(["measure", "timer", "--duration", "2s", "--quiet"]));
    assert!(measured.status.success());

    let out = run(rtlab(state).args(["show", "last", "--pwcet", "--json"]));
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.pwcet/1");
    let series = doc["series"].as_array().unwrap();
    assert!(!series.is_empty());
    for s in series {
        let estimate = &s["estimate"];
        // Either numbers with intervals, or no number and the reasons.
        match estimate["verdict"]["status"].as_str() {
            Some("estimated") => {
                assert!(
                    !estimate["pwcet"].as_array().unwrap().is_empty(),
                    "{estimate}"
                )
            }
            Some("refused") => {
                assert!(
                    estimate["pwcet"].as_array().is_none_or(|p| p.is_empty()),
                    "{estimate}"
                );
                assert!(!estimate["verdict"]["reasons"]
                    .as_array()
                    .unwrap()
                    .is_empty());
            }
            other => panic!("unknown verdict {other:?}: {estimate}"),
        }
        assert!(
            !estimate["checks"].as_array().unwrap().is_empty(),
            "{estimate}"
        );
    }

    let text = run(rtlab(state).args(["show", "last", "--pwcet"]));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("worst-case estimate, series cpu0"),
        "{stdout}"
    );
    assert!(stdout.contains("enough data"), "{stdout}");
}
