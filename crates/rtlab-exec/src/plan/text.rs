//! The text form of a plan (docs/plan-format.md):
//!
//! ```text
//! rtlab-plan 1                  # magic and version
//! module tick mark              # module NAME KIND [key=value ...]
//! module tx udp dest=127.0.0.1:7700 size=64
//! repeat 10ms                   # optional
//! events
//! 0us     tick
//! 150us   tx   hex:0102030405   # OFFSET MODULE [DATA] [flags=N]
//! 1.5ms   tick "hello"
//! ```
//!
//! Offsets need not be sorted here: [`parse`] reads them as written and
//! [`super::check`] reports the ones out of order (an error there).

use super::model::{
    Event, EventSource, ModuleDecl, PlanError, PlanHeader, DATA_BYTES, MAX_MODULES, MAX_NAME_BYTES,
};
use crate::module;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The first line of every text plan (followed by the version).
pub const TEXT_MAGIC: &str = "rtlab-plan";
/// The version this code reads and writes.
pub const TEXT_VERSION: u32 = 1;

/// Reads a text plan. `file_name` names the file in errors.
pub fn parse(text: &str, file_name: &str) -> Result<(PlanHeader, Vec<Event>), PlanError> {
    parse_with_lines(text, file_name).map(|(header, events, _)| (header, events))
}

/// [`parse`], also returning the 1-based line of each event.
pub fn parse_with_lines(
    text: &str,
    file_name: &str,
) -> Result<(PlanHeader, Vec<Event>, Vec<usize>), PlanError> {
    let mut header = PlanHeader::default();
    let mut events = Vec::new();
    let mut lines = Vec::new();
    let mut seen_magic = false;
    let mut in_events = false;
    let mut repeat_line = 0;
    let mut ids: HashMap<String, u16> = HashMap::new();

    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let err = |message: String| PlanError::at(file_name, line, message);
        let tokens = tokenize(raw).map_err(err)?;
        let Some(first) = tokens.first() else {
            continue;
        };
        if !seen_magic {
            if first.text != TEXT_MAGIC {
                return Err(err(format!(
                    "missing header: expected '{TEXT_MAGIC} {TEXT_VERSION}' as the first line, found '{}'",
                    first.text
                )));
            }
            match tokens.get(1).map(|t| t.text.as_str()) {
                Some("1") if tokens.len() == 2 => {}
                Some(v) if tokens.len() == 2 => {
                    return Err(err(format!(
                        "unsupported plan version '{v}' (this rtlab reads version {TEXT_VERSION})"
                    )))
                }
                _ => {
                    return Err(err(format!(
                        "expected '{TEXT_MAGIC} {TEXT_VERSION}' (magic and version)"
                    )))
                }
            }
            seen_magic = true;
            continue;
        }
        if !in_events {
            match (first.text.as_str(), first.quoted) {
                ("module", false) => {
                    let decl = parse_module(&tokens, &header, &ids).map_err(err)?;
                    ids.insert(decl.name.clone(), decl.id);
                    header.modules.push(decl);
                }
                ("repeat", false) => {
                    if header.repeat_ns.is_some() {
                        return Err(err(format!(
                            "a second 'repeat' (the first is on line {repeat_line})"
                        )));
                    }
                    let [_, period] = tokens.as_slice() else {
                        return Err(err("expected 'repeat PERIOD', e.g. 'repeat 10ms'".into()));
                    };
                    let ns = parse_offset(&period.text).map_err(err)?;
                    if ns == 0 {
                        return Err(err("the repeat period must be longer than 0".into()));
                    }
                    header.repeat_ns = Some(ns);
                    repeat_line = line;
                }
                ("events", false) if tokens.len() == 1 => in_events = true,
                _ => {
                    return Err(err(format!(
                        "expected 'module NAME KIND [key=value ...]', 'repeat PERIOD' or 'events', found '{}'",
                        first.text
                    )))
                }
            }
            continue;
        }
        let event = parse_event(&tokens, &header, &ids).map_err(err)?;
        events.push(event);
        lines.push(line);
    }
    if !seen_magic {
        return Err(PlanError::at(
            file_name,
            1,
            format!("missing header: the file is empty, expected '{TEXT_MAGIC} {TEXT_VERSION}'"),
        ));
    }
    // A repeat period not longer than the last offset is a finding of
    // `plan check` (`repeat-too-short`, at the last offset's line), as for
    // a binary plan: the reader refuses only what does not read.
    Ok((header, events, lines))
}

/// A word of a line: bare, or a quoted string (unescaped here).
struct Token {
    text: String,
    quoted: bool,
}

/// Splits a line into words; `#` outside quotes starts a comment.
fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&c) = chars.peek() else { break };
        if c == '#' {
            break;
        }
        if c == '"' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    None => return Err("unterminated string: expected a closing '\"'".into()),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(e @ ('"' | '\\')) => text.push(e),
                        Some(other) => {
                            return Err(format!(
                                "unknown escape '\\{other}' in a string (only \\\" and \\\\)"
                            ))
                        }
                        None => return Err("unterminated string: expected a closing '\"'".into()),
                    },
                    Some(other) => text.push(other),
                }
            }
            if chars
                .peek()
                .is_some_and(|c| !c.is_whitespace() && *c != '#')
            {
                return Err("expected a space after the closing '\"'".into());
            }
            tokens.push(Token { text, quoted: true });
            continue;
        }
        let mut text = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '#') {
            if c == '"' {
                return Err(format!(
                    "unexpected '\"' inside the word '{text}\"': strings stand alone, e.g. \"text\""
                ));
            }
            text.push(c);
        }
        tokens.push(Token {
            text,
            quoted: false,
        });
    }
    Ok(tokens)
}

/// Whether `name` may name a module, a kind or a setting.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn parse_module(
    tokens: &[Token],
    header: &PlanHeader,
    ids: &HashMap<String, u16>,
) -> Result<ModuleDecl, String> {
    let (Some(name), Some(kind)) = (tokens.get(1), tokens.get(2)) else {
        return Err("expected 'module NAME KIND [key=value ...]', e.g. 'module tick mark'".into());
    };
    if name.quoted || !valid_name(&name.text) || name.text.starts_with('@') {
        return Err(format!(
            "bad module name '{}': expected 1-{MAX_NAME_BYTES} letters, digits, '_', '-' or '.'",
            name.text
        ));
    }
    if let Some(other) = ids.get(&name.text) {
        return Err(format!(
            "duplicate module name '{}' (already module {other})",
            name.text
        ));
    }
    if header.modules.len() >= MAX_MODULES {
        return Err(format!(
            "more than {MAX_MODULES} modules (module ids are 16 bits)"
        ));
    }
    if kind.quoted || !valid_name(&kind.text) {
        return Err(format!(
            "bad module kind '{}': expected one of {}",
            kind.text,
            module::KINDS.join(", ")
        ));
    }
    let mut settings: Vec<(String, String)> = Vec::new();
    for token in &tokens[3..] {
        let Some((key, value)) = token.text.split_once('=').filter(|_| !token.quoted) else {
            return Err(format!(
                "bad setting '{}': expected key=value, e.g. dest=127.0.0.1:7700",
                token.text
            ));
        };
        if !valid_name(key) || value.is_empty() {
            return Err(format!(
                "bad setting '{}': expected key=value with a name and a non-empty value",
                token.text
            ));
        }
        if settings.iter().any(|(k, _)| k == key) {
            return Err(format!("setting '{key}' given twice"));
        }
        settings.push((key.to_string(), value.to_string()));
    }
    let decl = ModuleDecl {
        id: header.modules.len() as u16,
        name: name.text.clone(),
        kind: kind.text.clone(),
        settings,
    };
    module::validate(&decl)?;
    Ok(decl)
}

fn parse_offset(text: &str) -> Result<u64, String> {
    rtlab_core::units::parse_duration_ns(text).map_err(|e| format!("bad offset: {e}"))
}

fn parse_event(
    tokens: &[Token],
    header: &PlanHeader,
    ids: &HashMap<String, u16>,
) -> Result<Event, String> {
    let offset = &tokens[0];
    if offset.quoted {
        return Err("expected 'OFFSET MODULE [DATA] [flags=N]', found a string".into());
    }
    let offset_ns = parse_offset(&offset.text)?;
    let Some(name) = tokens.get(1) else {
        return Err(format!(
            "expected a module name after the offset '{}' (OFFSET MODULE [DATA])",
            offset.text
        ));
    };
    let Some(&id) = ids.get(&name.text).filter(|_| !name.quoted) else {
        let mut known: Vec<&str> = header
            .modules
            .iter()
            .take(10)
            .map(|m| m.name.as_str())
            .collect();
        if header.modules.len() > 10 {
            known.push("...");
        }
        return Err(format!(
            "unknown module '{}' (declared: {})",
            name.text,
            if known.is_empty() {
                "none; declare one with 'module NAME KIND' before 'events'".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    let mut event = Event {
        offset_ns,
        module: id,
        flags: 0,
        data: [0; DATA_BYTES],
    };
    let mut rest = &tokens[2..];
    if let Some(data) = rest.first() {
        if data.quoted {
            event.data = text_data(&data.text)?;
            rest = &rest[1..];
        } else if let Some(hex) = data.text.strip_prefix("hex:") {
            event.data = hex_data(hex)?;
            rest = &rest[1..];
        }
    }
    if let Some(flags) = rest.first() {
        let Some(value) = flags.text.strip_prefix("flags=").filter(|_| !flags.quoted) else {
            return Err(format!(
                "unexpected '{}': expected data (hex:0102.. or \"text\") or flags=N",
                flags.text
            ));
        };
        let parsed = match value.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16),
            None => value.parse::<u16>(),
        };
        event.flags = parsed.map_err(|_| format!("bad flags '{value}': expected 0-65535"))?;
        rest = &rest[1..];
    }
    if let Some(extra) = rest.first() {
        return Err(format!(
            "unexpected '{}' after the event (OFFSET MODULE [DATA] [flags=N])",
            extra.text
        ));
    }
    Ok(event)
}

fn text_data(text: &str) -> Result<[u8; DATA_BYTES], String> {
    let bytes = text.as_bytes();
    if bytes.len() > DATA_BYTES {
        return Err(format!(
            "data too long: \"{text}\" is {} bytes, at most {DATA_BYTES}",
            bytes.len()
        ));
    }
    let mut data = [0; DATA_BYTES];
    data[..bytes.len()].copy_from_slice(bytes);
    Ok(data)
}

fn hex_data(hex: &str) -> Result<[u8; DATA_BYTES], String> {
    if hex.len() > 2 * DATA_BYTES {
        return Err(format!(
            "data too long: hex:{hex} has {} hex digits, at most {}",
            hex.len(),
            2 * DATA_BYTES
        ));
    }
    if hex.is_empty() || !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(format!(
            "bad data 'hex:{hex}': expected an even number (2-{}) of hex digits",
            2 * DATA_BYTES
        ));
    }
    let mut data = [0; DATA_BYTES];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).map_err(|_| "bad hex".to_string())?;
        data[i] = u8::from_str_radix(digits, 16).map_err(|_| format!("bad hex '{digits}'"))?;
    }
    Ok(data)
}

/// An offset in the largest unit that keeps it exact: `10ms`, `1500us`, `7ns`.
pub fn format_offset(ns: u64) -> String {
    for (scale, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns != 0 && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// Module data as the text form writes it: nothing for zeros, `"text"` for
/// printable ASCII followed by zeros, `hex:..` (trailing zeros dropped) else.
pub fn format_data(data: &[u8; DATA_BYTES]) -> Option<String> {
    let used = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    if used == 0 {
        return None;
    }
    let bytes = &data[..used];
    if bytes.iter().all(|b| (0x20..0x7f).contains(b)) {
        let mut out = String::from("\"");
        for &b in bytes {
            if b == b'"' || b == b'\\' {
                out.push('\\');
            }
            out.push(b as char);
        }
        out.push('"');
        return Some(out);
    }
    let mut out = String::from("hex:");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    Some(out)
}

/// Writes a plan as text that [`parse`] reads back identically. An event
/// for a module id outside the table is written as `@ID`, which [`parse`]
/// refuses (as `check` does).
pub fn write(header: &PlanHeader, events: &dyn EventSource) -> String {
    let mut out = String::new();
    write_header(header, &mut out);
    for index in 0..events.len() {
        write_event(header, &events.event(index), &mut out);
    }
    out
}

/// The header lines, up to and including `events`.
pub fn write_header(header: &PlanHeader, out: &mut String) {
    let _ = writeln!(out, "{TEXT_MAGIC} {TEXT_VERSION}");
    for m in &header.modules {
        let _ = write!(out, "module {} {}", m.name, m.kind);
        for (k, v) in &m.settings {
            let _ = write!(out, " {k}={v}");
        }
        out.push('\n');
    }
    if let Some(repeat) = header.repeat_ns {
        let _ = writeln!(out, "repeat {}", format_offset(repeat));
    }
    out.push_str("events\n");
}

/// One event line.
pub fn write_event(header: &PlanHeader, event: &Event, out: &mut String) {
    let _ = write!(out, "{:<10}", format_offset(event.offset_ns));
    match header.modules.get(event.module as usize) {
        Some(m) => {
            let _ = write!(out, " {}", m.name);
        }
        None => {
            let _ = write!(out, " @{}", event.module);
        }
    }
    if let Some(data) = format_data(&event.data) {
        let _ = write!(out, " {data}");
    }
    if event.flags != 0 {
        let _ = write!(out, " flags=0x{:x}", event.flags);
    }
    out.push('\n');
}

/// Module data as given on a command line: `hex:0102..` or plain text
/// (up to 12 bytes), zero padded.
pub fn data_arg(text: &str) -> Result<[u8; DATA_BYTES], String> {
    match text.strip_prefix("hex:") {
        Some(hex) => hex_data(hex),
        None => text_data(text),
    }
}
