//! rtlab's campaigns: a TOML file of probes, loads and configurations whose
//! product (minus excludes) is run, each cell `repeat` times for `duration`.
//!
//! ```text
//! text ──parse()──► Campaign ──plan()──► Plan { runs, warnings } ──► runner
//! ```
//!
//! [`read`] takes a path or the name of a built-in preset ([`PRESETS`]).
//! Every error names the file, line, column and field (see
//! [`CampaignError`]). The file format is specified in docs/campaign.md.

mod error;
mod parse;
mod plan;
mod probes;
pub mod runner;
mod spec;

pub use error::{CampaignError, Position};
pub use parse::{parse, MAX_RUNS};
pub use plan::{format_eta, plan, Plan, PlannedRun, PLAN_SCHEMA, RUN_OVERHEAD_NS};
/// The campaign as read, and every probe kind's settings (each kind's
/// module exports its own through `probes`, so a new kind adds no line here).
pub use spec::*;

use std::path::Path;

/// The built-in campaigns, by name, with their text (the files under
/// `examples/`).
pub const PRESETS: &[(&str, &str)] = &[
    ("quick", include_str!("../../../examples/quick.toml")),
    (
        "hallberg2017",
        include_str!("../../../examples/hallberg2017.toml"),
    ),
    (
        "hallberg2017-net",
        include_str!("../../../examples/hallberg2017-net.toml"),
    ),
    ("romero", include_str!("../../../examples/romero.toml")),
    (
        "straumann2001",
        include_str!("../../../examples/straumann2001.toml"),
    ),
    (
        "srinivasan1998",
        include_str!("../../../examples/srinivasan1998.toml"),
    ),
];

/// The text of a built-in campaign.
pub fn preset(name: &str) -> Option<&'static str> {
    PRESETS
        .iter()
        .find(|(preset, _)| *preset == name)
        .map(|(_, text)| *text)
}

/// Reads a campaign from a preset name (`quick`, `hallberg2017`,
/// `hallberg2017-net`, `romero`, `straumann2001`, `srinivasan1998`) or a file path. A preset
/// name wins over a file of the same name in the current directory; write
/// `./quick` for the file. Anything that is neither is an error listing the
/// presets.
pub fn read(
    source: &str,
    check_load: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Campaign, CampaignError> {
    if let Some(text) = preset(source) {
        return parse(text, &format!("preset {source}"), check_load);
    }
    let presets = || {
        PRESETS
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let path = Path::new(source);
    let bytes = std::fs::read(path).map_err(|e| CampaignError {
        origin: source.to_string(),
        position: None,
        field: None,
        message: if e.kind() == std::io::ErrorKind::NotFound {
            format!("no such file, and not a preset (presets: {})", presets())
        } else {
            format!("cannot read it: {e}")
        },
    })?;
    let text = rtlab_core::text::utf8_text(bytes).map_err(|e| CampaignError {
        origin: source.to_string(),
        position: None,
        field: None,
        message: e.to_string(),
    })?;
    parse(&text, source, check_load)
}
