//! A settings struct's fields in the order its type declares them, which
//! is the order `campaign plan --json` prints them in: a trait object
//! cannot be serialized by serde directly, and serde_json's own map sorts
//! its keys.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// The fields of `settings` as its `Serialize` writes them, each with its
/// JSON. The JSON text keeps their order, and reading it back keeps it too
/// (values that are maps themselves would have their keys sorted: no
/// settings type has one).
pub(super) fn fields_of(settings: &impl Serialize) -> Vec<(String, Value)> {
    serde_json::to_string(settings)
        .and_then(|text| serde_json::from_str::<Fields>(&text))
        .map_or_else(|_| Vec::new(), |fields| fields.0)
}

/// The fields of one JSON object, in order.
struct Fields(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(InOrder)
    }
}
