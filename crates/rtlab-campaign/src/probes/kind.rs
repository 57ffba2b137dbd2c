//! What a probe kind is to a campaign: its name, its keys and the reader
//! of its `[[probe]]` table ([`KindDef`], one per kind's module, listed in
//! the registry), and what the campaign asks of every kind's settings
//! ([`KindSettings`]), so that nothing outside the kind's own module
//! matches over the kinds.

use super::fields::fields_of;
use crate::error::CampaignError;
use crate::parse::reader::{Reader, Section};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_probe::Probe;
use serde::{Serialize, Serializer};
use std::any::Any;
use std::fmt;

/// One probe kind: what the registry (`probes::KINDS`) lists.
pub struct KindDef {
    /// `kind = "…"` in a `[[probe]]` table, and the probe's default name.
    pub name: &'static str,
    /// The keys of its `[[probe]]` table besides `kind` and `name`, in the
    /// order the "known keys here" message lists them.
    pub keys: &'static [&'static str],
    /// Reads its `[[probe]]` table (whose keys are already checked), its
    /// defaults filled in, and checks the settings where they are written.
    pub read: ReadFn,
}

/// The reader of one kind's `[[probe]]` table.
pub type ReadFn = fn(&Reader, &Section) -> Result<Box<dyn KindSettings>, CampaignError>;

/// What a probe measures: one of the registry's kinds, by name.
#[derive(Clone, Copy)]
pub struct ProbeKind(pub(super) &'static KindDef);

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        self.0.name
    }

    /// The kind's definition: its keys and reader.
    pub(super) fn def(self) -> &'static KindDef {
        self.0
    }
}

impl PartialEq for ProbeKind {
    fn eq(&self, other: &ProbeKind) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ProbeKind {}

impl fmt::Debug for ProbeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for ProbeKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What a campaign asks of every probe kind's own settings. Each kind's
/// settings type implements it (and derives `Clone`, `PartialEq` and
/// `Serialize`, which [`SettingsValue`] turns into what a
/// `Box<dyn KindSettings>` needs).
pub trait KindSettings: fmt::Debug + Send + Sync + Any + SettingsValue {
    /// The period of the probe's deadlines or messages; None for a probe
    /// without one (noise).
    fn interval_ns(&self) -> Option<u64>;

    /// The settings for humans: `every 1ms on all CPUs, mode abs`.
    fn describe(&self) -> String;

    /// The probe of one run; the error names the setting that cannot
    /// work.
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String>;

    /// The thread a configuration schedules when it is not the measuring
    /// one, to say so beside the configuration: `server` for a net probe
    /// with rtlab's own server.
    fn scheduled_thread(&self) -> Option<&'static str> {
        None
    }

    /// Whether a deadline configuration may schedule the probe (deadline =
    /// period = its interval): only the timer probe's threads can.
    fn takes_deadline(&self) -> bool {
        false
    }

    /// Whether the probe runs SCHED_FIFO only (the executive's periodic
    /// tasks).
    fn fifo_only(&self) -> bool {
        false
    }

    /// What the probe's own config refuses with a configuration's `sched`,
    /// checked for every probe × configuration pair that runs.
    fn check_sched(&self, _sched: SchedParams) -> Result<(), FieldError> {
        Ok(())
    }
}

/// One run of a plan's cell, as its probe is built for it.
pub struct OneRun<'a> {
    /// The configuration's scheduling (each kind says which of its threads
    /// it schedules), deadline parameters included.
    pub sched: SchedParams,
    /// Measuring time.
    pub duration_ns: u64,
    /// What the probe's CPU settings are resolved against.
    pub online: &'a CpuSet,
}

/// What a `Box<dyn KindSettings>` needs from its type's derives: a clone,
/// equality, the fields in order. Implemented for every settings type at
/// once, below.
pub trait SettingsValue {
    fn boxed_clone(&self) -> Box<dyn KindSettings>;
    /// Same type and same settings.
    fn same_as(&self, other: &dyn KindSettings) -> bool;
    /// The fields as `Serialize` writes them, each with its JSON, in order.
    fn fields(&self) -> Vec<(String, serde_json::Value)>;
}

impl<T: KindSettings + Clone + PartialEq + Serialize> SettingsValue for T {
    fn boxed_clone(&self) -> Box<dyn KindSettings> {
        Box::new(self.clone())
    }
    fn same_as(&self, other: &dyn KindSettings) -> bool {
        (other as &dyn Any).downcast_ref::<T>() == Some(self)
    }
    fn fields(&self) -> Vec<(String, serde_json::Value)> {
        fields_of(self)
    }
}

impl Clone for Box<dyn KindSettings> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl PartialEq for dyn KindSettings {
    fn eq(&self, other: &dyn KindSettings) -> bool {
        self.same_as(other)
    }
}

impl Eq for dyn KindSettings {}

/// One `[[probe]]`.
#[derive(Debug, Clone)]
pub struct ProbeSpec {
    /// Label in tables and excludes; defaults to the kind.
    pub name: String,
    pub kind: ProbeKind,
    /// The kind's own settings (see [`ProbeSpec::settings_as`]).
    pub settings: Box<dyn KindSettings>,
}

// By hand: a derived PartialEq cannot compare two `Box<dyn Trait>` fields
// (rust-lang/rust#31740); compare what they hold.
impl PartialEq for ProbeSpec {
    fn eq(&self, other: &ProbeSpec) -> bool {
        self.name == other.name && self.kind == other.kind && *self.settings == *other.settings
    }
}

impl Eq for ProbeSpec {}

/// As the name, the kind and the settings' own fields, flattened into one
/// object (what `campaign plan --json` has always printed).
impl Serialize for ProbeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("kind", &self.kind)?;
        for (key, value) in &self.settings.fields() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl ProbeSpec {
    /// The period of the probe's deadlines, for a periodic probe (timer,
    /// switch, periodic; net: the period of its messages); None for the
    /// noise probe.
    pub fn interval_ns(&self) -> Option<u64> {
        self.settings.interval_ns()
    }

    /// The settings for humans: `every 1ms on all CPUs, mode abs`.
    pub fn describe(&self) -> String {
        self.settings.describe()
    }

    /// The settings as their own type, when they are of that kind:
    /// `spec.settings_as::<NetSettings>()`.
    pub fn settings_as<T: KindSettings>(&self) -> Option<&T> {
        (self.settings.as_ref() as &dyn Any).downcast_ref()
    }

    /// The settings as their own type, to change them.
    pub fn settings_as_mut<T: KindSettings>(&mut self) -> Option<&mut T> {
        (self.settings.as_mut() as &mut dyn Any).downcast_mut()
    }
}
