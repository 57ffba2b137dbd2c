//! Restoring registered journals when the process panics.

use std::panic;
use std::sync::{Arc, Mutex, Once, PoisonError, TryLockError, Weak};

use super::record::Journal;

static PANIC_JOURNALS: Mutex<Vec<Weak<Mutex<Journal>>>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

/// Makes any panic restore `journal` before the previous panic hook runs.
/// Only a weak reference is kept, so dropping the last `Arc` still restores
/// through `Drop` on a normal exit.
pub fn install_panic_restore(journal: Arc<Mutex<Journal>>) {
    {
        let mut journals = PANIC_JOURNALS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        journals.retain(|j| j.strong_count() > 0);
        journals.push(Arc::downgrade(&journal));
    }
    PANIC_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            restore_for_panic();
            previous(info);
        }));
    });
}

fn restore_for_panic() {
    let journals: Vec<Arc<Mutex<Journal>>> = match PANIC_JOURNALS.try_lock() {
        Ok(journals) => journals.iter().filter_map(Weak::upgrade).collect(),
        Err(TryLockError::Poisoned(p)) => p.into_inner().iter().filter_map(Weak::upgrade).collect(),
        Err(TryLockError::WouldBlock) => {
            eprintln!("rtlab: panic while registering a journal; run `rtlab restore`");
            return;
        }
    };
    for journal in journals {
        // The panicking thread may hold this lock; blocking would hang.
        let mut guard = match journal.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                eprintln!(
                    "rtlab: journal busy during panic; it is restored when dropped, otherwise run `rtlab restore`"
                );
                continue;
            }
        };
        for result in guard.restore() {
            eprintln!("rtlab: {result}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn panic_restores_registered_journal() {
        let tmp = TempDir::new().unwrap();
        let knob = target(&tmp, "knob", "1");
        let journal = Arc::new(Mutex::new(Journal::new(state(&tmp))));
        install_panic_restore(journal.clone());

        // Poison the mutex first: the panic happens while the lock is held,
        // so the hook cannot restore then (it would deadlock).
        let j = journal.clone();
        let k = knob.clone();
        let _ = std::thread::spawn(move || {
            let mut guard = j.lock().unwrap();
            guard.set_file(&k, "0").unwrap();
            panic!("intentional panic while holding the journal");
        })
        .join();
        assert!(journal.is_poisoned());
        assert_eq!(content(&knob), "0\n");

        // A later panic elsewhere restores it through the poisoned mutex.
        let _ = std::thread::spawn(|| panic!("intentional panic for the restore hook")).join();
        assert_eq!(content(&knob), "1\n");
        let guard = journal.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(guard.entries().is_empty());
    }
}
