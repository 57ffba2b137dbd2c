//! Where a value is in well-formed JSON text: enough of a scanner to walk
//! objects and arrays along a path, skipping everything else; and the line
//! and column of a byte offset, for any text file rtlab reads (a result's
//! JSON, a task set's TOML, an rt-app JSON file).

pub enum Step {
    Key(String),
    Index(usize),
}

/// The byte offset of the value at `path`, or of the deepest value on
/// the way that exists (the object a missing field belongs in).
pub fn locate(text: &str, path: &[Step]) -> usize {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    for step in path {
        let Some(found) = child(text, pos, step) else {
            return pos;
        };
        pos = found;
    }
    pos
}

/// The offset of the member `step` of the object or array at `pos`.
fn child(text: &str, pos: usize, step: &Step) -> Option<usize> {
    let b = text.as_bytes();
    match (step, b.get(pos)?) {
        (Step::Key(want), b'{') => {
            let mut at = skip_ws(b, pos + 1);
            while b.get(at) == Some(&b'"') {
                let end = string_end(b, at);
                let key: String = serde_json::from_str(text.get(at..end)?).ok()?;
                at = skip_ws(b, end);
                at = skip_ws(b, at + 1); // past ':'
                if key == *want {
                    return Some(at);
                }
                at = skip_ws(b, value_end(b, at));
                if b.get(at) == Some(&b',') {
                    at = skip_ws(b, at + 1);
                }
            }
            None
        }
        (Step::Index(want), b'[') => {
            let mut at = skip_ws(b, pos + 1);
            let mut index = 0;
            while at < b.len() && b[at] != b']' {
                if index == *want {
                    return Some(at);
                }
                at = skip_ws(b, value_end(b, at));
                if b.get(at) == Some(&b',') {
                    at = skip_ws(b, at + 1);
                }
                index += 1;
            }
            None
        }
        _ => None,
    }
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && b[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// Just past the closing quote of the string starting at `at`.
fn string_end(b: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Just past the value starting at `at`.
fn value_end(b: &[u8], at: usize) -> usize {
    match b.get(at) {
        Some(b'"') => string_end(b, at),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            i
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::{line_column, locate, Step};

    /// The scan finds a value past strings holding quotes, brackets and
    /// braces, and stops at the deepest part of a path that exists.
    #[test]
    fn locates_values_past_tricky_strings() {
        let text =
            "{\n  \"a\": \"x\\\"}]{[\",\n  \"b\\u0063\": [1, {\"k\": \"v\"},\n    {\"n\": 7}]\n}";
        let at = |path: &[Step]| line_column(text, locate(text, path));
        let key = |k: &str| Step::Key(k.into());
        assert_eq!(at(&[key("a")]), (2, 8));
        // An escaped key matches its unescaped name.
        assert_eq!(at(&[key("bc"), Step::Index(2), key("n")]), (4, 11));
        // `n` is not in element 1: the element itself.
        assert_eq!(at(&[key("bc"), Step::Index(1), key("n")]), (3, 18));
        assert_eq!(at(&[key("missing")]), (1, 1));
        assert_eq!(at(&[key("bc"), Step::Index(9)]), (3, 14));
    }
}
