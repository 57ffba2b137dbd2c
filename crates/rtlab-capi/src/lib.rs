//! librtlab.so: periodic real-time processes for C programs, the C face of
//! the Rust API in rtlab-client (`include/rtlab.h`, docs/librtlab.md).
//!
//! Each entry point checks its pointers and fields, runs in [`errors`]'s
//! guard (no panic crosses into C) and returns 0 or a negative
//! `RTLAB_E_*` code, which is `rtlab_client::Error::code`. The attachment
//! is the calling thread's ([`attachment`]).

mod attachment;
mod errors;
#[cfg(test)]
mod header_check;
mod types;

use rtlab_client::Error;
use std::ffi::{c_char, c_int};
use types::{RtlabParams, RtlabStats};

fn null(what: &str) -> Error {
    Error::Invalid(format!("{what} is NULL"))
}

/// Sets `*params` to every default (`RTLAB_PARAMS_INIT`); NULL: nothing.
///
/// # Safety
/// `params` is NULL or points to a writable `struct rtlab_params`.
#[no_mangle]
pub unsafe extern "C" fn rtlab_params_init(params: *mut RtlabParams) {
    if !params.is_null() {
        // SAFETY: the caller's promise; write, as the target may be
        // uninitialized.
        unsafe { params.write(RtlabParams::defaults()) };
    }
}

/// Attaches the calling thread to the executive.
///
/// # Safety
/// `params` is NULL or points to a `struct rtlab_params` whose `name` and
/// `socket` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn rtlab_attach(params: *const RtlabParams) -> c_int {
    errors::guard(|| {
        // SAFETY: the caller's promise.
        let params = unsafe { params.as_ref() }.ok_or_else(|| null("params"))?;
        // SAFETY: the caller's promise about the strings.
        attachment::attach(&unsafe { params.to_params() }?)
    })
}

/// Returns at the calling thread's next activation.
///
/// # Safety
/// `activation_ns` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn rtlab_wait_next(activation_ns: *mut u64) -> c_int {
    errors::guard(|| {
        let at = attachment::wait_next()?;
        if !activation_ns.is_null() {
            // SAFETY: the caller's promise.
            unsafe { activation_ns.write(at) };
        }
        Ok(())
    })
}

/// The calling thread's statistics so far.
///
/// # Safety
/// `stats` is NULL or points to a writable `struct rtlab_stats`.
#[no_mangle]
pub unsafe extern "C" fn rtlab_stats(stats: *mut RtlabStats) -> c_int {
    errors::guard(|| {
        if stats.is_null() {
            return Err(null("stats"));
        }
        let now = attachment::stats()?;
        // SAFETY: the caller's promise.
        unsafe { stats.write(now.into()) };
        Ok(())
    })
}

/// Detaches the calling thread; its statistics in `*stats` (may be NULL).
///
/// # Safety
/// `stats` is NULL or points to a writable `struct rtlab_stats`.
#[no_mangle]
pub unsafe extern "C" fn rtlab_detach(stats: *mut RtlabStats) -> c_int {
    errors::guard(|| {
        let (last, outcome) = attachment::detach()?;
        if !stats.is_null() {
            // SAFETY: the caller's promise.
            unsafe { stats.write(last.into()) };
        }
        outcome
    })
}

/// A static text for a code; never NULL.
#[no_mangle]
pub extern "C" fn rtlab_strerror(code: c_int) -> *const c_char {
    errors::text_of(code).as_ptr()
}

/// The calling thread's message of its last failure; never NULL.
#[no_mangle]
pub extern "C" fn rtlab_last_error() -> *const c_char {
    errors::last_message()
}

#[cfg(test)]
mod tests {
    use super::*;
    use errors::last_text as last;
    use std::ffi::CStr;
    use std::mem::MaybeUninit;

    #[test]
    fn null_pointers_are_refused_or_allowed_as_documented() {
        std::thread::spawn(|| unsafe {
            assert_eq!(rtlab_attach(std::ptr::null()), -1);
            assert_eq!(last(), "invalid parameters: params is NULL");
            assert_eq!(rtlab_last_error(), errors::last_message());
            assert_eq!(rtlab_stats(std::ptr::null_mut()), -1);
            assert_eq!(last(), "invalid parameters: stats is NULL");
            // NULL is allowed: the thread is just not attached.
            assert_eq!(rtlab_wait_next(std::ptr::null_mut()), -7);
            assert_eq!(last(), "this thread is not attached");
            assert_eq!(rtlab_detach(std::ptr::null_mut()), -7);
            rtlab_params_init(std::ptr::null_mut());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_unattached_thread_gets_not_attached_and_nothing_written() {
        std::thread::spawn(|| unsafe {
            let mut at = 12345_u64;
            assert_eq!(rtlab_wait_next(&mut at), -7);
            assert_eq!(at, 12345);
            let mut stats = RtlabStats {
                activations: 99,
                ..RtlabStats::default()
            };
            assert_eq!(rtlab_stats(&mut stats), -7);
            assert_eq!(rtlab_detach(&mut stats), -7);
            assert_eq!(stats.activations, 99);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_wrong_field_is_refused_before_any_connection() {
        std::thread::spawn(|| unsafe {
            let mut params = MaybeUninit::<RtlabParams>::uninit();
            rtlab_params_init(params.as_mut_ptr());
            let mut params = params.assume_init();
            // period 0: RTLAB_PARAMS_INIT alone is not enough.
            assert_eq!(rtlab_attach(&params), -1);
            assert!(last().contains("period_ns is 0"), "{}", last());
            params.period_ns = 10_000_000;
            params.cpu = -3;
            params.socket = c"/nonexistent/rtlab.sock".as_ptr();
            assert_eq!(rtlab_attach(&params), -1);
            assert_eq!(
                last(),
                "invalid parameters: cpu is -3: a CPU number, or -1 for any"
            );
            // Still not attached.
            assert_eq!(rtlab_wait_next(std::ptr::null_mut()), -7);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn strerror_gives_static_texts() {
        let text = |code| {
            unsafe { CStr::from_ptr(rtlab_strerror(code)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(text(0), "success");
        assert_eq!(text(-5), "the executive is gone");
        assert_eq!(text(-7), "this thread is not attached");
        assert_eq!(text(42), "unknown rtlab error code");
        assert_eq!(rtlab_strerror(-5), rtlab_strerror(-5));
    }
}
