//! Names and labels people give rtlab (load specs, campaign, configuration
//! and load names, titles, filters), bounded once here, and column padding
//! that works for a cell of any length.
//!
//! `format!("{cell:<width$}")` panics ("Formatting argument out of range")
//! once `width` reaches 65,536, so a single long name stored in a run made
//! every table of that store fail. Tables pad with [`pad`] instead, and
//! names are refused at input beyond [`MAX_LABEL_CHARS`].

/// The longest name or label rtlab accepts from a user, in characters: far
/// above any real load spec or campaign name, far below what breaks a table.
pub const MAX_LABEL_CHARS: usize = 1024;

/// A name or label longer than [`MAX_LABEL_CHARS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is {chars} characters long; at most {max} are accepted", max = MAX_LABEL_CHARS)]
pub struct LabelTooLong {
    /// What was given, e.g. `--load` or `campaign name`.
    pub field: String,
    pub chars: usize,
}

/// Refuses a name or label longer than [`MAX_LABEL_CHARS`]; `field` names
/// the flag or the file's key it came from.
pub fn check_label(field: &str, value: &str) -> Result<(), LabelTooLong> {
    let chars = value.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(LabelTooLong {
            field: field.to_string(),
            chars,
        });
    }
    Ok(())
}

/// A file that should be text but is not UTF-8: where the first byte that
/// is not is, so the user can find it (`std::fs::read_to_string` says only
/// "stream did not contain valid UTF-8").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not UTF-8 text: byte 0x{byte:02x} at byte offset {offset} (line {line}, byte {column} of the line) \
     is not valid UTF-8; save the file as UTF-8"
)]
pub struct NotUtf8 {
    /// The first invalid byte (or the first byte of a sequence cut short by the end).
    pub byte: u8,
    /// 0-based offset of that byte in the file.
    pub offset: usize,
    /// 1-based line, and 1-based byte in that line.
    pub line: usize,
    pub column: usize,
}

/// `bytes` as text, or where its first invalid UTF-8 byte is.
pub fn utf8_text(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let offset = e.utf8_error().valid_up_to();
        let before = &bytes[..offset];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        NotUtf8 {
            byte: bytes[offset],
            offset,
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column: offset - line_start + 1,
        }
    })
}

/// Where a cell's text sits in its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// `cell` padded with spaces to `width` characters: `{:<width$}` or
/// `{:>width$}` without their limit on the width. A cell already as wide
/// or wider is returned as it is.
pub fn pad(cell: &str, width: usize, align: Align) -> String {
    let fill = width.saturating_sub(cell.chars().count());
    let mut out = String::with_capacity(cell.len() + fill);
    if align == Align::Right {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out.push_str(cell);
    if align == Align::Left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_like_format_does() {
        assert_eq!(pad("ab", 5, Align::Left), format!("{:<5}", "ab"));
        assert_eq!(pad("ab", 5, Align::Right), format!("{:>5}", "ab"));
        assert_eq!(pad("µs", 4, Align::Right), format!("{:>4}", "µs"));
        assert_eq!(pad("abcdef", 3, Align::Left), "abcdef");
    }

    #[test]
    fn pads_beyond_what_format_allows() {
        let long = "x".repeat(70_000);
        assert_eq!(pad(&long, 70_001, Align::Left).len(), 70_001);
        assert_eq!(pad("a", 70_000, Align::Right).len(), 70_000);
    }

    #[test]
    fn non_utf8_is_located() {
        assert_eq!(utf8_text(b"a = 1\n".to_vec()).unwrap(), "a = 1\n");
        let err = utf8_text(b"a = 1\nname = \"\xff\"\n".to_vec()).unwrap_err();
        assert_eq!(
            (err.byte, err.offset, err.line, err.column),
            (0xff, 14, 2, 9)
        );
        // A sequence cut short by the end of the file.
        let err = utf8_text("é".as_bytes()[..1].to_vec()).unwrap_err();
        assert_eq!((err.offset, err.line, err.column), (0, 1, 1));
        assert!(err
            .to_string()
            .contains("byte offset 0 (line 1, byte 1 of the line)"));
    }

    #[test]
    fn long_labels_are_refused_naming_the_field() {
        assert!(check_label("--load", &"x".repeat(MAX_LABEL_CHARS)).is_ok());
        let err = check_label("--load", &"x".repeat(70_000)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--load is 70000 characters long; at most 1024 are accepted"
        );
    }
}
