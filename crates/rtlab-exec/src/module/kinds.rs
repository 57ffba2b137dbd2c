//! The built-in kinds' names and settings, and the check of a declaration
//! against them (no side effects: no socket, no process).

use crate::plan::model::ModuleDecl;

/// The built-in module kinds.
pub const KINDS: &[&str] = &["mark", "udp", "wake", "signal", "traffic"];

/// The settings each kind takes (all others are refused).
pub fn settings_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "mark" => &[],
        "udp" => &["dest", "size"],
        "wake" => &["via"],
        "signal" => &["pid", "signal"],
        // A flow of a traffic plan (crate::traffic::format): where it is
        // sent, and where a recorded or imported flow came from.
        "traffic" => &["dest", "src"],
        _ => return None,
    })
}

/// Checks a declaration without side effects (no socket, no process):
/// the kind is known, every setting is one it takes, with a valid value.
pub fn validate(decl: &ModuleDecl) -> Result<(), String> {
    let Some(known) = settings_of(&decl.kind) else {
        return Err(format!(
            "module {}: unknown kind '{}' (known: {})",
            decl.name,
            decl.kind,
            KINDS.join(", ")
        ));
    };
    for (key, value) in &decl.settings {
        if !known.contains(&key.as_str()) {
            return Err(format!(
                "module {}: {} takes no setting '{key}' (it takes: {})",
                decl.name,
                decl.kind,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
        check_value(decl, key, value)?;
    }
    match decl.kind.as_str() {
        "udp" if decl.setting("dest").is_none() => {
            Err(format!("module {}: udp needs dest=ADDR:PORT", decl.name))
        }
        "signal" if decl.setting("pid").is_none() => {
            Err(format!("module {}: signal needs pid=N", decl.name))
        }
        _ => Ok(()),
    }
}

fn check_value(decl: &ModuleDecl, key: &str, value: &str) -> Result<(), String> {
    let bad = |expected: &str| {
        Err(format!(
            "module {}: {key}={value}: expected {expected}",
            decl.name
        ))
    };
    match (decl.kind.as_str(), key) {
        ("udp" | "traffic", "dest") => match value.parse::<std::net::SocketAddr>() {
            Ok(addr) if addr.port() != 0 => Ok(()),
            _ => bad("ADDR:PORT, e.g. 127.0.0.1:7700"),
        },
        ("traffic", "src") => match value.parse::<std::net::SocketAddr>() {
            Ok(_) => Ok(()),
            _ => bad("ADDR:PORT, e.g. 10.0.0.1:5000"),
        },
        ("udp", "size") => match value.parse::<usize>() {
            Ok(n) if (12..=65_507).contains(&n) => Ok(()),
            _ => bad("a datagram size of 12-65507 bytes"),
        },
        ("wake", "via") => match value {
            "futex" | "eventfd" => Ok(()),
            _ => bad("futex or eventfd"),
        },
        ("signal", "pid") => match value.parse::<i32>() {
            Ok(n) if n > 0 => Ok(()),
            _ => bad("a process id above 0"),
        },
        ("signal", "signal") => match signal_number(value) {
            Some(_) => Ok(()),
            None => bad("a signal name (USR1, USR2, RTMIN+N) or number"),
        },
        _ => Ok(()),
    }
}

/// A signal by name (`USR1`, `SIGUSR1`, `RTMIN+3`) or number.
pub fn signal_number(text: &str) -> Option<i32> {
    let name = text.strip_prefix("SIG").unwrap_or(text);
    let number = match name {
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "HUP" => libc::SIGHUP,
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "CONT" => libc::SIGCONT,
        _ => {
            if let Some(n) = name.strip_prefix("RTMIN+") {
                libc::SIGRTMIN().checked_add(n.parse::<u8>().ok().map(i32::from)?)?
            } else if name == "RTMIN" {
                libc::SIGRTMIN()
            } else {
                name.parse().ok()?
            }
        }
    };
    // 32 and 33 are glibc's own (below SIGRTMIN): not for users.
    let usable =
        (1..32).contains(&number) || (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&number);
    usable.then_some(number)
}
