//! The timer probe's cyclictest keys in a campaign file (`threads`,
//! `priospread`, `aligned`, durations in days): read into the settings
//! and the probe's config, and refused at their line with the probe's own
//! rules, as `rtlab measure timer`'s flags are.

use rtlab_campaign::*;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_probe::timer::{RunLength, TimerConfig};

fn campaign(probe_keys: &str, configuration: &str) -> String {
    format!(
        r#"name = "t"
duration = "1d"

[[probe]]
kind = "timer"
{probe_keys}

[[load]]
name = "idle"
run = []

[[configuration]]
name = "c"
{configuration}
"#
    )
}

fn parse_text(text: &str) -> Result<Campaign, CampaignError> {
    parse(text, "c.toml", &|_: &str| Ok(()))
}

/// The error's line, field and text.
fn refused(text: &str) -> (usize, String, String) {
    let e = parse_text(text).expect_err("refused");
    (
        e.line().unwrap_or(0),
        e.field.clone().unwrap_or_default(),
        e.to_string(),
    )
}

fn line_of(text: &str, marker: &str) -> usize {
    1 + text.lines().position(|l| l.contains(marker)).unwrap()
}

#[test]
fn the_keys_reach_the_probe_s_config() {
    let text = campaign(
        "cpus = \"0\"\nthreads = 3\npriospread = true\naligned = \"50us\"\nmode = \"posix\"",
        "policy = \"fifo\"\npriority = 10",
    );
    let c = parse_text(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.duration_ns, 86_400_000_000_000, "1d");
    let timer = c.probes[0].settings_as::<TimerSettings>().unwrap();
    assert_eq!(
        (
            timer.threads,
            timer.priospread,
            timer.aligned_ns,
            timer.mode
        ),
        (Some(3), true, 50_000, WaitMode::Posix)
    );
    let sched = SchedParams {
        policy: Policy::Fifo,
        priority: 10,
        deadline: None,
    };
    let config: TimerConfig = timer.config(vec![0], RunLength::Loops(5), sched);
    assert_eq!(config.validate(), Ok(()));
    let threads: Vec<(Option<usize>, u32, u64)> = (0..config.thread_count())
        .map(|i| {
            (
                config.pinned_cpu_of(i),
                config.sched_of(i).priority,
                config.offset_of(i),
            )
        })
        .collect();
    assert_eq!(
        threads,
        [(None, 10, 0), (None, 9, 50_000), (None, 8, 100_000)]
    );
    assert!(c.probes[0]
        .describe()
        .contains("3 floating threads, priospread, aligned 50us"));
}

#[test]
fn bad_values_are_refused_at_their_line() {
    let text = campaign("threads = 0", "policy = \"fifo\"");
    let (line, field, shown) = refused(&text);
    assert_eq!(
        (line, field.as_str()),
        (line_of(&text, "threads = 0"), "probe[0].threads")
    );
    assert!(shown.contains("must be at least 1"), "{shown}");

    let text = campaign("threads = -2", "policy = \"fifo\"");
    let (line, field, _) = refused(&text);
    assert_eq!(
        (line, field.as_str()),
        (line_of(&text, "threads = -2"), "probe[0].threads")
    );

    let text = campaign("aligned = \"5 parsecs\"", "policy = \"fifo\"");
    let (line, field, shown) = refused(&text);
    assert_eq!(
        (line, field.as_str()),
        (line_of(&text, "aligned ="), "probe[0].aligned")
    );
    assert!(shown.contains("invalid duration"), "{shown}");

    let text = campaign("priospread = \"yes\"", "policy = \"fifo\"");
    let (line, _, _) = refused(&text);
    assert_eq!(line, line_of(&text, "priospread ="));

    let text = campaign("interval = \"213504d\"", "policy = \"fifo\"");
    let (_, _, shown) = refused(&text);
    assert!(shown.contains("too large"), "{shown}");
}

#[test]
fn priospread_is_checked_with_each_configuration_s_priority() {
    // Two floating threads at priority 1: the second would run at 0.
    let text = campaign(
        "threads = 2\npriospread = true",
        "policy = \"fifo\"\npriority = 1",
    );
    let (line, field, shown) = refused(&text);
    assert_eq!(
        (line, field.as_str()),
        (line_of(&text, "priority = 1"), "configuration[0].priority")
    );
    assert!(
        shown
            .contains("priority 1 with priospread over 2 threads would run the last at priority 0"),
        "{shown}"
    );
    // No static priority to spread.
    let text = campaign("priospread = true", "policy = \"other\"");
    let (line, _, shown) = refused(&text);
    assert_eq!(line, line_of(&text, "policy = \"other\""));
    assert!(
        shown.contains("priospread needs policy fifo or rr"),
        "{shown}"
    );
    // Every online CPU counts for `cpus = "all"`: at priority 1 only one
    // thread fits.
    let online = CpuSet::online().iter().count();
    let text = campaign("priospread = true", "policy = \"fifo\"\npriority = 1");
    assert_eq!(parse_text(&text).is_ok(), online == 1);
}
