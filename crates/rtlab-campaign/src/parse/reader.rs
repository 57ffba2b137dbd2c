//! Typed values and sections of the TOML document, and errors that name
//! the file, the line, the column and the field.

use crate::error::{CampaignError, Position};
use rtlab_core::units::parse_duration_ns;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// The text being read and its name, to turn byte offsets into messages.
pub(crate) struct Reader<'a> {
    pub(crate) text: &'a str,
    pub(crate) origin: &'a str,
}

impl Reader<'_> {
    pub(crate) fn position(&self, offset: usize) -> Position {
        Position::of_offset(self.text, offset)
    }

    pub(crate) fn error(
        &self,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> CampaignError {
        CampaignError {
            origin: self.origin.to_string(),
            position: Some(self.position(span.start)),
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    /// A TOML syntax error, at toml's own position.
    pub(crate) fn syntax(&self, e: &toml::de::Error) -> CampaignError {
        let message = e.message().trim_end();
        CampaignError {
            origin: self.origin.to_string(),
            position: Some(self.position(e.span().map_or(0, |s| s.start))),
            field: None,
            message: format!("TOML syntax: {message}"),
        }
    }

    pub(crate) fn expected(&self, v: &Value, field: &str, what: &str) -> CampaignError {
        self.error(
            v.span(),
            field,
            format!("expected {what}, found {}", v.get_ref().type_str()),
        )
    }

    pub(crate) fn string(
        &self,
        v: &Value,
        field: &str,
    ) -> Result<(String, Range<usize>), CampaignError> {
        match v.get_ref() {
            DeValue::String(s) => Ok((s.to_string(), v.span())),
            _ => Err(self.expected(v, field, "a string")),
        }
    }

    pub(crate) fn strings(
        &self,
        v: &Value,
        field: &str,
        what: &str,
    ) -> Result<Vec<(String, Range<usize>)>, CampaignError> {
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.expected(v, field, &format!("an array of strings: {what}")));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.string(item, &format!("{field}[{i}]")))
            .collect()
    }

    pub(crate) fn integer(&self, v: &Value, field: &str) -> Result<i64, CampaignError> {
        match v.get_ref() {
            DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
                .map_err(|_| self.error(v.span(), field, "integer too large")),
            _ => Err(self.expected(v, field, "an integer")),
        }
    }

    pub(crate) fn boolean(&self, v: &Value, field: &str) -> Result<bool, CampaignError> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err(self.expected(v, field, "true or false")),
        }
    }

    /// A duration string with its unit: `6s`, `500us`.
    pub(crate) fn duration(&self, v: &Value, field: &str) -> Result<u64, CampaignError> {
        match v.get_ref() {
            DeValue::String(s) => {
                parse_duration_ns(s).map_err(|e| self.error(v.span(), field, e.to_string()))
            }
            DeValue::Integer(_) | DeValue::Float(_) => Err(self.error(
                v.span(),
                field,
                "a duration is a string with its unit, e.g. \"6s\", \"500us\", \"1.5ms\"",
            )),
            _ => Err(self.expected(v, field, "a duration such as \"6s\"")),
        }
    }

    pub(crate) fn positive_duration(&self, v: &Value, field: &str) -> Result<u64, CampaignError> {
        match self.duration(v, field)? {
            0 => Err(self.error(v.span(), field, "must be longer than 0")),
            ns => Ok(ns),
        }
    }

    /// A label: letters, digits and `-_.+`, as used in tables and excludes.
    pub(crate) fn name(&self, v: &Value, field: &str) -> Result<String, CampaignError> {
        let (name, span) = self.string(v, field)?;
        if name.is_empty() {
            return Err(self.error(span, field, "a name cannot be empty"));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+')))
        {
            return Err(self.error(
                span,
                field,
                format!(
                    "`{name}`: a name may hold letters, digits, '-', '_', '.' and '+', not {bad:?}"
                ),
            ));
        }
        Ok(name)
    }
}

/// One table of the file with its field path (`load[2]`, or empty for the
/// top level) and the span of its header.
pub(crate) struct Section<'t, 'i> {
    pub(crate) table: &'t DeTable<'i>,
    pub(crate) path: String,
    pub(crate) span: Range<usize>,
}

impl<'t, 'i> Section<'t, 'i> {
    pub(crate) fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'t Value<'i>> {
        self.table.get(key)
    }

    pub(crate) fn required(&self, r: &Reader, key: &str) -> Result<&'t Value<'i>, CampaignError> {
        self.get(key).ok_or_else(|| {
            let what = if self.path.is_empty() {
                "the campaign".to_string()
            } else {
                format!("`{}`", self.path)
            };
            r.error(
                self.span.clone(),
                &self.field(key),
                format!("missing: {what} needs `{key}`"),
            )
        })
    }

    /// Every key must be known; the first unknown one (in file order) is
    /// the error.
    pub(crate) fn check_keys(&self, r: &Reader, known: &[&str]) -> Result<(), CampaignError> {
        let unknown = self
            .table
            .iter()
            .filter(|(key, _)| !known.contains(&key.get_ref().as_ref()))
            .min_by_key(|(key, _)| key.span().start);
        match unknown {
            Some((key, _)) => Err(r.error(
                key.span(),
                &self.field(key.get_ref()),
                format!(
                    "unknown key `{}` (known keys here: {})",
                    key.get_ref(),
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The entries of an array of tables (`[[load]]`).
    pub(crate) fn sections(
        &self,
        r: &Reader,
        key: &str,
        at_least_one: bool,
    ) -> Result<Vec<Section<'t, 'i>>, CampaignError> {
        let Some(v) = self.get(key) else {
            return Err(r.error(
                self.span.clone(),
                key,
                format!("missing: a campaign needs at least one [[{key}]]"),
            ));
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(r.expected(v, key, &format!("[[{key}]] (an array of tables)")));
        };
        if items.is_empty() && at_least_one {
            return Err(r.error(
                v.span(),
                key,
                format!("a campaign needs at least one [[{key}]]"),
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = format!("{key}[{i}]");
                match item.get_ref() {
                    DeValue::Table(table) => Ok(Section {
                        table,
                        path,
                        span: item.span(),
                    }),
                    _ => Err(r.expected(item, &path, "a table")),
                }
            })
            .collect()
    }
}
