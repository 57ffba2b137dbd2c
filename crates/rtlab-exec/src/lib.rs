//! rtlab's firm real-time executive (paper 002, KURT, in user space):
//! plan files of events at exact offsets ([`plan`]), modules that handle
//! them ([`module`]), the dispatcher that fires each event at its
//! nanosecond ([`dispatch`]), periodic tasks ([`periodic`]) and periodic
//! tasks as separate processes ([`processes`]), and packet traffic on an
//! exact schedule ([`traffic`]).

pub mod admission;
pub mod dispatch;
pub mod guard;
pub mod module;
pub mod periodic;
pub mod plan;
pub mod processes;
pub mod serve;
pub mod taskset;
pub mod traffic;
