//! Refusing a change to a file that another journal holds: a live owner's
//! change is its own, a dead owner's waits for `rtlab restore`.

use std::path::Path;

use super::entry::{printable, Entry};
use super::error::JournalError;
use super::file::{list_journals, read_journal};
use super::record::Journal;

impl Journal {
    pub(super) fn check_conflicts(&self, target: &Path) -> Result<(), JournalError> {
        let journals = list_journals(&self.state_dir).map_err(|e| JournalError::StateDir {
            path: self.state_dir.clone(),
            reason: format!("cannot list it: {e}"),
        })?;
        for journal in journals {
            if Some(journal.as_path()) == self.file.as_deref() {
                continue;
            }
            // Unreadable journals are reported by recover_stale; they are
            // not ours to interpret here.
            let Ok(other) = read_journal(&journal) else {
                continue;
            };
            let Some(entry) = other
                .entries
                .iter()
                .find(|e| e.changed_file() == Some(target))
            else {
                continue;
            };
            let (path, pid) = (target.to_path_buf(), other.owner.pid);
            if !other.owner.is_alive() {
                return Err(JournalError::StaleConflict { path, pid, journal });
            }
            let (held, old) = match entry {
                Entry::File { old, new, .. } => (new.clone(), old.clone()),
                _ => (String::new(), String::new()),
            };
            return Err(JournalError::Conflict {
                path,
                pid,
                // Its command line is the other process's to choose.
                command: printable(&other.owner.command),
                held,
                old,
                journal,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{recover_stale, Owner};
    use super::*;
    use std::fs;
    use tempfile::TempDir;

    #[test]
    fn conflict_with_other_journal_is_refused() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let parent = std::os::unix::process::parent_id();
        let live = Owner {
            pid: parent,
            starttime: read_starttime(parent).unwrap(),
            command: "rtlab run".into(),
            boot_id: boot_id(),
        };
        let other = fabricate(&dir, live, vec![file_entry(&knob, "1", "0")]);

        let mut j = Journal::new(dir.clone());
        let err = j.set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("pid {parent}: rtlab run")), "{msg}");
        assert!(
            msg.contains("is held at 0") && msg.contains("puts it back to 1 when it ends"),
            "{msg}"
        );
        // The value the other one holds is refused too: it would be put
        // back under this run when the other one ends.
        let err = j.set_file(&knob, "0").unwrap_err();
        assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
        assert_eq!(content(&knob), "1\n");
        assert!(j.entries().is_empty());

        fs::remove_file(&other).unwrap();
        fabricate(&dir, dead_owner(), vec![file_entry(&knob, "1", "0")]);
        let err = j.set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::StaleConflict { .. }), "{err}");
        assert!(err.to_string().contains("rtlab restore"), "{err}");
        assert_eq!(content(&knob), "1\n");
    }

    #[test]
    fn another_rtlabs_command_line_is_shown_without_controls() {
        // The command line of the other rtlab is whatever its user typed
        // (a --json path, say): no escape sequence nor a right-to-left
        // override that turns the rest of the line around on a terminal.
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let parent = std::os::unix::process::parent_id();
        let command = "rtlab measure timer --json \u{1b}[2Jx\u{202e}nosj.\u{2066}";
        let live = Owner {
            pid: parent,
            starttime: read_starttime(parent).unwrap(),
            command: command.into(),
            boot_id: boot_id(),
        };
        let clean = |text: &str| {
            !text.chars().any(|c| {
                c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c) || c == '\u{2066}'
            })
        };
        let other = fabricate(&dir, live, vec![file_entry(&knob, "1", "0")]);
        let err = Journal::new(dir.clone()).set_file(&knob, "2").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("rtlab measure timer --json ?[2Jx?nosj.?"),
            "{msg}"
        );
        assert!(clean(&msg), "{msg:?}");
        // Nor in what `rtlab restore` says of a dead one's journal.
        fs::remove_file(&other).unwrap();
        let mut dead = dead_owner();
        dead.command = command.into();
        fabricate(&dir, dead, vec![file_entry(&knob, "1", "0")]);
        let recovered = recover_stale(&dir);
        let text = recovered[0].to_string();
        assert!(
            text.contains("(rtlab measure timer --json ?[2Jx?nosj.?)"),
            "{text}"
        );
        assert!(clean(&text), "{text:?}");
    }

    #[test]
    fn second_journal_in_same_dir_is_refused() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let mut first = Journal::new(dir.clone());
        first.set_file(&target(&tmp, "a", "1"), "0").unwrap();
        let mut second = Journal::new(dir);
        let err = second.set_file(&target(&tmp, "b", "1"), "0").unwrap_err();
        assert!(matches!(err, JournalError::InUse { .. }), "{err}");
    }
}
