//! Every example in every `--help` parses: the command line is walked from
//! `command()`, each line of a help text that runs `rtlab …` is split
//! with shell rules and given to the argument parser. And every command
//! a user can run shows at least one example of itself.

use rtlab::cli::command;

/// One command's examples: the path of the command whose help shows them
/// (`rtlab plan gen`) and each example line as written.
struct Help {
    path: String,
    examples: Vec<String>,
    leaf: bool,
}

/// Every visible command, depth first, with the example lines of its help.
fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<Help>) {
    let texts = [
        cmd.get_after_help(),
        cmd.get_after_long_help(),
        cmd.get_long_about(),
        cmd.get_before_help(),
        cmd.get_before_long_help(),
    ];
    let mut examples = Vec::new();
    for text in texts.into_iter().flatten() {
        for line in text.to_string().lines() {
            let line = line.trim();
            // `cyclictest … && rtlab import ct.json`: the rtlab command in it.
            if line.starts_with("rtlab ") || line == "rtlab" || line.contains("&& rtlab ") {
                examples.push(line.to_string());
            }
        }
    }
    let children: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();
    out.push(Help {
        path: path.to_string(),
        examples,
        leaf: children.is_empty(),
    });
    for child in children {
        walk(child, &format!("{path} {}", child.get_name()), out);
    }
}

/// Splits a line with POSIX shell quoting into words, cut into the commands
/// joined by `&&`, `||`, `|` or `;`; a `#` starting a word begins a comment
/// and a redirection (`> file`, `2>&1`) is dropped with its target.
fn shell_commands(line: &str) -> Result<Vec<Vec<String>>, String> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let mut redirect = false;
    let end_word = |word: &mut String,
                    in_word: &mut bool,
                    redirect: &mut bool,
                    commands: &mut Vec<Vec<String>>| {
        if *in_word {
            if *redirect {
                *redirect = false;
            } else {
                commands.last_mut().unwrap().push(std::mem::take(word));
            }
            word.clear();
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut redirect, &mut commands),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated \"".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated \"".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            '&' | '|' | ';' => {
                // `2>&1`: part of a redirection, not an operator.
                if c == '&' && word.ends_with('>') {
                    word.push(c);
                    continue;
                }
                end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
                if matches!(chars.peek(), Some('&' | '|')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            '>' | '<' => {
                // `2>` or `>`: the rest of this word and the next are the redirection.
                if in_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                } else {
                    end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
                }
                while matches!(chars.peek(), Some('>' | '&')) {
                    chars.next();
                }
                in_word = false;
                // The target may follow at once (`>out`) or after blanks.
                redirect = true;
                while matches!(chars.peek(), Some(' ')) {
                    chars.next();
                }
                if matches!(chars.peek(), Some(c) if c.is_ascii_digit()) {
                    // `2>&1`
                    chars.next();
                    redirect = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
    commands.retain(|c| !c.is_empty());
    Ok(commands)
}

/// The rtlab commands of an example line.
fn rtlab_commands(line: &str) -> Vec<Vec<String>> {
    shell_commands(line)
        .unwrap_or_else(|e| panic!("example `{line}` does not split: {e}"))
        .into_iter()
        .filter(|words| words[0] == "rtlab")
        .collect()
}

/// The subcommand path a parse ended in: `rtlab plan gen periodic`.
fn matched_path(matches: &clap::ArgMatches) -> String {
    let mut path = String::from("rtlab");
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(' ');
        path.push_str(name);
        m = sub;
    }
    path
}

fn helps() -> Vec<Help> {
    let mut out = Vec::new();
    walk(&command(), "rtlab", &mut out);
    out
}

#[test]
fn the_splitter_follows_shell_rules() {
    let split = |s| shell_commands(s).unwrap();
    assert_eq!(
        split("rtlab runs --json -   # every run"),
        vec![vec!["rtlab", "runs", "--json", "-"]]
    );
    assert_eq!(
        split("rtlab tune set 'alarmd|msgd' --policy fifo"),
        vec![vec![
            "rtlab",
            "tune",
            "set",
            "alarmd|msgd",
            "--policy",
            "fifo"
        ]]
    );
    assert_eq!(
        split("rtlab report last --format md > report.md"),
        vec![vec!["rtlab", "report", "last", "--format", "md"]]
    );
    assert_eq!(
        split("ct -h 1000 --json=ct.json && rtlab import ct.json 2>&1 | less"),
        vec![
            vec!["ct", "-h", "1000", "--json=ct.json"],
            vec!["rtlab", "import", "ct.json"],
            vec!["less"]
        ]
    );
    assert_eq!(
        split(r#"rtlab x --a "b c" d\ e"#),
        vec![vec!["rtlab", "x", "--a", "b c", "d e"]]
    );
}

#[test]
fn every_help_example_parses() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for help in helps() {
        for line in &help.examples {
            for words in rtlab_commands(line) {
                parsed += 1;
                if let Err(e) = command().try_get_matches_from(&words) {
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    failures.push(format!("`{} --help`: `{line}`: {first}", help.path));
                }
            }
        }
    }
    assert!(
        parsed > 50,
        "only {parsed} examples found: is the walk broken?"
    );
    assert!(
        failures.is_empty(),
        "{} help example(s) do not parse:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn every_command_shows_an_example_of_itself() {
    let mut missing = Vec::new();
    for help in helps().into_iter().filter(|h| h.leaf) {
        let own = help.examples.iter().any(|line| {
            rtlab_commands(line).iter().any(|words| {
                command()
                    .try_get_matches_from(words)
                    .is_ok_and(|m| matched_path(&m) == help.path)
            })
        });
        if !own {
            missing.push(help.path);
        }
    }
    assert!(
        missing.is_empty(),
        "no example that runs the command in the --help of:\n  {}",
        missing.join("\n  ")
    );
}

/// Every visible command as its words after `rtlab`: `["plan", "gen"]`.
fn command_paths() -> Vec<Vec<String>> {
    helps()
        .into_iter()
        .filter(|h| h.path != "rtlab")
        .map(|h| h.path.split(' ').skip(1).map(String::from).collect())
        .collect()
}

fn rtlab_bin(args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rtlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `rtlab completions SHELL` names every command in its script.
#[test]
fn completions_cover_every_command() {
    let paths = command_paths();
    assert!(paths.len() > 30, "{paths:?}");
    for shell in ["bash", "zsh", "fish"] {
        let script = String::from_utf8(rtlab_bin(&["completions", shell]).stdout).unwrap();
        for path in &paths {
            let name = path.last().unwrap();
            assert!(
                script.contains(name.as_str()),
                "{shell} completions lack `rtlab {}`",
                path.join(" ")
            );
        }
        // Flags and fixed values complete too.
        assert!(
            script.contains("hist-max") && script.contains("histfile"),
            "{shell}"
        );
        assert!(
            !script.contains("__load-worker"),
            "{shell}: a hidden command"
        );
    }
    // Each command offered as a word where it can be typed: fish lists it
    // as `-a "NAME"` under its parent, zsh has a `(NAME)` case for it.
    let fish = String::from_utf8(rtlab_bin(&["completions", "fish"]).stdout).unwrap();
    let zsh = String::from_utf8(rtlab_bin(&["completions", "zsh"]).stdout).unwrap();
    for path in &paths {
        let name = path.last().unwrap();
        assert!(
            fish.contains(&format!("-a \"{name}\"")),
            "fish: rtlab {}",
            path.join(" ")
        );
        assert!(
            zsh.contains(&format!("({name})")),
            "zsh: rtlab {}",
            path.join(" ")
        );
    }
}

/// `rtlab man --dir DIR` writes one page per command, each with its
/// options and examples; `rtlab man` prints rtlab(1).
#[test]
fn man_pages_cover_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    rtlab_bin(&["man", "--dir", pages.to_str().unwrap()]);
    for path in command_paths() {
        let file = pages.join(format!("rtlab-{}.1", path.join("-")));
        let page =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            page.starts_with(".ie") || page.contains(".TH"),
            "{}",
            file.display()
        );
    }
    let gen = std::fs::read_to_string(pages.join("rtlab-plan-gen.1")).unwrap();
    assert!(
        gen.contains("\\-\\-period") && gen.contains("Examples"),
        "{gen}"
    );
    assert!(!pages.join("rtlab-__load-worker.1").exists());
    let top = String::from_utf8(rtlab_bin(&["man"]).stdout).unwrap();
    assert!(
        top.contains(".TH rtlab 1") && top.contains("measure"),
        "{top}"
    );
}

/// The lines of the fenced shell code blocks (no language, sh, bash,
/// console) of a Markdown page that run rtlab, with `\` continuations
/// joined and a `$ ` or `# ` prompt dropped. rtlab's own output shown in
/// such a block is left out: a line whose first words end with `:`
/// (`rtlab tune check: host vm, ...`), a row whose second word is no
/// command (`rtlab executive  99.03%`) and a sentence ending in `.`.
fn doc_examples(text: &str) -> Vec<(usize, String)> {
    let commands: Vec<String> = command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let mut out = Vec::new();
    let mut fenced = None;
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fenced = match fenced {
                Some(_) => None,
                None => Some(matches!(
                    info.trim(),
                    "" | "sh" | "bash" | "console" | "shell"
                )),
            };
            continue;
        }
        if fenced != Some(true) {
            continue;
        }
        let line = line.trim();
        let (number, joined) = match pending.take() {
            Some((number, before)) => (number, format!("{before} {line}")),
            None => (n + 1, line.to_string()),
        };
        if let Some(head) = joined.strip_suffix('\\') {
            pending = Some((number, head.trim_end().to_string()));
            continue;
        }
        let joined = joined
            .strip_prefix("$ ")
            .or_else(|| joined.strip_prefix("# "))
            .unwrap_or(&joined)
            .to_string();
        let words: Vec<&str> = joined.split_whitespace().collect();
        let output = words.iter().take(3).any(|w| w.ends_with(':'))
            || joined.ends_with('.')
            || (words.first() == Some(&"rtlab")
                && !words
                    .get(1)
                    .is_some_and(|w| commands.iter().any(|c| c == w)));
        if (joined.starts_with("rtlab ") || joined.contains("&& rtlab ")) && !output {
            out.push((number, joined));
        }
    }
    out
}

#[test]
fn every_example_in_the_docs_and_readme_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    let mut failures = Vec::new();
    let mut parsed = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page
            .strip_prefix(&root)
            .unwrap_or(page)
            .display()
            .to_string();
        for (line_number, line) in doc_examples(&text) {
            let Ok(commands) = shell_commands(&line) else {
                continue;
            };
            for words in commands.into_iter().filter(|w| w[0] == "rtlab") {
                parsed += 1;
                if let Err(e) = command().try_get_matches_from(&words) {
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    failures.push(format!("{name}:{line_number}: `{line}`: {first}"));
                }
            }
        }
    }
    assert!(parsed > 100, "only {parsed} examples found in the docs");
    assert!(
        failures.is_empty(),
        "{} example(s) in the docs do not parse:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// `completions --json` and `man --json` hold what the plain forms print
/// (and, with --dir, name the pages written).
#[test]
fn completions_and_man_pages_as_json() {
    let plain = String::from_utf8(rtlab_bin(&["completions", "bash"]).stdout).unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&rtlab_bin(&["completions", "bash", "--json"]).stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.completions/1");
    assert_eq!(doc["shell"], "bash");
    assert_eq!(doc["script"].as_str().unwrap(), plain);

    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let doc: serde_json::Value = serde_json::from_slice(
        &rtlab_bin(&["man", "--dir", man.to_str().unwrap(), "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(doc["schema"], "rtlab.man/1");
    let pages: Vec<&str> = doc["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        pages.contains(&"rtlab.1") && pages.contains(&"rtlab-plan-gen.1"),
        "{pages:?}"
    );
    assert_eq!(pages.len(), std::fs::read_dir(&man).unwrap().count());
    let page: serde_json::Value =
        serde_json::from_slice(&rtlab_bin(&["man", "--json"]).stdout).unwrap();
    assert!(page["page"].as_str().unwrap().contains(".TH rtlab"));
}
