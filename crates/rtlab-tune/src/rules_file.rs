//! The rules file (TOML, `/etc/rtlab/rules.toml` by default): one
//! `[[rule]]` table per selector and promotion. Every error names the file,
//! the line and the field.

use crate::identity::Vouch;
use crate::rule::{Field, Pattern, Promotion, Rule, Selector};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{DeadlineParams, Policy};
use serde::Deserialize;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub const DEFAULT_PATH: &str = "/etc/rtlab/rules.toml";

/// The largest rules file read (a rules file is a few hundred bytes).
const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    pub path: PathBuf,
    /// 1-based; None when the error is about the whole file.
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for RulesError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<Spanned<String>>,
    #[serde(rename = "match")]
    name_pattern: Option<Spanned<String>>,
    cmdline: Option<Spanned<String>>,
    #[serde(default)]
    exact: bool,
    threads: Option<Spanned<String>>,
    #[serde(default)]
    kernel: bool,
    policy: Spanned<String>,
    priority: Option<Spanned<i64>>,
    runtime: Option<Spanned<String>>,
    deadline: Option<Spanned<String>>,
    period: Option<Spanned<String>>,
    affinity: Option<Spanned<String>>,
    reset_on_fork: Option<bool>,
    #[serde(default)]
    allow_99: bool,
    exe: Option<Spanned<String>>,
    user: Option<Spanned<UserKey>>,
    unit: Option<Spanned<String>>,
    cgroup: Option<Spanned<String>>,
    #[serde(default)]
    allow_any_user: bool,
}

/// `user = "alarm"` or `user = 998`.
#[derive(Deserialize)]
#[serde(untagged)]
enum UserKey {
    Name(String),
    Uid(i64),
}

/// Reads and checks a rules file. As root, a file that anyone but root
/// could have written, or replaced, is refused: its rules would run with
/// root's power over every process.
pub fn load(path: &Path) -> Result<Vec<Rule>, RulesError> {
    let whole = |message: String| RulesError {
        path: path.to_path_buf(),
        line: None,
        field: None,
        message,
    };
    // The file is opened once and everything is checked on what was
    // opened: a path swapped after the check cannot slip in.
    let real = fs::canonicalize(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
    let file = fs::File::open(&real).map_err(|e| whole(format!("cannot read it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| whole(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(whole("is not a regular file".into()));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        check_owned_by_root(path, &meta).map_err(whole)?;
    }
    if meta.len() > MAX_BYTES {
        return Err(whole(format!(
            "is {} bytes; a rules file is at most {MAX_BYTES}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_BYTES + 1), &mut bytes)
        .map_err(|e| whole(format!("cannot read it: {e}")))?;
    let text = rtlab_core::text::utf8_text(bytes).map_err(|e| whole(e.to_string()))?;
    parse(&text, path)
}

/// Refuses a file that a user other than root could have written, or
/// replaced: the file itself, every directory crossed to reach it, and
/// every symlink on the way (with the directory it lives in) must belong to
/// root and be writable by no one else (a directory writable by others may
/// still hold it if it has the sticky bit, as /tmp does, and what it holds
/// belongs to root: then only root may rename or remove it). `path` is the
/// path as given, not resolved: a root-owned file reached through a link
/// someone else may swap is refused. See [`crate::trust`].
pub fn check_owned_by_root(path: &Path, meta: &fs::Metadata) -> Result<(), String> {
    crate::trust::check_root_only(path, Some(meta)).map_err(|reason| {
        if reason.starts_with("is owned by") || reason.starts_with("is writable by") {
            format!(
                "{reason}; as root rtlab only applies rules root wrote and no one else can change"
            )
        } else if reason.starts_with("is inside") || reason.starts_with("is reached through") {
            format!("{reason}; keep rules in a root-owned directory such as /etc/rtlab")
        } else {
            reason
        }
    })
}

/// Parses rules from TOML text; `path` names the source in errors.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Rule>, RulesError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let raw: RawFile = toml::from_str(text).map_err(|e| RulesError {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(s.start)),
        field: None,
        message: e.message().trim().to_string(),
    })?;
    let mut rules = Vec::with_capacity(raw.rule.len());
    for (index, spanned) in raw.rule.iter().enumerate() {
        let rule_line = line_of(spanned.span().start);
        let err = |span: Option<std::ops::Range<usize>>, field: &str, message: String| RulesError {
            path: path.to_path_buf(),
            line: Some(span.map_or(rule_line, |s| line_of(s.start))),
            field: Some(field.to_string()),
            message: format!("rule {}: {message}", index + 1),
        };
        let r = spanned.get_ref();

        let process = process_of(r, &err)?;
        let threads = r
            .threads
            .as_ref()
            .map(|t| {
                Pattern::new(t.get_ref(), Field::Name, r.exact)
                    .map_err(|m| err(Some(t.span()), "threads", m))
            })
            .transpose()?;

        let promotion = promotion_of(r, &err)?;
        let vouch = vouch_of(r, &err)?;

        let label = r
            .name
            .as_ref()
            .map(|n| n.get_ref().clone())
            .unwrap_or_else(|| process.source().to_string());
        rules.push(Rule {
            label,
            selector: Selector {
                process,
                threads,
                kernel: r.kernel,
                vouch,
            },
            promotion,
            origin: Some(format!("{}:{rule_line}", path.display())),
        });
    }
    Ok(rules)
}

/// Makes the error of a rule from the span of a key, the key and a message.
type ErrAt<'a> = dyn Fn(Option<std::ops::Range<usize>>, &str, String) -> RulesError + 'a;

/// Which processes a rule selects: by name (`match`) or command line.
fn process_of(r: &RawRule, err: &ErrAt<'_>) -> Result<Pattern, RulesError> {
    Ok(match (&r.name_pattern, &r.cmdline) {
        (Some(p), None) => Pattern::new(p.get_ref(), Field::Name, r.exact)
            .map_err(|m| err(Some(p.span()), "match", m))?,
        (None, Some(c)) => Pattern::new(c.get_ref(), Field::Cmdline, r.exact)
            .map_err(|m| err(Some(c.span()), "cmdline", m))?,
        (Some(_), Some(c)) => {
            return Err(err(
                Some(c.span()),
                "cmdline",
                "give either `match` (the process name) or `cmdline`, not both".into(),
            ))
        }
        (None, None) => {
            return Err(err(
                None,
                "match",
                "missing: say which processes, by name (`match = \"alarmd\"`) \
                 or command line (`cmdline = \"java .*Alarm\"`)"
                    .into(),
            ))
        }
    })
}

/// The scheduling a rule gives, checked as a whole; errors at the key.
fn promotion_of(r: &RawRule, err: &ErrAt<'_>) -> Result<Promotion, RulesError> {
    let policy: Policy = r
        .policy
        .get_ref()
        .parse()
        .map_err(|m| err(Some(r.policy.span()), "policy", m))?;
    let priority = match &r.priority {
        Some(p) => u32::try_from(*p.get_ref())
            .ok()
            .filter(|&v| v <= 99)
            .ok_or_else(|| {
                err(
                    Some(p.span()),
                    "priority",
                    format!("{} is not a priority (1 to 99)", p.get_ref()),
                )
            })?,
        None if policy.takes_priority() => {
            return Err(err(
                Some(r.policy.span()),
                "priority",
                format!("missing: {policy} needs a priority from 1 to 99"),
            ))
        }
        None => 0,
    };
    let deadline_params = deadline_of(r, err)?;
    let affinity = r
        .affinity
        .as_ref()
        .map(|a| {
            CpuSet::parse(a.get_ref()).map_err(|e| err(Some(a.span()), "affinity", e.to_string()))
        })
        .transpose()?;

    let promotion = Promotion {
        policy,
        priority,
        deadline: deadline_params,
        affinity,
        reset_on_fork: r.reset_on_fork,
    };
    promotion.validate(r.allow_99).map_err(|(field, message)| {
        let span = match field {
            "priority" => r.priority.as_ref().map(|p| p.span()),
            "affinity" => r.affinity.as_ref().map(|a| a.span()),
            "period" => r.period.as_ref().map(|p| p.span()),
            "deadline" => r.deadline.as_ref().or(r.runtime.as_ref()).map(|d| d.span()),
            "runtime" => r.runtime.as_ref().map(|d| d.span()),
            _ => None,
        }
        .or(Some(r.policy.span()));
        err(span, field, message)
    })?;
    Ok(promotion)
}

/// A rule's SCHED_DEADLINE parameters (`runtime`, `deadline`, `period`),
/// when it gives any.
fn deadline_of(r: &RawRule, err: &ErrAt<'_>) -> Result<Option<DeadlineParams>, RulesError> {
    let duration = |value: &Option<Spanned<String>>, field: &str| {
        value
            .as_ref()
            .map(|v| {
                rtlab_core::units::parse_duration_ns(v.get_ref())
                    .map_err(|e| err(Some(v.span()), field, e.to_string()))
            })
            .transpose()
    };
    let (runtime, deadline, period) = (
        duration(&r.runtime, "runtime")?,
        duration(&r.deadline, "deadline")?,
        duration(&r.period, "period")?,
    );
    Ok(match (runtime, deadline, period) {
        (None, None, None) => None,
        (Some(runtime_ns), deadline, Some(period_ns)) => Some(DeadlineParams {
            runtime_ns,
            // As chrt and the kernel do: a missing deadline is the period.
            deadline_ns: deadline.unwrap_or(period_ns),
            period_ns,
        }),
        _ => {
            let field = if runtime.is_none() {
                "runtime"
            } else {
                "period"
            };
            return Err(err(
                None,
                field,
                "the deadline policy needs `runtime` and `period` (and optionally `deadline`)"
                    .into(),
            ));
        }
    })
}

/// The identity keys of a rule (see [`Vouch::new`]), errors at the key.
fn vouch_of(r: &RawRule, err: &ErrAt<'_>) -> Result<Vouch, RulesError> {
    let user = r.user.as_ref().map(|u| match u.get_ref() {
        UserKey::Uid(n) => n.to_string(),
        UserKey::Name(name) => name.clone(),
    });
    Vouch::new(
        r.exe.as_ref().map(|e| e.get_ref().as_str()),
        user.as_deref(),
        r.unit.as_ref().map(|u| u.get_ref().as_str()),
        r.cgroup.as_ref().map(|c| c.get_ref().as_str()),
        r.allow_any_user,
    )
    .map_err(|(field, message)| {
        let span = match field {
            "exe" => r.exe.as_ref().map(|e| e.span()),
            "user" => r.user.as_ref().map(|u| u.span()),
            "unit" => r.unit.as_ref().map(|u| u.span()),
            "cgroup" => r.cgroup.as_ref().map(|c| c.span()),
            _ => None,
        };
        err(span, field, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Vec<Rule>, RulesError> {
        parse(text, Path::new("rules.toml"))
    }

    #[test]
    fn a_full_file_parses() {
        let rules = parse_str(
            r#"
# the alarm chain
[[rule]]
name = "alarm server"
match = "alarmd|msgd"
threads = "io-.*"
policy = "fifo"
priority = 50
affinity = "1"
reset_on_fork = true

[[rule]]
cmdline = "java .*Gateway"
policy = "rr"
priority = 20

[[rule]]
match = "ktimers/.*"
kernel = true
policy = "fifo"
priority = 51

[[rule]]
match = "planner"
policy = "deadline"
runtime = "2ms"
period = "10ms"
"#,
        )
        .unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(rules[0].label, "alarm server");
        assert_eq!(rules[0].origin.as_deref(), Some("rules.toml:3"));
        assert_eq!(rules[0].promotion.priority, 50);
        assert_eq!(rules[0].promotion.reset_on_fork, Some(true));
        assert_eq!(rules[1].selector.process.field(), Field::Cmdline);
        assert_eq!(rules[1].label, "java .*Gateway");
        assert!(rules[2].selector.kernel);
        let dl = rules[3].promotion.deadline.unwrap();
        assert_eq!(
            (dl.runtime_ns, dl.deadline_ns, dl.period_ns),
            (2_000_000, 10_000_000, 10_000_000)
        );
    }

    fn error(text: &str) -> RulesError {
        parse_str(text).unwrap_err()
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\npriority = 120\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(4), Some("priority")));
        assert!(
            e.to_string()
                .starts_with("rules.toml:4: field `priority`: rule 1:"),
            "{e}"
        );

        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"fast\"\npriority = 1\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("policy")));
        assert!(e.message.contains("'fast'"));

        let e = error("[[rule]]\nmatch = \"(a\"\npolicy = \"fifo\"\npriority = 1\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("match")));

        let e = error("\n[[rule]]\npolicy = \"fifo\"\npriority = 1\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("match")));

        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\n");
        assert_eq!(e.field.as_deref(), Some("priority"));

        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\npriority = 99\n");
        assert!(e.message.contains("--allow-99") && e.line == Some(4), "{e}");
        assert!(parse_str(
            "[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\npriority = 99\nallow_99 = true\n"
        )
        .is_ok());

        let e =
            error("[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\npriority = 5\naffinity = \"3-1\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(5), Some("affinity")));

        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"deadline\"\nruntime = \"2ms\"\n");
        assert_eq!(e.field.as_deref(), Some("period"));

        let e = error(
            "[[rule]]\nmatch = \"a\"\npolicy = \"deadline\"\nruntime = \"5ms\"\nperiod = \"1ms\"\n",
        );
        assert_eq!(e.field.as_deref(), Some("deadline"));

        let e = error("[[rule]]\nmatch = \"a\"\ncmdline = \"b\"\npolicy = \"other\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("cmdline")));
    }

    #[test]
    fn identity_keys_parse_and_errors_name_them() {
        let rules = parse_str(
            "[[rule]]\nmatch = \"a\"\nuser = \"root\"\nunit = \"a.service\"\n\
             cgroup = \"/rt.slice\"\npolicy = \"fifo\"\npriority = 5\n\
             [[rule]]\nmatch = \"b\"\nuser = 998\nallow_any_user = true\npolicy = \"other\"\n",
        )
        .unwrap();
        let v = &rules[0].selector.vouch;
        assert_eq!(
            (v.user, v.unit.as_deref(), v.cgroup.as_deref()),
            (Some(0), Some("a.service"), Some("/rt.slice"))
        );
        assert!(!v.names_no_identity() && !v.allow_any_user);
        assert_eq!(rules[1].selector.vouch.user, Some(998));
        assert!(rules[1].selector.vouch.allow_any_user);
        assert!(Vouch::default().names_no_identity());

        let e = error("[[rule]]\nmatch = \"a\"\nexe = \"bin/a\"\npolicy = \"other\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("exe")));
        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"other\"\nuser = \"no-such-user-x\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(4), Some("user")));
        let e = error("[[rule]]\nmatch = \"a\"\nunit = \"alarmd\"\npolicy = \"other\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("unit")));
        let e = error("[[rule]]\nmatch = \"a\"\ncgroup = \"rt.slice\"\npolicy = \"other\"\n");
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("cgroup")));
        // The root cgroup holds every process: it vouches for no one.
        for root in ["/", "//"] {
            let e = error(&format!(
                "[[rule]]\nmatch = \"a\"\ncgroup = \"{root}\"\npolicy = \"other\"\n"
            ));
            assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("cgroup")));
            assert!(e.to_string().contains("root cgroup"), "{e}");
        }
        let e = error("[[rule]]\nmatch = \"a\"\nexe = \"/no/such/alarmd\"\npolicy = \"other\"\n");
        assert_eq!(e.field.as_deref(), Some("exe"));
        if unsafe { libc::geteuid() } == 0 {
            // A directory only root can change is still no executable.
            let e = error("[[rule]]\nmatch = \"a\"\nexe = \"/usr\"\npolicy = \"other\"\n");
            assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("exe")));
            assert!(e.to_string().contains("not a file"), "{e}");
        }
    }

    #[test]
    fn toml_errors_name_the_line() {
        let e = error("[[rule]]\nmatch = \"a\"\npolicy = \"fifo\"\npriorty = 5\n");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("priorty"), "{e}");
        let e = error("[[rule]]\nmatch = \"a\npolicy = 1\n");
        assert_eq!(e.line, Some(2));
        let e = error("[rules]\n");
        assert!(e.message.contains("rules"), "{e}");
    }

    #[test]
    fn the_example_rules_file_parses() {
        let rules = parse_str(include_str!("../../../examples/rules.toml")).unwrap();
        assert_eq!(rules.len(), 3);
        assert!(rules[2].selector.kernel);
    }

    #[test]
    fn an_empty_file_has_no_rules() {
        assert!(parse_str("# nothing yet\n").unwrap().is_empty());
    }
}
