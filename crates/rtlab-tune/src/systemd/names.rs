//! Unit names and where rtlab's files go, and text made safe for a unit
//! file's comments.

use super::error::SystemdError;
use std::path::{Path, PathBuf};

/// The name of the unit that runs `rtlab tune watch`.
pub const WATCH_UNIT_NAME: &str = "rtlab-tune-watch.service";

/// The file name of rtlab's drop-in inside `UNIT.d/`. The `50-` prefix
/// orders it after the usual vendor drop-ins and before an administrator's
/// `90-`/`override.conf` (drop-ins are applied in lexical order; later wins).
pub const DROPIN_FILE_NAME: &str = "50-rtlab-tune.conf";

/// Where `rtlab tune systemd` writes by default.
pub const DEFAULT_UNIT_DIR: &str = "/etc/systemd/system";

/// The longest a unit name may be (systemd's `UNIT_NAME_MAX` less the NUL).
const UNIT_NAME_MAX: usize = 255;

/// The unit types systemd knows: the suffix of every valid unit name.
const UNIT_SUFFIXES: [&str; 11] = [
    "service",
    "socket",
    "target",
    "device",
    "mount",
    "automount",
    "swap",
    "timer",
    "path",
    "slice",
    "scope",
];

/// Validates a unit name by systemd's rules and completes a bare name to a
/// service: `foo` → `foo.service` (as `systemctl` does; `foo.bar` without a
/// known suffix becomes `foo.bar.service`). Template instances
/// (`getty@tty1.service`) and templates (`getty@.service`, whose drop-ins
/// apply to every instance) are accepted.
pub fn unit_name(input: &str) -> Result<String, SystemdError> {
    let err = |reason: String| SystemdError::UnitName {
        input: input.escape_debug().to_string(),
        reason,
    };
    if input.is_empty() {
        return Err(err("the name is empty".into()));
    }
    if let Some(bad) = input
        .chars()
        .find(|&c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(err(format!(
            "{} is not allowed in a unit name (a unit name is a file name inside the unit directory)",
            describe_char(bad)
        )));
    }
    let has_known_suffix = input
        .rsplit_once('.')
        .is_some_and(|(_, suffix)| UNIT_SUFFIXES.contains(&suffix));
    let name = if has_known_suffix {
        input.to_string()
    } else {
        format!("{input}.service")
    };
    if name.len() > UNIT_NAME_MAX {
        return Err(err(format!(
            "{} bytes long; systemd allows at most {UNIT_NAME_MAX}",
            name.len()
        )));
    }
    let (stem, suffix) = name.rsplit_once('.').expect("a suffix was ensured above");
    if stem.is_empty() {
        return Err(err(format!("nothing before '.{suffix}'")));
    }
    if let Some(bad) = stem
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || ":-_.\\@".contains(c)))
    {
        return Err(err(format!(
            "{} is not allowed (systemd allows letters, digits, ':', '-', '_', '.', '\\' and '@')",
            describe_char(bad)
        )));
    }
    if stem.starts_with('@') {
        return Err(err(
            "nothing before '@' (a template instance is NAME@INSTANCE.TYPE)".into(),
        ));
    }
    Ok(name)
}

/// [`unit_name`], limited to services: a drop-in with `[Service]` settings
/// only makes sense for a `.service` unit.
pub fn service_name(input: &str) -> Result<String, SystemdError> {
    let name = unit_name(input)?;
    if name.ends_with(".service") {
        Ok(name)
    } else {
        Err(SystemdError::NotAService { unit: name })
    }
}

pub(super) fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        '/' => "'/'".into(),
        c if c.is_whitespace() || c.is_control() => {
            format!("the character {}", c.escape_default())
        }
        c => format!("'{c}'"),
    }
}

/// `unit_dir/UNIT.d/50-rtlab-tune.conf`. `unit` must have passed
/// [`unit_name`] (it is then a single path component).
pub fn dropin_path(unit_dir: &Path, unit: &str) -> PathBuf {
    unit_dir.join(format!("{unit}.d")).join(DROPIN_FILE_NAME)
}

/// The path of the watch unit in `unit_dir`.
pub fn watch_unit_path(unit_dir: &Path) -> PathBuf {
    unit_dir.join(WATCH_UNIT_NAME)
}

/// A command line made safe for a one-line comment: control characters are
/// escaped, so it cannot end the comment and start a directive.
pub(super) fn comment_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
