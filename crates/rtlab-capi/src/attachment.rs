//! The calling thread's attachment (paper 002's `set_rtparams(pid)` is per
//! process; here per thread, as the executive releases the thread that
//! attached): at most one, kept until the thread detaches, even after an
//! error, so its statistics stay readable.

use rtlab_client::{Error, Params, Periodic, Stats};
use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static ATTACHED: RefCell<Option<Periodic>> = const { RefCell::new(None) };
}

/// Runs `f` on the calling thread's attachment slot.
fn with_slot<T>(f: impl FnOnce(&mut Option<Periodic>) -> Result<T, Error>) -> Result<T, Error> {
    ATTACHED
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().map_err(|_| {
                Error::System("librtlab: the thread's attachment is already in use".into())
            })?;
            f(&mut slot)
        })
        .unwrap_or_else(|_| {
            Err(Error::System(
                "librtlab: called while the thread exits".into(),
            ))
        })
}

pub fn attach(params: &Params) -> Result<(), Error> {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: registers a handler that only touches this library's
        // thread-local slot. A failure (ENOMEM) leaves fork unhandled:
        // documented as "a child of fork() must not call rtlab".
        unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) };
    });
    with_slot(|slot| {
        if slot.is_some() {
            return Err(Error::Invalid(
                "this thread is already attached (rtlab_detach it first)".into(),
            ));
        }
        *slot = Some(Periodic::attach(params)?);
        Ok(())
    })
}

pub fn wait_next() -> Result<u64, Error> {
    with_slot(|slot| slot.as_mut().ok_or(Error::NotAttached)?.wait_next())
}

pub fn stats() -> Result<Stats, Error> {
    with_slot(|slot| Ok(slot.as_ref().ok_or(Error::NotAttached)?.stats()))
}

/// Detaches the thread, whatever the executive answers. The statistics:
/// the final ones, or those so far with the reason detaching failed.
pub fn detach() -> Result<(Stats, Result<(), Error>), Error> {
    let periodic = with_slot(|slot| slot.take().ok_or(Error::NotAttached))?;
    let so_far = periodic.stats();
    Ok(match periodic.detach() {
        Ok(last) => (last, Ok(())),
        Err(error) => (so_far, Err(error)),
    })
}

/// In a child of fork(), the forking thread's attachment is a copy of the
/// parent's (its connection and shared page are the parent's): forget it
/// unused, so that neither a call nor the child's exit (thread-local
/// destructors run at exit) speaks for the parent.
extern "C" fn forget_in_child() {
    let _ = ATTACHED.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            // Never dropped: its destructor would close the parent's.
            let _ = std::mem::ManuallyDrop::new(slot.take());
        }
    });
}
