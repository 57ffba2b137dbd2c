//! Codes, their static texts, the calling thread's last message, and the
//! guard every C entry point runs its body in (no panic crosses into C).

use rtlab_client::Error;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{self, AssertUnwindSafe};

/// One error of each kind: the codes the header defines, from
/// [`Error::code`], the one place they are numbered.
pub const KINDS: [Error; 8] = [
    Error::Invalid(String::new()),
    Error::Connect(String::new()),
    Error::Refused(String::new()),
    Error::Protocol(String::new()),
    Error::ExecutiveGone,
    Error::Dropped(String::new()),
    Error::NotAttached,
    Error::System(String::new()),
];

/// The header's name of an error's code and its static text: the start of
/// its `Display` (a new variant does not compile without its C name).
pub fn describe(error: &Error) -> (&'static CStr, &'static CStr) {
    match error {
        Error::Invalid(_) => (c"RTLAB_E_INVALID", c"invalid parameters"),
        Error::Connect(_) => (c"RTLAB_E_CONNECT", c"no executive"),
        Error::Refused(_) => (c"RTLAB_E_REFUSED", c"refused by the executive"),
        Error::Protocol(_) => (c"RTLAB_E_PROTOCOL", c"protocol error"),
        Error::ExecutiveGone => (c"RTLAB_E_GONE", c"the executive is gone"),
        Error::Dropped(_) => (c"RTLAB_E_DROPPED", c"dropped by the executive"),
        Error::NotAttached => (c"RTLAB_E_NOT_ATTACHED", c"this thread is not attached"),
        Error::System(_) => (c"RTLAB_E_SYSTEM", c"system call failed"),
    }
}

/// The static text of a code (0 included; an unknown code says so).
pub fn text_of(code: c_int) -> &'static CStr {
    if code == 0 {
        return c"success";
    }
    KINDS
        .iter()
        .find(|kind| kind.code() == code)
        .map_or(c"unknown rtlab error code", |kind| describe(kind).1)
}

thread_local! {
    /// The calling thread's message of its last failure.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Keeps `error`'s full message as the calling thread's last one.
fn remember(error: &Error) {
    // A NUL inside a reason from the executive would cut the C string.
    let text = error.to_string().replace('\0', "\u{FFFD}");
    let text = CString::new(text).unwrap_or_default();
    // Gone while the thread exits: nothing can read it any more.
    let _ = LAST_ERROR.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some(text);
        }
    });
}

/// The calling thread's last message ("" before any failure), valid until
/// it is replaced by the thread's next failure.
pub fn last_message() -> *const c_char {
    LAST_ERROR
        .try_with(|last| match last.try_borrow().as_deref() {
            Ok(Some(text)) => text.as_ptr(),
            Ok(None) => c"".as_ptr(),
            Err(_) => c"(librtlab: the last error is being written)".as_ptr(),
        })
        .unwrap_or(c"(librtlab: the thread is exiting)".as_ptr())
}

/// Runs a C entry point's body: 0 on success, else the error's code with
/// its message kept for `rtlab_last_error`. A panic (a bug of the library)
/// becomes RTLAB_E_SYSTEM naming it: unwinding into C is undefined.
pub fn guard(body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let outcome = panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic");
        Err(Error::System(format!("internal error in librtlab: {what}")))
    });
    match outcome {
        Ok(()) => 0,
        Err(error) => {
            remember(&error);
            error.code()
        }
    }
}

/// The calling thread's last message, as a String (tests).
#[cfg(test)]
pub fn last_text() -> String {
    // SAFETY: last_message returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(last_message()) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::last_text as last;
    use super::*;

    #[test]
    fn the_codes_are_distinct_negative_and_their_texts_start_their_messages() {
        let mut codes: Vec<c_int> = KINDS.iter().map(Error::code).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), KINDS.len());
        assert!(codes.iter().all(|&c| c < 0));
        for kind in &KINDS {
            let text = text_of(kind.code()).to_str().unwrap();
            let shown = kind.to_string();
            // System's message is its reason alone (the errno text).
            if !matches!(kind, Error::System(_)) {
                assert_eq!(shown.trim_end_matches(": "), text, "{kind:?}");
            }
        }
        assert_eq!(text_of(0), c"success");
        assert_eq!(text_of(-1000), c"unknown rtlab error code");
        assert_eq!(text_of(1), c"unknown rtlab error code");
    }

    #[test]
    fn a_failure_keeps_its_message_for_the_thread_and_success_leaves_it() {
        std::thread::spawn(|| {
            assert_eq!(last(), "");
            let code = guard(|| Err(Error::Connect("/tmp/x.sock: refused".into())));
            assert_eq!(code, -2);
            assert_eq!(last(), "no executive: /tmp/x.sock: refused");
            assert_eq!(guard(|| Ok(())), 0);
            assert_eq!(last(), "no executive: /tmp/x.sock: refused");
            // Another thread has its own.
            std::thread::spawn(|| assert_eq!(last(), ""))
                .join()
                .unwrap();
            guard(|| Err(Error::Invalid("name has a \0 inside".into())));
            assert_eq!(last(), "invalid parameters: name has a \u{FFFD} inside");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_panic_becomes_a_system_error_naming_it() {
        let code = guard(|| panic!("boom at {}", 42));
        assert_eq!(code, Error::System(String::new()).code());
        assert_eq!(last(), "internal error in librtlab: boom at 42");
        let code = guard(|| std::panic::panic_any(7_u8));
        assert_eq!(code, -8);
        assert_eq!(last(), "internal error in librtlab: a panic");
    }
}
