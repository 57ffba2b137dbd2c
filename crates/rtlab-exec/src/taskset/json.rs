//! rt-app's JSON as rt-app reads it (json-c, lenient): `/* */` and `//`
//! comments and trailing commas are allowed, and a key may repeat (workgen
//! numbers repeated events; rtlab keeps each). [`clean`] blanks comments
//! and trailing commas out with spaces, so that every byte offset, line
//! and column of the cleaned text is the original's; [`Json`] keeps an
//! object's keys in order, repeats included.

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A JSON value with its objects' keys in file order, repeats kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The JSON type, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a number with a fraction",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Int(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(i64::try_from(n).map_or(Json::Float(n as f64), Json::Int))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Json, E> {
        Ok(Json::Float(x))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

/// Where a comment that never ends starts (byte offset).
pub(crate) struct Unterminated(pub usize);

/// The text with comments and trailing commas replaced by spaces (line
/// breaks kept): the same length, the same offsets.
pub(crate) fn clean(text: &str) -> Result<String, Unterminated> {
    let mut b = text.as_bytes().to_vec();
    let mut i = 0;
    let mut in_string = false;
    // The last comma outside strings, while only blanks have followed it.
    let mut comma: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, b.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                comma = None;
            }
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    b[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let start = i;
                let end = text[i + 2..]
                    .find("*/")
                    .map(|at| i + 2 + at + 2)
                    .ok_or(Unterminated(start))?;
                for byte in &mut b[start..end] {
                    if *byte != b'\n' {
                        *byte = b' ';
                    }
                }
                i = end;
                continue;
            }
            (b',', _) => comma = Some(i),
            (b'}' | b']', _) => {
                if let Some(at) = comma.take() {
                    b[at] = b' ';
                }
            }
            (c, _) if c.is_ascii_whitespace() => {}
            _ => comma = None,
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, by ASCII spaces, whole comments at a
    // time: still UTF-8.
    Ok(String::from_utf8(b).expect("comments are blanked whole"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_become_spaces_not_inside_strings() {
        let text = "{ /* a\n b */ \"k//\": \"/*x*/,}\", // end\n \"n\": [1, 2,],\n}";
        let cleaned = clean(text).ok().unwrap();
        assert_eq!(cleaned.len(), text.len());
        assert_eq!(cleaned.matches('\n').count(), text.matches('\n').count());
        let json: Json = serde_json::from_str(&cleaned).unwrap();
        assert_eq!(
            json,
            Json::Object(vec![
                ("k//".into(), Json::Str("/*x*/,}".into())),
                ("n".into(), Json::Array(vec![Json::Int(1), Json::Int(2)])),
            ])
        );
    }

    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        let text = r#"{"a": "say \"/*\" ok", "b": 1}"#;
        let json: Json = serde_json::from_str(&clean(text).ok().unwrap()).unwrap();
        let Json::Object(entries) = json else {
            panic!("an object")
        };
        assert_eq!(entries[0].1, Json::Str("say \"/*\" ok".into()));
    }

    #[test]
    fn repeated_keys_are_kept_in_order() {
        let json: Json = serde_json::from_str(r#"{"run": 1, "run": 2}"#).unwrap();
        assert_eq!(
            json,
            Json::Object(vec![
                ("run".into(), Json::Int(1)),
                ("run".into(), Json::Int(2))
            ])
        );
    }

    #[test]
    fn a_comment_that_never_ends_is_found() {
        assert_eq!(clean("{\n /* oops").err().map(|u| u.0), Some(3));
    }
}
