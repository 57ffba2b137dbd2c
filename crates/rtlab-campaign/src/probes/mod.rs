//! The probe kinds a campaign runs. Each kind's module holds its campaign
//! section: its settings (defaults filled in, the probe's own defaults),
//! its keys and the reader of its `[[probe]]` table, and the probe it
//! builds for one run. [`KINDS`] is the registry: the one list every kind
//! is reached through (by name, for its keys, to read it). See
//! docs/campaign.md for their keys.
//!
//! Adding a kind: its module here (`mod`) with a `KIND` (its name, keys
//! and reader) and a settings type that implements [`KindSettings`] (and
//! derives `Debug`, `Clone`, `PartialEq`, `Eq`, `Serialize`), one line in
//! [`KINDS`], and a `pub use` of the settings type. Nothing else in the
//! crate names a kind: the rules a configuration checks, the plan's
//! scheduling column and the run's probe all ask the settings.

mod cpus;
mod fields;
mod kind;
mod net;
mod noise;
mod periodic;
mod switch;
mod timer;

pub use cpus::cpus_text;
use kind::KindDef;
pub use kind::{KindSettings, OneRun, ProbeKind, ProbeSpec, SettingsValue};
pub use net::{
    net_placement, parse_transport, NetMode, NetSettings, Transport, DEFAULT_NET_INTERVAL_NS,
    DEFAULT_NET_PAYLOAD, DEFAULT_NET_ROUND_TRIPS, DEFAULT_NET_TIMEOUT_NS, NET_CLIENT_SCHED,
};
pub use noise::NoiseSettings;
pub use periodic::{PeriodicMode, PeriodicSettings};
pub use switch::{switch_placement, Mechanism, SwitchSettings, DEFAULT_SWITCH_INTERVAL_NS};
pub use timer::{TimerSettings, WaitMode};
/// Default interval and histogram range of a timer probe (as `rtlab
/// measure timer`).
pub use timer::{DEFAULT_HIST_MAX_NS, DEFAULT_INTERVAL_NS};

use crate::error::CampaignError;
use crate::parse::reader::{Reader, Section};
use std::str::FromStr;

/// Every probe kind, in the order the "known kinds" message lists them.
const KINDS: &[&KindDef] = &[
    &timer::KIND,
    &switch::KIND,
    &noise::KIND,
    &net::KIND,
    &periodic::KIND,
];

/// The keys every `[[probe]]` table has, before its kind's own.
const COMMON_KEYS: &[&str] = &["kind", "name"];

impl FromStr for ProbeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ProbeKind, String> {
        KINDS
            .iter()
            .find(|def| def.name == s)
            .map(|def| ProbeKind(def))
            .ok_or_else(|| {
                let known: Vec<&str> = KINDS.iter().map(|def| def.name).collect();
                format!(
                    "unknown probe kind `{s}` (known kinds: {})",
                    known.join(", ")
                )
            })
    }
}

/// Reads one `[[probe]]`: its kind, its name (by default the kind's) and
/// the settings its kind reads from the keys it knows.
pub(crate) fn read(r: &Reader, s: &Section) -> Result<ProbeSpec, CampaignError> {
    let kind_value = s.required(r, "kind")?;
    let (kind_text, _) = r.string(kind_value, &s.field("kind"))?;
    let kind: ProbeKind = kind_text
        .parse()
        .map_err(|e: String| r.error(kind_value.span(), &s.field("kind"), e))?;
    let name = match s.get("name") {
        Some(v) => r.name(v, &s.field("name"))?,
        None => kind.to_string(),
    };
    let def = kind.def();
    let known: Vec<&str> = COMMON_KEYS.iter().chain(def.keys).copied().collect();
    s.check_keys(r, &known)?;
    let settings = (def.read)(r, s)?;
    Ok(ProbeSpec {
        name,
        kind,
        settings,
    })
}
