//! The uname(2) fields of the running kernel.

use std::ffi::CStr;

use serde::{Deserialize, Serialize};

/// The uname(2) fields, passed in explicitly so tests can fake them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

impl Uname {
    /// uname(2) of the running system; empty fields if the call fails.
    pub fn current() -> Uname {
        // SAFETY: utsname is plain C arrays, so all-zero is a valid value, and
        // uname only writes NUL-terminated strings into them.
        let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut uts) } != 0 {
            return Uname::default();
        }
        Uname {
            sysname: c_chars_to_string(&uts.sysname),
            nodename: c_chars_to_string(&uts.nodename),
            release: c_chars_to_string(&uts.release),
            version: c_chars_to_string(&uts.version),
            machine: c_chars_to_string(&uts.machine),
        }
    }
}

fn c_chars_to_string(chars: &[libc::c_char]) -> String {
    // SAFETY: c_char and u8 have the same size and layout.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) };
    // from_bytes_until_nul rather than CStr::from_ptr: never reads past the
    // array even if the kernel (or a zeroed struct) left no terminator.
    match CStr::from_bytes_until_nul(bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}
