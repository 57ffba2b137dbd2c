//! The rule every run id follows.

use super::safe_text::{is_invisible, printable};

/// The longest run id accepted (rtlab's own are about 25 characters).
pub const RUN_ID_MAX_LEN: usize = 64;

/// Checks a run id, or a prefix of one, against the one rule every place
/// that takes an id applies (import, the store's save, `show`, `compare`,
/// `export`, `report`): 1 to [`RUN_ID_MAX_LEN`] ASCII letters, digits, `-`,
/// `_` or `.`, starting with a letter or digit. Ids are printed in tables
/// and messages and typed on command lines: nothing in one may move the
/// cursor, look like an option or hide in a shell. The error says what is
/// wrong and shows the id with control characters escaped.
pub fn check_run_id(id: &str) -> Result<(), String> {
    let shown = printable(id, RUN_ID_MAX_LEN);
    if id.is_empty() {
        return Err("the run id is empty".into());
    }
    if id.len() > RUN_ID_MAX_LEN {
        return Err(format!(
            "run id `{shown}` is {} characters long: at most {RUN_ID_MAX_LEN}",
            id.chars().count()
        ));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "run id `{shown}` holds {}: a run id is ASCII letters, digits, '-', '_' and '.'",
            describe_char(bad)
        ));
    }
    if !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "run id `{shown}` must start with a letter or a digit"
        ));
    }
    if id == "last" {
        return Err("`last` cannot be a run id: it names the newest run".into());
    }
    Ok(())
}

fn describe_char(c: char) -> String {
    if c.is_control() || is_invisible(c) {
        format!("the control character {}", c.escape_unicode())
    } else if c == ' ' {
        "a space".into()
    } else {
        format!("'{c}'")
    }
}
