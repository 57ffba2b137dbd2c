//! rtlab's own JSON, taken as it is once checked.

use super::checks::{check_block_maxima, check_counts, check_text};
use super::error::{json_syntax_error, ImportError};
use rtlab_core::result::{RunResult, RUN_SCHEMA};

/// Reads an rtlab result as it is, after the checks every import gets.
pub(super) fn parse(text: &str, origin: &str) -> Result<RunResult, ImportError> {
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| json_syntax_error(origin, &e))?;
    let schema = value.get("schema").and_then(|s| s.as_str());
    if schema != Some(RUN_SCHEMA) {
        return Err(ImportError::Json {
            path: origin.to_string(),
            at: "$.schema".into(),
            message: format!(
                "expected \"{RUN_SCHEMA}\", found {}",
                value
                    .get("schema")
                    .map_or("nothing".into(), |s| s.to_string())
            ),
        });
    }
    check_text(&value, "$", origin)?;
    // Read again from the text, so that an error names the value's JSON
    // path and its line and column (a Value keeps no positions).
    let text = text.trim_start_matches('\u{feff}');
    let run = rtlab_core::result::parse_run_json(text).map_err(|e| ImportError::Json {
        path: origin.to_string(),
        at: format!("{} (line {} column {})", e.path, e.line, e.column),
        message: e.message,
    })?;
    // The id is kept: it is what `show`, `compare` and the tables print.
    rtlab_core::result::check_run_id(&run.id).map_err(|message| ImportError::Json {
        path: origin.to_string(),
        at: "$.id".into(),
        message,
    })?;
    check_labels(&run, origin)?;
    check_counts(&run, origin)?;
    check_block_maxima(&run, origin)?;
    Ok(run)
}

/// Refuses a label longer than rtlab takes at its own input
/// ([`rtlab_core::text::MAX_LABEL_CHARS`]: `--load`, campaign names and load
/// specs), naming its JSON path: an imported run is input too, and a
/// 70,000-character load or campaign name was stored and printed whole.
fn check_labels(run: &RunResult, origin: &str) -> Result<(), ImportError> {
    let mut labels = vec![("$.probe".to_string(), run.probe.as_str())];
    if let Some(campaign) = &run.campaign {
        labels.push(("$.campaign.name".to_string(), campaign.name.as_str()));
        labels.push(("$.campaign.execution".to_string(), &campaign.execution));
        labels.push((
            "$.campaign.configuration".to_string(),
            &campaign.configuration,
        ));
        labels.push(("$.campaign.load".to_string(), &campaign.load));
    }
    for (i, load) in run.loads.iter().enumerate() {
        labels.push((format!("$.loads[{i}].name"), load.name.as_str()));
        labels.push((format!("$.loads[{i}].spec"), &load.spec));
    }
    for (at, label) in labels {
        rtlab_core::text::check_label("the label", label).map_err(|e| ImportError::Json {
            path: origin.to_string(),
            at: at.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}
