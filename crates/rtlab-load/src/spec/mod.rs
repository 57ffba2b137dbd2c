//! What load to run and how hard: `vm`, `vm:workers=4,bytes=256M`,
//! `fswalk:no-stat`, `cmd:"stress-ng --cpu 2"`, and lists of them for
//! `--load vm,io`.
//!
//! Grammar of a list (see docs/load.md):
//!
//! ```text
//! list   := "" | "idle" | item ("," item)*
//! item   := NAME | NAME ":" param | "cmd:" QUOTED | "cmd:" REST-OF-STRING | param
//! param  := KEY "=" VALUE | FLAG          (continues the load before it)
//! ```
//!
//! A comma-separated token that does not start with a load's name continues
//! the parameters of the load before it, so `vm:workers=4,bytes=256M,io` is
//! a vm load with two parameters followed by an io load. Values may be
//! quoted (`dir="/a,b"`). `cmd:"…"` is quoted and may hold commas; an
//! unquoted `cmd:` takes the rest of the string.

pub(crate) mod defaults;
mod kind;
mod load_spec;
mod size;

use kind::PARAM_ORDER;
use size::format_duration_exact;
use std::fmt;
use std::str::FromStr;

pub use kind::{LoadKind, Param, KNOWN_LOADS, LOAD_KINDS};
pub use load_spec::{default_temp_base, LoadParams, LoadSpec, LoadSpecError};
pub use size::{format_size, human_bytes, parse_size};

// The grammar's side of a parameter, next to the `Display` that uses it.
impl LoadParams {
    /// The value as a canonical spec writes it; None when not set.
    fn value_text(&self, param: Param) -> Option<String> {
        Some(match param {
            Param::Workers => self.workers?.to_string(),
            Param::Groups => self.groups?.to_string(),
            Param::Fds => self.fds?.to_string(),
            Param::Bytes => format_size(self.bytes?),
            Param::Block => format_size(self.block?),
            Param::Size => format_size(self.size?),
            Param::Timers => self.timers?.to_string(),
            Param::Interval => format_duration_exact(self.interval_ns?),
            Param::Dir => quote_if_needed(&self.dir.as_ref()?.to_string_lossy()),
            Param::Root => quote_if_needed(&self.root.as_ref()?.to_string_lossy()),
            Param::NoStat => return self.no_stat.then(String::new),
            Param::Nice => self.nice?.to_string(),
        })
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.kind == LoadKind::Cmd {
            parts.push(quote(self.params.command.as_deref().unwrap_or("")));
        }
        for param in PARAM_ORDER {
            if let Some(value) = self.params.value_text(param) {
                parts.push(if param.is_flag() {
                    param.key().to_string()
                } else {
                    format!("{}={value}", param.key())
                });
            }
        }
        if parts.is_empty() {
            f.write_str(self.kind.name())
        } else {
            write!(f, "{}:{}", self.kind.name(), parts.join(","))
        }
    }
}

impl FromStr for LoadSpec {
    type Err = LoadSpecError;
    /// Exactly one load (`vm:workers=4,bytes=256M`); see [`parse_list`] for lists.
    fn from_str(s: &str) -> Result<LoadSpec, LoadSpecError> {
        let mut list = parse_list(s)?;
        match list.len() {
            1 => Ok(list.remove(0)),
            0 => Err(LoadSpecError(format!(
                "'{s}' is no load (expected one of {KNOWN_LOADS})"
            ))),
            n => Err(LoadSpecError(format!(
                "'{s}' is {n} loads where one was expected"
            ))),
        }
    }
}

/// A list of loads in the spec grammar, e.g. for `--load vm,io`; `""` and
/// `idle` are no load (an empty list).
pub fn parse_list(s: &str) -> Result<Vec<LoadSpec>, LoadSpecError> {
    let trimmed = s.trim();
    if trimmed.is_empty() || trimmed == "idle" {
        return Ok(Vec::new());
    }
    let tokens = tokenize(trimmed).map_err(|why| LoadSpecError(format!("'{s}': {why}")))?;
    let mut specs: Vec<LoadSpec> = Vec::new();
    for token in tokens {
        let token = token.trim();
        if token.is_empty() {
            return Err(LoadSpecError(format!(
                "'{s}': empty item between commas (known loads: {KNOWN_LOADS})"
            )));
        }
        let (head, rest) = match token.split_once(':') {
            Some((h, r)) => (h.trim(), Some(r)),
            None => (token, None),
        };
        if head == "idle" {
            return Err(LoadSpecError(format!(
                "'{s}': idle means no load and cannot be combined with other loads"
            )));
        }
        if let Some(kind) = LoadKind::from_name(head) {
            let mut spec = LoadSpec::new(kind);
            match (kind, rest) {
                (LoadKind::Cmd, None) => {
                    return Err(LoadSpecError(format!(
                        "'{s}': cmd needs a command: cmd:\"stress-ng --cpu 2\""
                    )))
                }
                (LoadKind::Cmd, Some(command)) => {
                    let command = unquote(command.trim())
                        .map_err(|why| LoadSpecError(format!("'{s}': cmd: {why}")))?;
                    spec.params.command = Some(command);
                }
                (_, Some(param)) => set_param_token(&mut spec, param, s)?,
                (_, None) => {}
            }
            specs.push(spec);
            continue;
        }
        // Not a load's name: a parameter of the load before it.
        let key = token.split_once('=').map_or(token, |(k, _)| k).trim();
        let looks_like_param = token.contains('=') || Param::from_key(key).is_some();
        match specs.last_mut() {
            Some(previous) if looks_like_param => set_param_token(previous, token, s)?,
            Some(previous) => {
                return Err(LoadSpecError(format!(
                    "'{s}': unknown load '{token}' (known loads: {KNOWN_LOADS}; parameters of {} are {})",
                    previous.kind,
                    previous.kind.params_list()
                )))
            }
            None if looks_like_param => {
                return Err(LoadSpecError(format!(
                    "'{s}': '{token}' is a parameter but no load comes before it (write e.g. vm:{token}; known loads: {KNOWN_LOADS})"
                )))
            }
            None => {
                return Err(LoadSpecError(format!(
                    "'{s}': unknown load '{head}' (known loads: {KNOWN_LOADS})"
                )))
            }
        }
    }
    for spec in &specs {
        spec.validate()
            .map_err(|e| LoadSpecError(format!("'{s}': {e}")))?;
    }
    Ok(specs)
}

/// The canonical text of a list of loads (`vm:workers=4,io`); parses back
/// with [`parse_list`]. An empty list is `idle`.
pub fn format_list(specs: &[LoadSpec]) -> String {
    if specs.is_empty() {
        return "idle".into();
    }
    specs
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn set_param_token(spec: &mut LoadSpec, token: &str, whole: &str) -> Result<(), LoadSpecError> {
    let (key, value) = match token.split_once('=') {
        Some((k, v)) => (
            k.trim(),
            Some(
                unquote(v.trim())
                    .map_err(|why| LoadSpecError(format!("'{whole}': {}: {why}", k.trim())))?,
            ),
        ),
        None => (token.trim(), None),
    };
    spec.set_param(key, value.as_deref())
        .map_err(|e| LoadSpecError(format!("'{whole}': {e}")))
}

/// Splits at commas outside quotes; an unquoted `cmd:` takes the rest.
fn tokenize(s: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    loop {
        let start = i;
        // Looked at in place: copying the rest for every token made a spec
        // of n commas cost n² (137 s for 70,000 in a debug build).
        let skip_blank = |mut j: usize| {
            while chars.get(j).is_some_and(|c| c.is_whitespace()) {
                j += 1;
            }
            j
        };
        let word = skip_blank(i);
        if chars
            .get(word..word + 4)
            .is_some_and(|w| w == ['c', 'm', 'd', ':'])
        {
            let after = skip_blank(word + 4);
            if !matches!(chars.get(after), Some('"' | '\'')) {
                tokens.push(chars[i..].iter().collect());
                return Ok(tokens);
            }
        }
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some('"') if c == '\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c == ',' => break,
                None => {}
            }
            i += 1;
        }
        if let Some(q) = quote {
            return Err(format!(
                "unterminated {q} quote in '{}'",
                chars[start..].iter().collect::<String>()
            ));
        }
        tokens.push(chars[start..i.min(chars.len())].iter().collect());
        if i >= chars.len() {
            return Ok(tokens);
        }
        i += 1; // the comma
    }
}

/// `"a \"b\""` → `a "b"`, `'x'` → `x`, anything else as it is. Text after
/// the closing quote is an error.
fn unquote(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let quote = match chars.next() {
        Some(q @ ('"' | '\'')) => q,
        _ => return Ok(s.to_string()),
    };
    let mut out = String::new();
    while let Some(c) = chars.next() {
        if quote == '"' && c == '\\' {
            match chars.next() {
                Some(e) => out.push(e),
                None => return Err(format!("unterminated \" quote in {s}")),
            }
        } else if c == quote {
            let after: String = chars.collect();
            if !after.trim().is_empty() {
                return Err(format!(
                    "unexpected '{}' after the closing quote in {s} (separate items with commas)",
                    after.trim()
                ));
            }
            return Ok(out);
        } else {
            out.push(c);
        }
    }
    Err(format!("unterminated {quote} quote in {s}"))
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn quote_if_needed(s: &str) -> String {
    let needs = s.is_empty()
        || s.contains([',', '"', '\'', '\\'])
        || s.trim() != s
        || s.starts_with(|c: char| c.is_whitespace());
    if needs {
        quote(s)
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn one(s: &str) -> LoadSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn names_parse_alone() {
        for kind in LOAD_KINDS {
            if kind == LoadKind::Cmd {
                continue;
            }
            let spec = one(kind.name());
            assert_eq!(spec, LoadSpec::new(kind));
            assert_eq!(spec.name(), kind.name());
            assert_eq!(spec.to_string(), kind.name());
        }
    }

    #[test]
    fn parameters_parse() {
        let vm = one("vm:workers=4,bytes=256M");
        assert_eq!(vm.params.workers, Some(4));
        assert_eq!(vm.params.bytes, Some(256 << 20));
        assert_eq!(vm.to_string(), "vm:workers=4,bytes=256M");
        let fs = one("fswalk:no-stat");
        assert!(fs.params.no_stat);
        assert_eq!(fs.to_string(), "fswalk:no-stat");
        let t = one("timers:interval=250us,timers=4");
        assert_eq!(t.params.interval_ns, Some(250_000));
        assert_eq!(t.to_string(), "timers:timers=4,interval=250us");
        let io = one("io:dir=\"/tmp/a,b\",bytes=1.5M,block=4K");
        assert_eq!(io.params.dir, Some(PathBuf::from("/tmp/a,b")));
        assert_eq!(io.params.bytes, Some(1536 << 10));
        assert_eq!(io.to_string(), "io:bytes=1536K,block=4K,dir=\"/tmp/a,b\"");
        assert_eq!(one("cpu:nice=-5").params.nice, Some(-5));
    }

    #[test]
    fn commands_quoted_and_unquoted() {
        let quoted = one("cmd:\"stress-ng --cpu 2\"");
        assert_eq!(quoted.params.command.as_deref(), Some("stress-ng --cpu 2"));
        assert_eq!(quoted.to_string(), "cmd:\"stress-ng --cpu 2\"");
        let bare = one("cmd:stress-ng --cpu 2");
        assert_eq!(bare, quoted);
        let with_comma = parse_list("cmd:\"echo a,b\",io").unwrap();
        assert_eq!(with_comma.len(), 2);
        assert_eq!(with_comma[0].params.command.as_deref(), Some("echo a,b"));
        assert_eq!(with_comma[1], LoadSpec::new(LoadKind::Io));
        let rest = parse_list("io,cmd:sh -c 'x,y',z").unwrap();
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[1].params.command.as_deref(), Some("sh -c 'x,y',z"));
        let escaped = one(r#"cmd:"echo \"hi\" \\ there""#);
        assert_eq!(
            escaped.params.command.as_deref(),
            Some(r#"echo "hi" \ there"#)
        );
        let niced = parse_list("cmd:'sleep 1',nice=5").unwrap();
        assert_eq!(niced[0].params.nice, Some(5));
        assert_eq!(niced[0].to_string(), "cmd:\"sleep 1\",nice=5");
    }

    #[test]
    fn lists_continue_parameters() {
        let list = parse_list("vm:workers=4,bytes=256M,io").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].params.workers, Some(4));
        assert_eq!(list[0].params.bytes, Some(256 << 20));
        assert_eq!(list[1].kind, LoadKind::Io);
        let list = parse_list(" vm , io , fswalk:root=/usr,no-stat ").unwrap();
        assert_eq!(list.len(), 3);
        assert!(list[2].params.no_stat);
        assert_eq!(list[2].params.root, Some(PathBuf::from("/usr")));
        // A bare load followed by a parameter takes it too.
        assert_eq!(
            parse_list("vm,workers=3").unwrap()[0].params.workers,
            Some(3)
        );
    }

    #[test]
    fn idle_and_empty_are_no_load() {
        assert!(parse_list("").unwrap().is_empty());
        assert!(parse_list("  idle ").unwrap().is_empty());
        assert_eq!(format_list(&[]), "idle");
        assert!(parse_list("idle,vm").unwrap_err().0.contains("idle"));
    }

    #[test]
    fn display_round_trips() {
        let cases = [
            "cpu",
            "cpu:workers=3,nice=10",
            "vm:workers=40,bytes=256M",
            "vm:bytes=4097",
            "io:workers=2,bytes=100M,block=1000K,dir=/var/tmp",
            "fswalk:workers=2,root=\"/a b,c\",no-stat",
            "net:workers=2,size=1472",
            "timers:workers=1,timers=64,interval=1500us",
            "msg:groups=2,fds=10,size=1K",
            "procfs:workers=2",
            "dohell:no-stat",
            "dohell:dir=/mnt/disk,root=/usr",
            "cmd:\"stress-ng --cpu 2 --vm 1, really\"",
            "cmd:\"echo \\\"quoted\\\"\",nice=3",
        ];
        for case in cases {
            let spec = one(case);
            assert_eq!(spec.to_string(), case);
            assert_eq!(one(&spec.to_string()), spec);
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<LoadSpec>(&json).unwrap(), spec);
        }
        let list = parse_list("vm:workers=4,bytes=256M,io,cmd:\"a,b\",cpu").unwrap();
        assert_eq!(parse_list(&format_list(&list)).unwrap(), list);
        // Resolved specs round-trip as well.
        for kind in LOAD_KINDS {
            let spec = if kind == LoadKind::Cmd {
                LoadSpec::command("true")
            } else {
                LoadSpec::new(kind)
            };
            let resolved = spec.resolved();
            resolved.validate().unwrap();
            assert_eq!(one(&resolved.to_string()), resolved);
        }
    }

    #[test]
    fn defaults_resolve() {
        let online = rtlab_core::cpuset::CpuSet::online().len() as u32;
        assert_eq!(one("cpu").resolved().params.workers, Some(online));
        let vm = one("vm").resolved();
        assert_eq!(vm.to_string(), "vm:workers=2,bytes=256M");
        let io = one("io:bytes=512K").resolved();
        assert_eq!(io.params.block, Some(512 << 10));
        assert!(io.params.dir.is_some());
        assert_eq!(
            one("msg").resolved().to_string(),
            "msg:groups=1,fds=20,size=100"
        );
        // Explicit values are kept.
        assert_eq!(one("cpu:workers=7").resolved().params.workers, Some(7));
    }

    fn err(s: &str) -> String {
        parse_list(s).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_token_and_what_was_expected() {
        let e = err("vm,cpuu");
        assert!(
            e.contains("'cpuu'") && e.contains("known loads") && e.contains("fswalk"),
            "{e}"
        );
        let e = err("stress");
        assert!(
            e.contains("unknown load 'stress'") && e.contains("cmd:"),
            "{e}"
        );
        let e = err("vm:dir=/tmp");
        assert!(
            e.contains("'dir'") && e.contains("vm takes workers, bytes, nice"),
            "{e}"
        );
        let e = err("vm:bytes=lots");
        assert!(e.contains("bytes=lots") && e.contains("256M"), "{e}");
        let e = err("cpu:workers=0");
        assert!(e.contains("workers=0") && e.contains("1-4096"), "{e}");
        let e = err("cpu:workers=two");
        assert!(e.contains("workers=two"), "{e}");
        let e = err("timers:interval=100");
        assert!(e.contains("interval") && e.contains("unit"), "{e}");
        let e = err("workers=4");
        assert!(e.contains("no load comes before it"), "{e}");
        let e = err("cmd");
        assert!(e.contains("cmd needs a command"), "{e}");
        let e = err("cmd:\"unterminated");
        assert!(e.contains("unterminated"), "{e}");
        let e = err("cmd:\"a\"b");
        assert!(e.contains("after the closing quote"), "{e}");
        let e = err("vm,,io");
        assert!(e.contains("empty item"), "{e}");
        let e = err("fswalk:no-stat=1");
        assert!(e.contains("flag"), "{e}");
        let e = err("vm:workers=2,workers=3");
        assert!(e.contains("twice"), "{e}");
        let e = err("io:bytes=64K,block=1M");
        assert!(e.contains("larger than the file"), "{e}");
        let e = err("net:size=100K");
        assert!(e.contains("65507"), "{e}");
        let e = err("cpu:nice=30");
        assert!(e.contains("nice=30"), "{e}");
        let e = "vm,io".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(e.contains("2 loads"), "{e}");
        let e = "idle".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(e.contains("no load"), "{e}");
    }

    #[test]
    fn json_specs_are_validated() {
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"cpu","bytes":4096}"#).unwrap();
        assert!(spec
            .validate()
            .unwrap_err()
            .0
            .contains("no parameter 'bytes'"));
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"cmd"}"#).unwrap();
        assert!(spec.validate().is_err());
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"vm","workers":3}"#).unwrap();
        assert_eq!(spec.to_string(), "vm:workers=3");
    }
}
