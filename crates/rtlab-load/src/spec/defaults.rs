//! The parameters of a load left unset: what [`LoadSpec::resolved`]
//! fills in and what a worker falls back on (docs/load.md lists them).
//!
//! [`LoadSpec::resolved`]: super::LoadSpec::resolved

pub(crate) const VM_DEFAULT_WORKERS: u32 = 2;
pub(crate) const VM_DEFAULT_BYTES: u64 = 256 << 20;
pub(crate) const IO_DEFAULT_FILE: u64 = 64 << 20;
pub(crate) const IO_DEFAULT_BLOCK: u64 = 1 << 20;
pub(crate) const NET_DEFAULT_SIZE: u64 = 64;
pub(crate) const TIMERS_DEFAULT_COUNT: u32 = 8;
pub(crate) const TIMERS_DEFAULT_INTERVAL_NS: u64 = 100_000;
pub(crate) const MSG_DEFAULT_GROUPS: u32 = 1;
pub(crate) const MSG_DEFAULT_FDS: u32 = 20;
pub(crate) const MSG_DEFAULT_SIZE: u64 = 100;
