//! The checks every importer makes on what it read: no count past what a
//! measurement reaches, block maxima a recorder could have kept, no
//! control character in a text.

use super::error::ImportError;
use rtlab_core::result::{BlockMaxima, RunResult};

/// The most events (samples, missed and dropped, or histogram counts) an
/// imported run may hold over all its series: 2^53, 285 years of one event
/// a microsecond, and the largest count a report's floating-point figures
/// hold exactly. Larger counts are no measurement, and their sums
/// overflowed wherever a run's series are added up (the import's summary,
/// the report's exceedance chart, compare, the campaign matrix).
pub const MAX_IMPORTED_EVENTS: u64 = 1 << 53;

/// Refuses a run whose counts add up past [`MAX_IMPORTED_EVENTS`], naming
/// the series where the total crosses it. Every importer calls it last, so
/// that what one format's parser accepts, its rtlab JSON export imports.
pub(crate) fn check_counts(run: &RunResult, origin: &str) -> Result<(), ImportError> {
    let limit = u128::from(MAX_IMPORTED_EVENTS);
    let (mut events, mut binned) = (0u128, 0u128);
    for series in &run.series {
        let stats = &series.stats;
        events += u128::from(stats.samples) + u128::from(stats.missed) + u128::from(stats.dropped);
        binned += stats
            .histogram_ns
            .iter()
            .map(|bin| u128::from(bin[1]))
            .sum::<u128>();
        let (what, total) = match events > limit {
            true => ("samples, missed and dropped", events),
            false => ("histogram counts", binned),
        };
        if total > limit {
            return Err(ImportError::Counts {
                path: origin.to_string(),
                message: format!(
                    "series `{}`: the run's {what} add up to {total} with this series, more \
                     than the {limit} (2^53) a run can hold; refused",
                    rtlab_core::result::printable(&series.name, 80)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses block maxima no recorder keeps for its series: blocks of no
/// sample, more than [`BlockMaxima::MAX_BLOCKS`], more samples in whole
/// blocks than the series holds, or a maximum outside the series' min..max.
/// The worst-case estimate fits them as they are: crafted maxima (a block
/// of 2^64 - 1 samples, u64::MAX beside a series maximum of 900 µs) were
/// printed as a bound on that series.
pub(crate) fn check_block_maxima(run: &RunResult, origin: &str) -> Result<(), ImportError> {
    for (i, series) in run.series.iter().enumerate() {
        let stats = &series.stats;
        let Some(blocks) = &stats.block_maxima else {
            continue;
        };
        let whole = u128::from(blocks.block_samples) * blocks.maxima_ns.len() as u128;
        let outside = blocks
            .maxima_ns
            .iter()
            .find(|&&m| m < stats.min_ns || m > stats.max_ns);
        let problem = if blocks.maxima_ns.is_empty() {
            None
        } else if blocks.block_samples == 0 {
            Some("blocks of 0 samples".to_string())
        } else if blocks.maxima_ns.len() > BlockMaxima::MAX_BLOCKS {
            Some(format!(
                "{} blocks, more than the {} a run keeps",
                blocks.maxima_ns.len(),
                BlockMaxima::MAX_BLOCKS
            ))
        } else if whole > u128::from(stats.samples) {
            Some(format!(
                "{} blocks of {} samples, more than the series' {} samples",
                blocks.maxima_ns.len(),
                blocks.block_samples,
                stats.samples
            ))
        } else {
            outside.map(|m| {
                format!(
                    "a block maximum of {m} ns outside the series' {}..{} ns",
                    stats.min_ns, stats.max_ns
                )
            })
        };
        if let Some(problem) = problem {
            return Err(ImportError::Json {
                path: origin.to_string(),
                at: format!("$.series[{i}].block_maxima"),
                message: format!(
                    "series `{}`: {problem}: no recorder keeps these; refused",
                    rtlab_core::result::printable(&series.name, 80)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a control character (other than tab and newline) in any key or
/// string of an imported document: those strings end up in tables and
/// messages on a terminal, where an escape sequence would be obeyed.
pub(crate) fn check_text(
    value: &serde_json::Value,
    at: &str,
    origin: &str,
) -> Result<(), ImportError> {
    use serde_json::Value;
    let bad = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    };
    let refuse = |at: String, text: &str| ImportError::Json {
        path: origin.to_string(),
        at,
        message: format!(
            "the text `{}` holds control characters (shown escaped): refused, since it would \
             be printed on a terminal",
            rtlab_core::result::printable(text, 80)
        ),
    };
    match value {
        Value::String(text) if bad(text) => Err(refuse(at.to_string(), text)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_text(item, &format!("{at}[{i}]"), origin)),
        Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let here = format!("{at}[\"{}\"]", rtlab_core::result::printable(key, 80));
            if bad(key) {
                return Err(refuse(here, key));
            }
            check_text(item, &here, origin)
        }),
        _ => Ok(()),
    }
}
