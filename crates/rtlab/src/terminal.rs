//! The one way the commands print to standard output: [`out!`] and
//! [`put!`], which escape what they print ([`emit`]) and turn a closed
//! pipe into an error instead of a panic.

/// `println!` that returns a write error instead of panicking, so a
/// closed pipe (`rtlab tune show | head`) ends the command quietly, and
/// that escapes control and bidirectional characters (see [`emit`]).
macro_rules! out {
    () => {
        crate::terminal::emit("\n")?
    };
    ($($arg:tt)*) => {
        crate::terminal::emit(&format!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` through [`emit`], for text that ends its own lines (tables).
macro_rules! put {
    ($($arg:tt)*) => {
        crate::terminal::emit(&format!($($arg)*))?
    };
}

/// Writes `text` to standard output with every control character but
/// newline and tab, and every bidirectional or zero-width character,
/// escaped (`rtlab_core::result::terminal_text`): the one way the commands
/// print, so text from the store, a file or another process (a hostname, a
/// warning, a label, a thread's name) can never command the terminal. The
/// escape is JSON's, so JSON printed through it stays the same document.
pub(crate) fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    std::io::stdout().write_all(rtlab_core::result::terminal_text(text).as_bytes())
}

pub(crate) use out;
pub(crate) use put;
