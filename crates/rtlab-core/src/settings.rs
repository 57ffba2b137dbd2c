//! Settings that check themselves. A probe's config says which of its
//! settings cannot work with a [`FieldError`]; each front end then names
//! that setting its own way: the command line as its flag, a campaign file
//! as its key at the line it is written on.

use std::fmt;

/// One setting that cannot work, and why.
///
/// `field` is the setting's user-facing key, as a campaign file writes it:
/// snake_case, without the `_ns` suffix of the config's Rust field
/// (`interval`, `dl_runtime`, `round_trips`); a setting no campaign has is
/// named after its flag (`count`, `skip_after`). The command line's flag
/// is the key with dashes ([`flag`]) unless a command maps it otherwise.
///
/// `message` says what is wrong. It names settings as `{key}`
/// placeholders (`"{runtime} 2s is longer than the {period} 1s"`) so that
/// each front end writes them its own way ([`FieldError::message_with`]).
/// A message that does not name its own setting reads after it:
/// `must be above 0` ([`FieldError::render`] puts `interval: ` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> FieldError {
        FieldError {
            field,
            message: message.into(),
        }
    }

    /// The message with every `{key}` replaced by `name(key)`.
    pub fn message_with(&self, name: impl Fn(&str) -> String) -> String {
        let mut out = String::with_capacity(self.message.len());
        let mut rest = self.message.as_str();
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else {
                break;
            };
            let key = &rest[open + 1..open + len];
            out.push_str(&rest[..open]);
            if is_key(key) {
                out.push_str(&name(key));
            } else {
                out.push_str(&rest[open..=open + len]);
            }
            rest = &rest[open + len + 1..];
        }
        out.push_str(rest);
        out
    }

    /// The whole sentence: the message with its settings named by `name`,
    /// after `name(field): ` unless the message names the field itself.
    pub fn render(&self, name: impl Fn(&str) -> String) -> String {
        let text = self.message_with(&name);
        if self.names(self.field) {
            text
        } else {
            format!("{}: {text}", name(self.field))
        }
    }

    /// The settings the message is about: the field first, then the others
    /// it names, in order (where a front end looks for a place to point at
    /// when the field itself was left to its default).
    pub fn settings(&self) -> Vec<&str> {
        let mut keys = vec![self.field];
        let mut rest = self.message.as_str();
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else {
                break;
            };
            let key = &rest[open + 1..open + len];
            if is_key(key) && !keys.contains(&key) {
                keys.push(key);
            }
            rest = &rest[open + len + 1..];
        }
        keys
    }

    fn names(&self, key: &str) -> bool {
        self.message.contains(&format!("{{{key}}}"))
    }
}

/// A key as the command line writes it, the flag of the same name:
/// `dl_runtime` → `--dl-runtime`.
pub fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A placeholder's key: lower-case letters, digits and underscores.
fn is_key(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `interval: must be above 0`, every setting named by its key.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(str::to_string))
    }
}

impl std::error::Error for FieldError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_naming_its_field_is_written_as_it_is() {
        let e = FieldError::new(
            "dl_runtime",
            "{dl_runtime} 2ms is longer than the {interval} 1ms",
        );
        assert_eq!(
            e.render(flag),
            "--dl-runtime 2ms is longer than the --interval 1ms"
        );
        assert_eq!(
            e.to_string(),
            "dl_runtime 2ms is longer than the interval 1ms"
        );
        assert_eq!(e.settings(), ["dl_runtime", "interval"]);
    }

    #[test]
    fn a_message_without_its_field_reads_after_it() {
        let e = FieldError::new("round_trips", "must be 1-32 (got 0)");
        assert_eq!(e.render(flag), "--round-trips: must be 1-32 (got 0)");
        assert_eq!(e.to_string(), "round_trips: must be 1-32 (got 0)");
        assert_eq!(e.message_with(flag), "must be 1-32 (got 0)");
        assert_eq!(e.settings(), ["round_trips"]);
    }

    #[test]
    fn braces_that_are_no_key_stay() {
        let e = FieldError::new("x", "{x} {not a key} {} {");
        assert_eq!(e.message_with(|k| k.to_uppercase()), "X {not a key} {} {");
    }
}
