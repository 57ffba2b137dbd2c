//! A setting another live rtlab holds is refused before anything is
//! measured or changed: `rtlab measure` exits 2 naming the setting and the
//! other rtlab's pid; a campaign stores that cell as failed with the
//! reason and measures its other cells.
//!
//! The setting is `vm.stat_interval` (seconds between the kernel's VM
//! statistics updates): changing it between 1 and 2 harms nothing, and no
//! other test uses it, so the tests of this file do not race with others.
//! They use it one after the other (one test).

mod common;

use std::path::Path;
use std::process::Child;

const SYSCTL: &str = "/proc/sys/vm/stat_interval";

fn read_sysctl() -> String {
    std::fs::read_to_string(SYSCTL).unwrap().trim().to_string()
}

/// Puts the original value back whatever happens to the test, after
/// stopping the rtlab that holds it.
struct Holder {
    child: Child,
    original: String,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::write(SYSCTL, &self.original);
    }
}

#[test]
fn a_setting_held_by_another_rtlab_is_refused_before_measuring() {
    if !common::is_root() || !Path::new(SYSCTL).exists() {
        common::skip(&format!("needs root and {SYSCTL} to change a real sysctl"));
        return;
    }
    let original = read_sysctl();
    let held = if original == "1" { "2" } else { "1" };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("first.json");
    // The first rtlab holds the setting for a long run. Both share the
    // state directory, as two rtlab runs on one host do.
    let assignment = format!("vm.stat_interval={held}");
    let child = common::start_timer(
        dir.path(),
        &["--cpus", "0", "--duration", "10m", "--sysctl", &assignment],
        &json,
    );
    let first = child.id();
    let holder = Holder {
        child,
        original: original.clone(),
    };
    assert_eq!(read_sysctl(), held);

    // Another value, and the same value: both refused (the first one
    // would put the original back under the second's run when it ends).
    for value in [original.as_str(), held] {
        let out = common::run(
            common::rtlab(dir.path())
                .args(["measure", "timer", "--cpus", "0", "--loops", "10"])
                .args(["--quiet", "--no-store", "--json", "-"])
                .arg("--sysctl")
                .arg(format!("vm.stat_interval={value}")),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "value {value}: {stderr}");
        for word in [
            "sysctl vm.stat_interval=",
            SYSCTL,
            &format!("held at {held} by another rtlab (pid {first}"),
            &format!("puts it back to {original} when it ends"),
            "wait for it to finish",
            "nothing was measured",
        ] {
            assert!(stderr.contains(word), "'{word}' not in: {stderr}");
        }
        assert!(out.stdout.is_empty(), "no result: {:?}", out.stdout);
        assert_eq!(read_sysctl(), held, "nothing changed");
    }

    // A refused run leaves no file behind and does not empty one that was
    // there: not `measure` (--json, --samples, --histfile), nor `exec
    // periodic --baseline`, which opens its --json itself.
    let kept = dir.path().join("kept.json");
    let kept_csv = dir.path().join("kept.csv");
    for file in [&kept, &kept_csv] {
        std::fs::write(file, "{\"kept\": true}\n").unwrap();
    }
    let new = |name: &str| dir.path().join(name);
    type Outputs<'a> = Vec<(&'a str, std::path::PathBuf)>;
    let commands: [(&[&str], Outputs); 4] = [
        (
            &["measure", "timer", "--cpus", "0", "--loops", "10"],
            vec![
                ("--json", new("new.json")),
                ("--samples", new("new.csv")),
                ("--histfile", new("new.hist")),
            ],
        ),
        (
            &["measure", "timer", "--cpus", "0", "--loops", "10"],
            vec![("--json", kept.clone()), ("--samples", kept_csv.clone())],
        ),
        (
            &[
                "exec",
                "periodic",
                "--baseline",
                "fifo",
                "--duration",
                "100ms",
            ],
            vec![("--json", new("new.json"))],
        ),
        (
            &[
                "exec",
                "periodic",
                "--baseline",
                "fifo",
                "--duration",
                "100ms",
            ],
            vec![("--json", kept.clone())],
        ),
    ];
    for (args, files) in commands {
        let mut command = common::rtlab(dir.path());
        command
            .args(args)
            .args(["--quiet", "--no-store", "--sysctl"])
            .arg(format!("vm.stat_interval={original}"));
        for (flag, path) in &files {
            command.arg(flag).arg(path);
        }
        let out = common::run(&mut command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("nothing was measured"), "{stderr}");
        for (flag, path) in &files {
            if *path == kept || *path == kept_csv {
                assert_eq!(
                    std::fs::read_to_string(path).unwrap(),
                    "{\"kept\": true}\n",
                    "{args:?} {flag}: emptied by a refused run"
                );
            } else {
                assert!(
                    !path.exists(),
                    "{args:?} {flag}: {} left by a refused run",
                    path.display()
                );
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");

    // A campaign: the cell that asks for it fails and says why, the other
    // cell measures.
    let file = dir.path().join("campaign.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"held\"\nduration = \"300ms\"\n\
             [[probe]]\nkind = \"timer\"\ncpus = \"0\"\n\
             [[load]]\nname = \"idle\"\nrun = []\n\
             [[configuration]]\nname = \"with\"\npolicy = \"other\"\n\
             sysctl = [\"vm.stat_interval={original}\"]\n\
             [[configuration]]\nname = \"without\"\npolicy = \"other\"\n"
        ),
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let out = common::run(
        common::rtlab(dir.path())
            .args(["campaign", "run", "--quiet"])
            .arg(&file)
            .arg("--db")
            .arg(&db),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a failed cell: {stderr}");
    assert!(
        stderr.contains(&format!(
            "run 1: nothing measured: sysctl vm.stat_interval={original} refused"
        )) && stderr.contains(&format!("(pid {first}")),
        "{stderr}"
    );
    let out = common::run(
        common::rtlab(dir.path())
            .args(["runs", "--json", "--db"])
            .arg(&db),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut runs = doc["runs"].as_array().unwrap().clone();
    runs.reverse(); // oldest first
    assert_eq!(runs.len(), 2, "{doc}");
    assert_eq!(runs[0]["status"], "failed", "{doc}");
    // The failed run is named with the store it is in (the message said
    // `rtlab show RUN`, which looks in the default store).
    let failed = runs[0]["id"].as_str().unwrap();
    assert!(
        stderr.contains(&format!(
            "error: 1 of 2 runs failed ({failed}): see `rtlab show --db {} {failed}` for why",
            db.display()
        )),
        "{stderr}"
    );
    assert_eq!(runs[1]["status"], "complete", "{doc}");
    assert_eq!(read_sysctl(), held, "the campaign changed nothing");

    // The first run is untouched by all this and restores at its end.
    let mut holder = holder;
    common::signal(&holder.child, libc::SIGTERM);
    assert_eq!(holder.child.wait().unwrap().code(), Some(130));
    assert_eq!(read_sysctl(), original, "restored by the first rtlab");
    assert_eq!(common::read_json(&json).unwrap()["status"], "partial");
}
