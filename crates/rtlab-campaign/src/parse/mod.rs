//! The campaign file reader. It walks toml's spanned document by hand
//! rather than deriving `Deserialize`, so that every error, including an
//! unknown key or a wrong type, names the line, the column and the full
//! field path (`load[2].run[0]`).
//!
//! - this module: the file's top level and what ties its sections together;
//! - `[[probe]]`: read by its kind's module under `probes/`, through the
//!   registry ([`crate::probes`]); [`probe`]: what those readers share;
//! - [`matrix`]: `[[load]]`, `[[configuration]]`, `[[exclude]]` and what a
//!   configuration asks of the probes it runs with;
//! - [`reader`]: typed values and sections, and errors at their place.

mod matrix;
pub(crate) mod probe;
pub(crate) mod reader;

use crate::error::CampaignError;
use crate::spec::*;
use reader::{Reader, Section, Value};
use rtlab_core::units::human_duration;
use toml::de::DeTable;

/// Most runs a plan may have: far beyond any real campaign, low enough that
/// a typo in `repeat` cannot exhaust memory.
pub const MAX_RUNS: u64 = 100_000;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "duration",
    "repeat",
    "cooldown",
    "probe",
    "load",
    "configuration",
    "exclude",
    "budget",
];
/// Reads a campaign from the text of its file. `origin` is the file path
/// (or `preset NAME`) used in messages; `check_load` validates one load spec
/// (`vm:workers=40,bytes=256M`) and says what is wrong with it.
pub fn parse(
    text: &str,
    origin: &str,
    check_load: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Campaign, CampaignError> {
    let r = Reader { text, origin };
    let root = DeTable::parse(text).map_err(|e| r.syntax(&e))?;
    let top = Section {
        table: root.get_ref(),
        path: String::new(),
        span: 0..0,
    };
    top.check_keys(&r, TOP_KEYS)?;

    let name_value = top.required(&r, "name")?;
    let name = r.name(name_value, "name")?;
    let description = match top.get("description") {
        Some(v) => Some(r.string(v, "description")?.0),
        None => None,
    };
    let duration_value = top.required(&r, "duration")?;
    let duration_ns = r.positive_duration(duration_value, "duration")?;
    let repeat = match top.get("repeat") {
        Some(v) => {
            let n = r.integer(v, "repeat")?;
            u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                r.error(
                    v.span(),
                    "repeat",
                    format!("{n} is not a count of runs (1 or more)"),
                )
            })?
        }
        None => 1,
    };
    let cooldown_ns = match top.get("cooldown") {
        Some(v) => r.duration(v, "cooldown")?,
        None => 0,
    };
    let budget = match top.get("budget") {
        Some(v) => Some(budget_text(&r, v)?),
        None => None,
    };

    let mut probes = Vec::new();
    let probe_sections = top.sections(&r, "probe", true)?;
    for section in &probe_sections {
        probes.push(crate::probes::read(&r, section)?);
    }
    unique(
        &r,
        "probe",
        &probe_sections,
        &probes,
        |p| &p.name,
        "give each probe its own `name`",
    )?;
    longer_than_every_interval(&r, (duration_value, duration_ns), &probe_sections, &probes)?;

    let mut loads = Vec::new();
    let load_sections = top.sections(&r, "load", true)?;
    for section in &load_sections {
        loads.push(matrix::load(&r, section, check_load)?);
    }
    unique(&r, "load", &load_sections, &loads, |l| &l.name, "")?;

    let mut configurations = Vec::new();
    let configuration_sections = top.sections(&r, "configuration", true)?;
    for section in &configuration_sections {
        configurations.push(matrix::configuration(&r, section)?);
    }
    unique(
        &r,
        "configuration",
        &configuration_sections,
        &configurations,
        |c| &c.name,
        "",
    )?;

    let mut excludes = Vec::new();
    if top.get("exclude").is_some() {
        for section in top.sections(&r, "exclude", false)? {
            excludes.push(matrix::exclude(
                &r,
                &section,
                &probes,
                &loads,
                &configurations,
            )?);
        }
    }
    // Only now: a pair the excludes remove entirely is never run, so it
    // must not be refused (a periodic probe beside a `policy = "other"`
    // configuration that an exclude keeps apart).
    for (section, c) in configuration_sections.iter().zip(&configurations) {
        for (probe_section, p) in probe_sections.iter().zip(&probes) {
            let runs = loads.iter().any(|l| {
                !excludes
                    .iter()
                    .any(|e| e.matches(&p.name, &l.name, &c.name))
            });
            if runs {
                let probe_line = r.position(probe_section.span.start).line;
                matrix::check_pair(&r, section, c, p, probe_line)?;
            }
        }
    }

    let cells = (probes.len() * loads.len() * configurations.len()) as u64;
    if cells.saturating_mul(u64::from(repeat)) > MAX_RUNS {
        let v = top.get("repeat").unwrap_or(duration_value);
        return Err(r.error(
            v.span(),
            "repeat",
            format!(
                "{cells} cells × {repeat} repeats is more than {MAX_RUNS} runs; split the campaign"
            ),
        ));
    }

    Ok(Campaign {
        name,
        description,
        duration_ns,
        repeat,
        cooldown_ns,
        probes,
        loads,
        configurations,
        excludes,
        budget,
        origin: origin.to_string(),
    })
}

/// Every run lasts at least one period of its probe.
fn longer_than_every_interval(
    r: &Reader,
    (duration_value, duration_ns): (&Value, u64),
    probe_sections: &[Section],
    probes: &[ProbeSpec],
) -> Result<(), CampaignError> {
    for (section, probe) in probe_sections.iter().zip(probes) {
        let Some(interval_ns) = probe.interval_ns() else {
            continue;
        };
        if duration_ns < interval_ns {
            return Err(r.error(
                duration_value.span(),
                "duration",
                format!(
                    "{} is shorter than the interval of probe `{}` ({}, line {})",
                    human_duration(duration_ns),
                    probe.name,
                    human_duration(interval_ns),
                    r.position(section.span.start).line
                ),
            ));
        }
    }
    Ok(())
}

/// The budget's text and where it starts; its clauses are checked by the
/// caller (see [`BudgetText`]).
fn budget_text(r: &Reader, v: &Value) -> Result<BudgetText, CampaignError> {
    let (text, span) = r.string(v, "budget")?;
    let raw = r.text.get(span.clone()).unwrap_or_default();
    let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else {
        1
    };
    // Verbatim: the characters between the quotes are the text itself, so
    // a clause's offset in the text is its offset in the file.
    let inner = raw.get(quote..quote + text.len());
    let verbatim = inner == Some(text.as_str()) && !text.contains('\n');
    let start = if verbatim {
        span.start + quote
    } else {
        span.start
    };
    Ok(BudgetText {
        text,
        position: r.position(start),
        verbatim,
    })
}

/// Names are unique within their section.
fn unique<T>(
    r: &Reader,
    section: &str,
    sections: &[Section],
    items: &[T],
    name: impl Fn(&T) -> &String,
    hint: &str,
) -> Result<(), CampaignError> {
    for (i, item) in items.iter().enumerate() {
        if let Some(first) = items[..i]
            .iter()
            .position(|other| name(other) == name(item))
        {
            let s = &sections[i];
            let span = s.get("name").map_or(s.span.clone(), |v| v.span());
            let mut message = format!(
                "two {section}s are named `{}` ({section}[{first}] at line {})",
                name(item),
                r.position(sections[first].span.start).line
            );
            if !hint.is_empty() {
                message += ": ";
                message += hint;
            }
            return Err(r.error(span, &s.field("name"), message));
        }
    }
    Ok(())
}
