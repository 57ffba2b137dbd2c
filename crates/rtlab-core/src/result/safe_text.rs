//! Text from elsewhere made safe to print: control and invisible
//! characters escaped.

/// `text` with control and other invisible characters escaped (`\u{1b}`),
/// cut to `max` characters: safe to print in a message.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() || is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as it may reach a terminal: every control character but newline
/// and tab, and every invisible format character (bidirectional overrides,
/// zero-width joiners), written as a `\uXXXX` escape; the rest as it is.
/// This is what rtlab's output writer applies to everything it prints, so
/// text from the store, a file or another process (a hostname, a warning,
/// a thread's name) never moves the cursor nor reorders a line. The escape
/// is also JSON's: applied to JSON output it leaves the same document.
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_invisible(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            // Every such character is in the Basic Multilingual Plane.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Format characters that change how the text around them shows
/// (bidirectional overrides, zero-width joiners).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_text_escapes_what_a_terminal_obeys() {
        assert!(matches!(
            terminal_text("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            terminal_text("a\u{1b}[2J\rb\u{9b}c\u{7f}\u{202e}d\u{200b}\n"),
            "a\\u001b[2J\\u000db\\u009bc\\u007f\\u202ed\\u200b\n"
        );
        // Applied to JSON it is the same document.
        let json = serde_json::to_string(&"x\u{9b}\u{202e}\u{1b}y").unwrap();
        let escaped = terminal_text(&json);
        assert!(!escaped.contains('\u{9b}') && !escaped.contains('\u{202e}'));
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, "x\u{9b}\u{202e}\u{1b}y");
    }

    #[test]
    fn printable_escapes_control_characters_and_cuts() {
        assert_eq!(printable("x\u{1b}[2J", 10), "x\\u{1b}[2J");
        assert_eq!(printable("a\u{202e}b", 10), "a\\u{202e}b");
        assert_eq!(printable("abcdef", 3), "abc…");
    }
}
