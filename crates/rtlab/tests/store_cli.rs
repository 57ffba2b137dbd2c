//! The result store's hardening from the command line (issue 16, items 6,
//! 8 and 14): import never replaces a stored run and refuses ids and text
//! that would reach the terminal raw; dates no importer can write are input
//! errors; a run the store cannot take is kept in a file; read-only
//! commands work on a store one may not write; `store check`, `runs tag`
//! and `runs delete`.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rtlab-report/tests/golden")
        .join(name)
}

fn rtlab(state: &Path, db: &Path, args: &[&str]) -> Output {
    common::run(common::rtlab(state).args(args).arg("--db").arg(db))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Imports a cyclictest golden file and returns its run as rtlab JSON
/// (what `rtlab export --json` writes), with the store it is in.
fn stored_run(dir: &Path) -> (PathBuf, serde_json::Value) {
    let db = dir.join("r.db");
    let out = rtlab(
        dir,
        &db,
        &[
            "import",
            "--json",
            golden("cyclictest-2.40-no-hist.json").to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    let out = rtlab(dir, &db, &["show", "last", "--json"]);
    assert!(out.status.success());
    (db, json(&out))
}

fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

// ---------------------------------------------------------------------------
// Item 6: import replaced runs silently and stored any id
// ---------------------------------------------------------------------------

#[test]
fn import_refuses_a_stored_id_and_new_id_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let (db, original) = stored_run(dir.path());
    let id = original["id"].as_str().unwrap().to_string();
    // The issue's case: another run (failed, 1 sample) under the same id.
    let mut other = original.clone();
    other["status"] = "failed".into();
    other["series"][0]["samples"] = 1.into();
    let file = dir.path().join("other.json");
    write_json(&file, &other);

    let out = rtlab(dir.path(), &db, &["import", file.to_str().unwrap()]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains(file.to_str().unwrap()), "{message}");
    assert!(message.contains(&id), "{message}");
    assert!(message.contains("--new-id"), "{message}");
    // The stored run is as it was.
    let out = rtlab(dir.path(), &db, &["show", &id, "--json"]);
    assert_eq!(json(&out), original);

    // Two files with one id in one import: refused before anything is stored.
    let twin = dir.path().join("twin.json");
    let mut fresh = other.clone();
    fresh["id"] = "20261121T000000Z-1".into();
    write_json(&twin, &fresh);
    let out = rtlab(
        dir.path(),
        &db,
        &["import", twin.to_str().unwrap(), twin.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = rtlab(dir.path(), &db, &["runs", "--json"]);
    assert_eq!(json(&out)["runs"].as_array().unwrap().len(), 1);

    // --new-id stores it beside the original.
    let out = rtlab(
        dir.path(),
        &db,
        &["import", "--new-id", "--json", file.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let new_id = json(&out)["imported"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_id, id);
    let out = rtlab(dir.path(), &db, &["show", &new_id, "--json"]);
    let imported = json(&out);
    assert_eq!(imported["status"], "failed");
    let warnings = imported["warnings"].to_string();
    assert!(warnings.contains(&format!("its id was {id}")), "{warnings}");
    let out = rtlab(dir.path(), &db, &["show", &id, "--json"]);
    assert_eq!(json(&out), original);
}

#[test]
fn ids_with_control_characters_are_refused_and_never_printed_raw() {
    let dir = tempfile::tempdir().unwrap();
    let (db, original) = stored_run(dir.path());
    let mut bad = original.clone();
    bad["id"] = "x\u{1b}[2J\u{1b}[H".into();
    let file = dir.path().join("bad.json");
    write_json(&file, &bad);
    let out = rtlab(dir.path(), &db, &["import", file.to_str().unwrap()]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains("bad.json"), "{message}");
    assert!(message.contains("\\u{1b}"), "{message}");
    assert!(!message.contains('\u{1b}'), "{message}");
    assert!(!out.stdout.contains(&0x1b));

    // The id arguments of the reading commands go through the same rule.
    for command in [
        &["show", "x\u{1b}[2J"][..],
        &["export", "x\u{1b}[2J", "--json"],
        &["compare", "last", "x\u{1b}[2J"],
        &["report", "x\u{1b}[2J", "--format", "md"],
    ] {
        let out = rtlab(dir.path(), &db, command);
        let message = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {message}");
        assert!(message.contains("holds the control character"), "{message}");
        assert!(!message.contains('\u{1b}'), "{command:?}: {message}");
    }
}

// ---------------------------------------------------------------------------
// Item 8: a date after 9999 panicked (exit 101)
// ---------------------------------------------------------------------------

#[test]
fn a_cyclictest_date_after_9999_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(golden("cyclictest-2.40-no-hist.json")).unwrap();
    let text = text.replace(
        "Sat, 21 Nov 2026 20:02:19 +0000",
        "Sat, 21 Nov 10000 20:02:19 +0000",
    );
    let file = dir.path().join("ct.json");
    std::fs::write(&file, text).unwrap();
    let db = dir.path().join("r.db");
    let out = rtlab(dir.path(), &db, &["import", file.to_str().unwrap()]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains("ct.json"), "{message}");
    assert!(message.contains("$.start_time"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}

// ---------------------------------------------------------------------------
// Item 14: results are never lost; read-only stores; check, tag, delete
// ---------------------------------------------------------------------------

/// A tmpfs of `size` mounted at `at`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        match out.status.success() {
            true => Ok(Tmpfs(at.to_path_buf())),
            false => Err(format!(
                "cannot mount a tmpfs: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system of `dir` until `leave` bytes are free.
fn fill(dir: &Path, leave: u64) {
    let path = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: a valid path and a zeroed statvfs to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut st) }, 0);
    let free = st.f_bavail as u64 * st.f_bsize as u64;
    let data = vec![0u8; (free - leave) as usize];
    std::fs::write(dir.join("fill"), data).unwrap();
}

/// A measurement whose store is full when it ends: the run is kept in
/// STATE_DIR/unsaved, named on screen, the command fails, and the file
/// imports back as exactly that run.
#[test]
fn a_run_the_full_store_cannot_take_is_kept_and_imports_back() {
    require_realtime!();
    if !common::is_root() {
        common::skip("mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mount = match Tmpfs::mount(&dir.path().join("full"), "4M") {
        Ok(mount) => mount,
        Err(why) => return common::skip(&why),
    };
    let db = mount.0.join("r.db");
    // The store exists (so opening it writes nothing)...
    let out = rtlab(
        &state,
        &db,
        &[
            "import",
            golden("cyclictest-2.40-no-hist.json").to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    // ...and its disk has room for SQLite's 32 KiB -shm file when the
    // measurement opens it, but not for the run at the end.
    fill(&mount.0, 36 * 1024);
    let out = rtlab(
        &state,
        &db,
        &["measure", "timer", "--cpus", "0", "--loops", "300"],
    );
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    let unsaved = state.join("unsaved");
    let files: Vec<PathBuf> = std::fs::read_dir(&unsaved)
        .unwrap_or_else(|e| panic!("{}: {e}; {message}", unsaved.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let kept = &files[0];
    assert!(message.contains("disk is full"), "{message}");
    assert!(
        message.contains(&format!("rtlab import {}", kept.display())),
        "{message}"
    );
    let kept_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kept).unwrap()).unwrap();
    assert_eq!(kept_json["probe"], "timer");
    let id = kept_json["id"].as_str().unwrap();
    assert_eq!(
        format!("{id}.json"),
        kept.file_name().unwrap().to_str().unwrap()
    );
    // The full store has only the first run.
    drop(mount);

    let other = dir.path().join("other.db");
    let out = rtlab(&state, &other, &["import", kept.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = rtlab(&state, &other, &["show", id, "--json"]);
    assert_eq!(json(&out), kept_json);
}

/// A campaign whose store fills up: the run is kept as a file, and the
/// message says the campaign stopped there and what was not run (it ended
/// with the store's error alone).
#[test]
fn a_campaign_whose_store_fills_up_says_it_stopped_and_what_did_not_run() {
    require_realtime!();
    if !common::is_root() {
        common::skip("mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mount = match Tmpfs::mount(&dir.path().join("full"), "4M") {
        Ok(mount) => mount,
        Err(why) => return common::skip(&why),
    };
    let db = mount.0.join("r.db");
    let golden_file = golden("cyclictest-2.40-no-hist.json");
    let out = rtlab(&state, &db, &["import", golden_file.to_str().unwrap()]);
    assert!(out.status.success());
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "name = \"fills\"\nduration = \"200ms\"\n\
         [[probe]]\nkind = \"timer\"\ncpus = \"0\"\n\
         [[load]]\nname = \"idle\"\nrun = []\n\
         [[configuration]]\nname = \"a\"\npolicy = \"other\"\n\
         [[configuration]]\nname = \"b\"\npolicy = \"other\"\n\
         [[configuration]]\nname = \"c\"\npolicy = \"other\"\n",
    )
    .unwrap();
    fill(&mount.0, 36 * 1024);
    let out = rtlab(
        &state,
        &db,
        &["campaign", "run", "--quiet", file.to_str().unwrap()],
    );
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains("campaign fills stopped at run 1 of 3 (the 2 after it were not run;"),
        "{message}"
    );
    assert!(message.contains("disk is full"), "{message}");
    let kept = std::fs::read_dir(state.join("unsaved")).unwrap().count();
    assert_eq!(kept, 1, "{message}");
}

/// Without a default store (no HOME, no XDG_DATA_HOME) and without --json,
/// the run is kept in a file rather than nowhere.
#[test]
fn a_run_without_a_default_store_is_kept_in_a_file() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = common::run(
        common::rtlab(&state)
            .env_remove("XDG_DATA_HOME")
            .env_remove("HOME")
            .args(["measure", "timer", "--cpus", "0", "--loops", "100"]),
    );
    let message = stderr(&out);
    assert!(out.status.success(), "{message}");
    assert!(message.contains("will not be stored"), "{message}");
    let files: Vec<PathBuf> = std::fs::read_dir(state.join("unsaved"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        message.contains(&format!("rtlab import {}", files[0].display())),
        "{message}"
    );
    let db = dir.path().join("r.db");
    let out = rtlab(&state, &db, &["import", files[0].to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A store in a directory only root may write, read by `nobody`: the
/// reading commands work and change nothing; writing ones are refused.
#[test]
fn a_store_one_may_only_read_is_listed_shown_and_checked() {
    if !common::is_root() {
        common::skip("running a command as another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (db, original) = stored_run(dir.path());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let id = original["id"].as_str().unwrap();
    // `show` above read it read-only, which leaves an empty -wal and the
    // -shm (a reader does not checkpoint): take them away, so that nobody
    // finds only the file, as after any writer.
    for extra in ["r.db-wal", "r.db-shm"] {
        let path = dir.path().join(extra);
        if let Ok(meta) = std::fs::metadata(&path) {
            assert!(extra.ends_with("shm") || meta.len() == 0, "{extra}");
            std::fs::remove_file(path).unwrap();
        }
    }
    let before = std::fs::read(&db).unwrap();
    let as_nobody = |args: &[&str]| {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rtlab"));
        command
            .args(args)
            .arg("--db")
            .arg(&db)
            .env_clear()
            .env("HOME", "/nonexistent")
            .env("RTLAB_STATE_DIR", "/nonexistent/state")
            .uid(65534)
            .gid(65534);
        common::run(&mut command)
    };
    let out = as_nobody(&["runs", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["runs"][0]["id"], id);
    let out = as_nobody(&["show", id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out), original);
    let out = as_nobody(&["export", "last", "--format", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_nobody(&["compare", id, id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_nobody(&["store", "check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_nobody(&["runs", "tag", id, "mine"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("permissions"), "{}", stderr(&out));
    // Nothing was written, nor created beside it.
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.to_string_lossy().starts_with("r.db-")),
        "{names:?}"
    );
    // With the -shm a root reader leaves (nobody may read, not write it).
    let out = rtlab(dir.path(), &db, &["runs"]);
    assert!(out.status.success());
    assert!(dir.path().join("r.db-shm").exists());
    let out = as_nobody(&["show", id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out), original);
}

#[test]
fn reading_commands_do_not_create_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none/r.db");
    let out = rtlab(dir.path(), &db, &["runs", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["runs"], serde_json::json!([]));
    let out = rtlab(dir.path(), &db, &["show", "last"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no runs in result store"),
        "{}",
        stderr(&out)
    );
    let out = rtlab(dir.path(), &db, &["store", "check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no result store"), "{}", stderr(&out));
    // A refused import neither (it created the store, then read the file).
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "not a result\n").unwrap();
    for file in [bad, dir.path().join("missing.json")] {
        let out = rtlab(dir.path(), &db, &["import", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    }
    // Nor deleting or tagging in a store that is not there.
    for args in [
        ["runs", "tag", "last", "x"],
        ["runs", "delete", "last", "--yes"],
    ] {
        let out = rtlab(dir.path(), &db, &args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("no result store"), "{}", stderr(&out));
    }
    assert!(!dir.path().join("none").exists());
}

#[test]
fn store_check_finds_a_damaged_run() {
    let dir = tempfile::tempdir().unwrap();
    let (db, original) = stored_run(dir.path());
    let out = rtlab(dir.path(), &db, &["store", "check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["ok"], true);
    assert_eq!(report["runs"], 1);
    // Damage the run's JSON in the file, keeping its length: SQLite's own
    // structure stays sound, the run does not read back.
    let mut bytes = std::fs::read(&db).unwrap();
    let needle = br#"{"schema":"rtlab.run/1""#;
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the run's JSON in the file");
    bytes[at + 2..at + 8].copy_from_slice(b"schemX");
    std::fs::write(&db, bytes).unwrap();
    let out = rtlab(dir.path(), &db, &["store", "check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(": 1 problem ("), "{text}");
    assert!(text.contains(original["id"].as_str().unwrap()), "{text}");
    assert!(text.contains("its JSON is not a run"), "{text}");
    // A file that is not a store at all is a problem too.
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        "not a database, but long enough to look at".repeat(40),
    )
    .unwrap();
    let out = rtlab(dir.path(), &junk, &["store", "check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["ok"], false);
    // A path that is no file is a usage error, as for every command (it
    // was '1 problems', exit 1); nothing is created there.
    for (path, what) in [
        (dir.path().to_path_buf(), "a directory"),
        ("/dev/null".into(), "a character device"),
    ] {
        let out = rtlab(dir.path(), &path, &["store", "check"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("it is {what}, not a file")), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// Three runs: two of one campaign execution, one alone.
fn campaign_store(dir: &Path) -> (PathBuf, [String; 3]) {
    let (db, original) = stored_run(dir);
    let alone = original["id"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    for index in 1..=2 {
        let mut run = original.clone();
        let id = format!("20261121T19300{index}Z-4242");
        run["id"] = id.clone().into();
        run["campaign"] = serde_json::json!({
            "name": "quick", "execution": "20261121T193000Z-4242", "index": index,
            "total": 2, "configuration": "default", "load": "idle", "repeat": 1
        });
        let file = dir.join(format!("{id}.json"));
        write_json(&file, &run);
        let out = rtlab(dir, &db, &["import", file.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        ids.push(id);
    }
    (db, [alone, ids[0].clone(), ids[1].clone()])
}

fn listed(dir: &Path, db: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["runs", "--json"];
    args.extend(extra);
    let out = rtlab(dir, db, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn runs_are_tagged_and_listed_by_tag() {
    let dir = tempfile::tempdir().unwrap();
    let (db, [alone, first, _]) = campaign_store(dir.path());
    let out = rtlab(
        dir.path(),
        &db,
        &["runs", "tag", &alone, "baseline", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["tags"], serde_json::json!(["baseline"]));
    let out = rtlab(dir.path(), &db, &["runs", "tag", &first, "baseline"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("tagged baseline"));
    // Newest first: the same start, so by id.
    assert_eq!(
        listed(dir.path(), &db, &["--tag", "baseline"]),
        [alone.clone(), first.clone()]
    );
    let out = rtlab(dir.path(), &db, &["runs"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.lines().next().unwrap().ends_with("tags"), "{table}");
    let out = rtlab(
        dir.path(),
        &db,
        &["runs", "tag", &first, "baseline", "--untag"],
    );
    assert!(out.status.success());
    assert_eq!(
        listed(dir.path(), &db, &["--tag", "baseline"]),
        std::slice::from_ref(&alone)
    );
    for bad in ["bad tag", "x\u{1b}[2J", "-x"] {
        let out = rtlab(dir.path(), &db, &["runs", "tag", &alone, bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains('\u{1b}'));
    }
}

#[test]
fn deleting_more_than_one_run_or_part_of_a_campaign_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, [alone, first, second]) = campaign_store(dir.path());
    // One run of a campaign execution of two: refused without --yes.
    let out = rtlab(dir.path(), &db, &["runs", "delete", &first]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains("1 of its 2 runs"), "{message}");
    assert!(message.contains("--yes"), "{message}");
    // Two runs: refused without --yes, listing them.
    let out = rtlab(dir.path(), &db, &["runs", "delete", &alone, &first]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("would delete 2 runs"),
        "{}",
        stderr(&out)
    );
    // An unknown id among known ones: nothing is deleted.
    let out = rtlab(
        dir.path(),
        &db,
        &["runs", "delete", &alone, "20991231", "--yes"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(listed(dir.path(), &db, &[]).len(), 3);

    // One run alone needs no --yes.
    let out = rtlab(dir.path(), &db, &["runs", "delete", &alone, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["deleted"], serde_json::json!([alone]));
    // A whole execution with --yes.
    let out = rtlab(
        dir.path(),
        &db,
        &[
            "runs",
            "delete",
            "--execution",
            "20261121T193000Z-4242",
            "--yes",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("deleted run {first}")), "{text}");
    assert!(text.contains(&format!("deleted run {second}")), "{text}");
    assert!(listed(dir.path(), &db, &[]).is_empty());
    let out = rtlab(dir.path(), &db, &["store", "check"]);
    assert!(out.status.success());
}

/// Every example of the new commands' --help runs (against a store with
/// runs to act on).
#[test]
fn help_of_the_new_commands_has_examples() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        &["runs", "delete", "--help"][..],
        &["runs", "tag", "--help"],
        &["store", "check", "--help"],
        &["import", "--help"],
    ] {
        let out = common::run(common::rtlab(dir.path()).args(command));
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:"), "{command:?}: {text}");
        assert!(text.contains("docs/"), "{command:?}: {text}");
    }
    let (db, [_, first, _]) = campaign_store(dir.path());
    for example in [
        vec!["runs", "tag", "last", "baseline"],
        vec!["runs", "tag", &first, "kernel-6.18", "--json"],
        vec!["runs", "tag", "last", "baseline", "--untag"],
        vec!["runs", "--tag", "baseline"],
        vec!["store", "check"],
        vec!["store", "check", "--json"],
        vec!["runs", "delete", "last"],
        vec![
            "runs",
            "delete",
            "--execution",
            "20261121T193000Z-4242",
            "--yes",
            "--json",
        ],
    ] {
        let out = rtlab(dir.path(), &db, &example);
        assert!(out.status.success(), "{example:?}: {}", stderr(&out));
    }
}

// ---------------------------------------------------------------------------
// Stored text reached the terminal raw (`show` printed the hostname, the
// warnings, the labels and the loads of runs stored before import refused
// control characters, and bidirectional characters import lets through)
// ---------------------------------------------------------------------------

/// A run whose every text field `show`, `runs`, `compare` and `report`
/// print holds an escape sequence, C1 and bidirectional characters, put in
/// the file by hand as an older rtlab could have stored it.
fn store_hostile_run(dir: &Path) -> PathBuf {
    let (db, original) = stored_run(dir);
    let mut run = original.clone();
    run["id"] = "hostile-1".into();
    run["probe"] = "timer".into();
    run["environment"]["hostname"] = "hostMARK".into();
    run["environment"]["kernel_release"] = "6.1MARK".into();
    run["warnings"] = serde_json::json!(["warnMARK"]);
    run["loads"] = serde_json::json!([{
        "name": "cmd", "spec": "cmd:MARK", "work": {}, "notes": ["noteMARK"]
    }]);
    run["campaign"] = serde_json::json!({
        "name": "campMARK", "execution": "exec1", "index": 1, "total": 1,
        "configuration": "confMARK", "load": "loadMARK", "repeat": 1
    });
    if let Some(series) = run["series"].as_array_mut() {
        for s in series {
            s["name"] = "seriesMARK".into();
        }
    }
    let file = dir.join("hostile.json");
    write_json(&file, &run);
    let out = rtlab(dir, &db, &["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{9b}31m\u{202e}\u{200b}";
    // In the run's JSON the characters are escaped the JSON way.
    let in_json = serde_json::to_string(evil).unwrap();
    let in_json = &in_json[1..in_json.len() - 1];
    conn.execute(
        "UPDATE runs SET result = replace(result, 'MARK', ?1)",
        [in_json],
    )
    .unwrap();
    for column in ["host", "campaign", "configuration", "load"] {
        conn.execute(
            &format!("UPDATE runs SET {column} = replace({column}, 'MARK', ?1)"),
            [evil],
        )
        .unwrap();
    }
    conn.execute("UPDATE series SET name = replace(name, 'MARK', ?1)", [evil])
        .unwrap();
    db
}

fn assert_escaped(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for raw in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}', '\u{200b}'] {
        assert!(!text.contains(raw), "{what} printed {raw:?} raw:\n{text}");
    }
}

#[test]
fn stored_text_is_printed_with_control_and_bidi_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_hostile_run(dir.path());
    let out = rtlab(dir.path(), &db, &["show", "hostile-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_escaped("show", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    for field in [
        "host", "6.1", "warn", "cmd:", "note", "camp", "conf", "load",
    ] {
        assert!(
            text.contains(&format!(
                "{field}\\u001b]0;owned\\u0007\\u001b[2J\\u000d\\u009b31m\\u202e\\u200b"
            )),
            "show: {field} not shown escaped:\n{text}"
        );
    }
    for command in [
        &["runs"][..],
        &["show", "hostile-1", "--pwcet"],
        &["compare", "hostile-1", "last"],
        &["compare", "hostile-1", "last", "--format", "md"],
        &["report", "hostile-1", "--format", "md"],
    ] {
        let out = rtlab(dir.path(), &db, command);
        assert!(out.status.success(), "{command:?}: {}", stderr(&out));
        assert_escaped(&format!("{command:?}"), &out.stdout);
    }
    // JSON keeps the text, escaped the JSON way: the same document.
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{9b}31m\u{202e}\u{200b}";
    let out = rtlab(dir.path(), &db, &["show", "hostile-1", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_escaped("show --json", &out.stdout);
    assert_eq!(json(&out)["environment"]["hostname"], format!("host{evil}"));
    let out = rtlab(dir.path(), &db, &["runs", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_escaped("runs --json", &out.stdout);
    assert_eq!(json(&out)["runs"][0]["host"], format!("host{evil}"));
    // An id stored before ids were checked, reached by a prefix: `runs`,
    // `runs tag` and `runs delete` print it escaped.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "foreign_keys", false).unwrap();
    for table in ["spikes", "series", "runs"] {
        let column = if table == "runs" { "id" } else { "run_id" };
        conn.execute(
            &format!("UPDATE {table} SET {column} = 'zz' || ?1 WHERE {column} = 'hostile-1'"),
            [evil],
        )
        .unwrap();
    }
    for command in [
        &["runs"][..],
        &["runs", "tag", "zz", "mine"],
        &["runs", "--tag", "mine"],
        &["runs", "tag", "zz", "mine", "--untag"],
        &["runs", "delete", "zz"],
    ] {
        let out = rtlab(dir.path(), &db, command);
        assert!(out.status.success(), "{command:?}: {}", stderr(&out));
        assert_escaped(&format!("{command:?}"), &out.stdout);
        assert_escaped(&format!("{command:?}"), &out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("zz\\u001b]0;owned"),
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

// ---------------------------------------------------------------------------
// Import and delete stored or deleted run by run: a kill, a full disk or
// another rtlab part way left some of the files imported (and the next
// import refused them), some runs deleted
// ---------------------------------------------------------------------------

/// `n` files of distinct runs, `run-0` to `run-{n-1}`.
fn run_files(dir: &Path, original: &serde_json::Value, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let mut run = original.clone();
            run["id"] = format!("run-{i}").into();
            let file = dir.join(format!("run-{i}.json"));
            write_json(&file, &run);
            file
        })
        .collect()
}

fn stored_ids(dir: &Path, db: &Path) -> Vec<String> {
    let mut ids = listed(dir, db, &[]);
    ids.retain(|id| id.starts_with("run-"));
    ids.sort();
    ids
}

#[test]
fn an_import_racing_another_stores_all_its_files_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let (_, original) = stored_run(dir.path());
    let files = run_files(dir.path(), &original, 40);
    let last = files.last().unwrap().to_str().unwrap().to_string();
    for round in 0..16 {
        let db = dir.path().join(format!("race-{round}.db"));
        assert!(rtlab(dir.path(), &db, &["store", "check"]).status.code() == Some(2));
        // P1 imports every file; P2 only the last one, while P1 is at work.
        let mut first = common::rtlab(dir.path());
        first.arg("import").args(&files).arg("--db").arg(&db);
        let first = first
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // P2 starts at a different point of P1's work each round (the
        // delays only spread the races: nothing is asserted about time).
        std::thread::sleep(std::time::Duration::from_millis(12 * round));
        let second = rtlab(dir.path(), &db, &["import", &last]);
        let first = first.wait_with_output().unwrap();
        eprintln!(
            "round {round}: {:?} {:?}",
            first.status.code(),
            second.status.code()
        );
        let ids = stored_ids(dir.path(), &db);
        match (first.status.code(), second.status.code()) {
            (Some(0), Some(2)) => assert_eq!(ids.len(), 40, "{ids:?}"),
            (Some(2), Some(0)) => {
                assert_eq!(ids, ["run-39"], "{}", stderr(&first));
                assert!(stderr(&first).contains("nothing was imported"));
            }
            other => panic!(
                "round {round}: {other:?}: {ids:?}\n{}\n{}",
                stderr(&first),
                stderr(&second)
            ),
        }
    }
}

#[test]
fn a_killed_import_or_delete_leaves_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, original) = stored_run(dir.path());
    let files = run_files(dir.path(), &original, 40);
    // Killed at a different point each round (the delays only spread the
    // kills: nothing is asserted about time).
    for round in 0..8u64 {
        let db = dir.path().join(format!("kill-{round}.db"));
        let mut command = common::rtlab(dir.path());
        command.arg("import").args(&files).arg("--db").arg(&db);
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(15 * round));
        let _ = child.kill();
        let _ = child.wait();
        if !db.exists() {
            continue;
        }
        let ids = stored_ids(dir.path(), &db);
        assert!(ids.is_empty() || ids.len() == 40, "round {round}: {ids:?}");
        let check = rtlab(dir.path(), &db, &["store", "check"]);
        assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
        if ids.is_empty() {
            continue;
        }
        let mut command = common::rtlab(dir.path());
        command.args(["runs", "delete", "--yes", "--db"]).arg(&db);
        command.args(&ids);
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10 * round));
        let _ = child.kill();
        let _ = child.wait();
        let left = stored_ids(dir.path(), &db);
        assert!(
            left.is_empty() || left.len() == 40,
            "round {round}: {left:?}"
        );
        let check = rtlab(dir.path(), &db, &["store", "check"]);
        assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    }
}

#[test]
fn export_to_a_path_that_cannot_be_created_is_bad_input() {
    // It was exit 1 and 'writing PATH', where report -o and plan gen -o
    // say exit 2 and name the flag.
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = stored_run(dir.path());
    for path in [
        dir.path().join("no/such/dir/x.csv"),
        dir.path().to_path_buf(),
    ] {
        let path = path.to_str().unwrap();
        let out = rtlab(
            dir.path(),
            &db,
            &["export", "last", "--format", "csv", "-o", path],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with(&format!("error: -o {path}: cannot create: ")),
            "{}",
            stderr(&out)
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn runs_that_no_filter_matches_are_not_reported_as_an_empty_store() {
    // `runs --probe switch` on a store of timer runs said 'no runs in
    // STORE', and `--limit 0` listed nothing and said the same.
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = stored_run(dir.path());
    let out = rtlab(dir.path(), &db, &["runs", "--probe", "switch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("matches the filters given"), "{text}");
    let out = rtlab(dir.path(), &db, &["runs", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--limit 0"), "{}", stderr(&out));
}
