//! Traffic on an exact schedule (paper 002's ARTS, §4.4.2): packet
//! streams recorded, imported from captures or generated into plans, and
//! replayed by the dispatcher with every packet at its planned instant.
//!
//! - [`format`]: what a traffic event's 12 bytes hold, and the stamp a
//!   replay puts at the start of each datagram (docs/plan-format.md);
//! - [`accuracy`]: how close packets came to their plan (both sides);
//! - [`clocks`]: the kernel's packet stamps on the schedule's clock;
//! - [`sink`]: a plan written as packets come, in bounded memory;
//! - [`gen`]: constant rate, Poisson, bursts and on/off patterns;
//! - [`pcap`]: pcap and pcapng captures in (UDP flows) and out;
//! - [`replay`]: the sender (a probe: departure errors, transmit stamps);
//! - [`record`]: the receiver (a probe: kernel receive stamps, a plan
//!   written, arrivals compared with the plan the stamps name).

pub mod accuracy;
pub mod clocks;
pub mod format;
pub mod gen;
pub mod pcap;
pub mod record;
pub mod replay;
pub mod sink;
