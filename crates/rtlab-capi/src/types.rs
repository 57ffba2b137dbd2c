//! The C structs of include/rtlab.h and their conversions to and from the
//! Rust API's `Params` and `Stats`. The C side has no `Option`: a sentinel
//! value stands for "none" (the consts below), and everything a C caller
//! can get wrong that Rust's types rule out is refused here, naming the
//! field.

use rtlab_client::{Error, Params, Stats};
use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// `deadline_ns` and `budget_ns` of 0: the period, and no budget.
pub const NONE_NS: u64 = 0;
/// `cpu` of -1: the executive chooses.
pub const CPU_ANY: i32 = -1;
/// `priority` of 0: the executive's default.
pub const PRIORITY_DEFAULT: i32 = 0;

/// `struct rtlab_params`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RtlabParams {
    pub period_ns: u64,
    pub offset_ns: u64,
    pub deadline_ns: u64,
    pub budget_ns: u64,
    pub cpu: i32,
    pub priority: i32,
    pub name: *const c_char,
    pub socket: *const c_char,
}

/// Declares `struct rtlab_stats` from one list of fields: the C struct,
/// its conversion from the Rust API's `Stats` (destructured in full, so a
/// new field of `Stats` does not compile until it is here, and in the
/// header, which a test checks against [`RtlabStats::FIELDS`]).
macro_rules! c_stats {
    ($($field:ident),* $(,)?) => {
        /// `struct rtlab_stats`.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct RtlabStats {
            $(pub $field: u64,)*
        }

        impl RtlabStats {
            /// Each field's name and offset, in order.
            #[cfg(test)]
            pub const FIELDS: &[(&str, usize)] =
                &[$((stringify!($field), std::mem::offset_of!(RtlabStats, $field)),)*];
        }

        impl From<Stats> for RtlabStats {
            fn from(stats: Stats) -> RtlabStats {
                let Stats { $($field,)* } = stats;
                RtlabStats { $($field,)* }
            }
        }
    };
}

c_stats!(
    activations,
    missed_activations,
    deadline_misses,
    budget_overruns,
    lateness_p50_ns,
    lateness_p99_ns,
    lateness_p999_ns,
    lateness_max_ns,
    response_p50_ns,
    response_p99_ns,
    response_p999_ns,
    response_max_ns,
);

impl RtlabParams {
    /// The Rust API's defaults in C form (`RTLAB_PARAMS_INIT`).
    pub fn defaults() -> RtlabParams {
        let Params {
            period_ns,
            offset_ns,
            deadline_ns,
            budget_ns,
            cpu,
            priority,
            name,
            socket,
        } = Params::default();
        // A default name or socket would need memory the caller owns.
        debug_assert!(name.is_none() && socket.is_none());
        RtlabParams {
            period_ns,
            offset_ns,
            deadline_ns: deadline_ns.unwrap_or(NONE_NS),
            budget_ns: budget_ns.unwrap_or(NONE_NS),
            cpu: cpu.map_or(CPU_ANY, |cpu| cpu as i32),
            priority: priority.map_or(PRIORITY_DEFAULT, |p| p as i32),
            name: std::ptr::null(),
            socket: std::ptr::null(),
        }
    }

    /// The Rust API's `Params`, or what is wrong, naming the C field.
    ///
    /// # Safety
    /// `name` and `socket` are NULL or NUL-terminated strings.
    pub unsafe fn to_params(self) -> Result<Params, Error> {
        if self.period_ns == 0 {
            return Err(invalid("period_ns is 0: the period is required (ns, > 0)"));
        }
        let cpu = match self.cpu {
            CPU_ANY => None,
            cpu => Some(u32::try_from(cpu).map_err(|_| {
                invalid(&format!("cpu is {cpu}: a CPU number, or {CPU_ANY} for any"))
            })?),
        };
        let priority = match self.priority {
            PRIORITY_DEFAULT => None,
            p => Some(u32::try_from(p).map_err(|_| {
                invalid(&format!(
                    "priority is {p}: a SCHED_FIFO priority, or {PRIORITY_DEFAULT} for the executive's default"
                ))
            })?),
        };
        let name = match c_text(self.name, "name")? {
            None => None,
            Some(bytes) => Some(
                std::str::from_utf8(bytes)
                    .map_err(|e| invalid(&format!("name is not UTF-8 ({e})")))?
                    .to_string(),
            ),
        };
        let socket = c_text(self.socket, "socket")?.map(|b| PathBuf::from(OsStr::from_bytes(b)));
        Ok(Params {
            period_ns: self.period_ns,
            offset_ns: self.offset_ns,
            deadline_ns: some_ns(self.deadline_ns),
            budget_ns: some_ns(self.budget_ns),
            cpu,
            priority,
            name,
            socket,
        })
    }
}

fn invalid(why: &str) -> Error {
    Error::Invalid(why.to_string())
}

fn some_ns(ns: u64) -> Option<u64> {
    (ns != NONE_NS).then_some(ns)
}

/// The bytes of an optional C string; an empty one is refused (NULL is
/// how C says "the default").
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
unsafe fn c_text<'a>(text: *const c_char, field: &str) -> Result<Option<&'a [u8]>, Error> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise.
    let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
    if bytes.is_empty() {
        return Err(invalid(&format!("{field} is empty: NULL for the default")));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_10ms() -> RtlabParams {
        RtlabParams {
            period_ns: 10_000_000,
            ..RtlabParams::defaults()
        }
    }

    fn refusal(params: RtlabParams) -> String {
        // SAFETY: the test's strings are NUL-terminated.
        match unsafe { params.to_params() } {
            Err(Error::Invalid(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_the_rust_apis() {
        // SAFETY: no strings.
        let params = unsafe { every_10ms().to_params() }.unwrap();
        assert_eq!(params, Params::every(10_000_000));
    }

    #[test]
    fn every_field_converts_and_sentinels_mean_none() {
        let c = RtlabParams {
            period_ns: 1_000_000,
            offset_ns: 250_000,
            deadline_ns: 800_000,
            budget_ns: 300_000,
            cpu: 1,
            priority: 70,
            name: c"sensor".as_ptr(),
            socket: c"/tmp/rtlab test.sock".as_ptr(),
        };
        // SAFETY: literal C strings.
        let params = unsafe { c.to_params() }.unwrap();
        assert_eq!(
            params,
            Params {
                period_ns: 1_000_000,
                offset_ns: 250_000,
                deadline_ns: Some(800_000),
                budget_ns: Some(300_000),
                cpu: Some(1),
                priority: Some(70),
                name: Some("sensor".into()),
                socket: Some("/tmp/rtlab test.sock".into()),
            }
        );
        // A socket path is bytes, as the kernel takes it.
        let socket = c"/tmp/\xff.sock";
        let params = unsafe {
            RtlabParams {
                socket: socket.as_ptr(),
                ..every_10ms()
            }
            .to_params()
        }
        .unwrap();
        assert_eq!(
            params.socket.unwrap().as_os_str().as_bytes(),
            b"/tmp/\xff.sock"
        );
    }

    #[test]
    fn wrong_fields_are_refused_naming_them() {
        let zero = RtlabParams::defaults();
        assert!(refusal(zero).starts_with("period_ns is 0"));
        let cpu = RtlabParams {
            cpu: -2,
            ..every_10ms()
        };
        assert_eq!(refusal(cpu), "cpu is -2: a CPU number, or -1 for any");
        let prio = RtlabParams {
            priority: -5,
            ..every_10ms()
        };
        assert!(refusal(prio).starts_with("priority is -5"));
        let name = RtlabParams {
            name: c"caf\xe9".as_ptr(),
            ..every_10ms()
        };
        assert!(refusal(name).starts_with("name is not UTF-8"));
        let name = RtlabParams {
            name: c"".as_ptr(),
            ..every_10ms()
        };
        assert_eq!(refusal(name), "name is empty: NULL for the default");
        let socket = RtlabParams {
            socket: c"".as_ptr(),
            ..every_10ms()
        };
        assert_eq!(refusal(socket), "socket is empty: NULL for the default");
    }

    #[test]
    fn stats_convert_field_by_field() {
        let stats = Stats {
            activations: 1,
            missed_activations: 2,
            deadline_misses: 3,
            budget_overruns: 4,
            lateness_p50_ns: 5,
            lateness_p99_ns: 6,
            lateness_p999_ns: 7,
            lateness_max_ns: 8,
            response_p50_ns: 9,
            response_p99_ns: 10,
            response_p999_ns: 11,
            response_max_ns: 12,
        };
        let c = RtlabStats::from(stats);
        let fields: [u64; 12] = unsafe { std::mem::transmute(c) };
        assert_eq!(fields, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    }
}
