//! Where a result store is: an SQLite file, or a PostgreSQL database named
//! by a URL (`--db`, `RTLAB_DB`). Parsed and checked once, here; shown
//! everywhere (messages, JSON, kept runs) without its password.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::StoreError;

/// How long connecting to a PostgreSQL server may take before a command
/// gives up (a read-only command against a server that is down fails
/// instead of hanging), unless the URL sets `connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A result store's place.
#[derive(Clone, Debug)]
pub enum Location {
    /// An SQLite database file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgTarget),
}

/// A PostgreSQL database: the client's settings and the URL as shown.
#[derive(Clone)]
pub struct PgTarget {
    /// Boxed: it is large, and a [`Location`] is mostly a file.
    pub(crate) config: Box<postgres::Config>,
    /// `postgresql://user@host:port/db`, never a password: what messages,
    /// JSON and kept runs name.
    shown: String,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(pg) => f.write_str(&pg.shown),
        }
    }
}

/// Whether `text` is a PostgreSQL URL rather than a file's path.
pub fn is_postgres_url(text: &str) -> bool {
    ["postgres://", "postgresql://"].iter().any(|scheme| {
        text.len() >= scheme.len() && text[..scheme.len()].eq_ignore_ascii_case(scheme)
    })
}

/// `postgres:` or `postgresql:` (any case) that is not a URL's `://`.
fn looks_like_a_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["postgres:", "postgresql:", "postgres/", "postgresql/"]
        .iter()
        .any(|start| lower.starts_with(start))
}

impl Location {
    /// A `--db` value: a PostgreSQL URL (`postgres://` or `postgresql://`,
    /// the socket directory as a percent-encoded host or `?host=/path`),
    /// else a file's path. A bad URL is [`StoreError::Invalid`], its
    /// message without the password.
    pub fn parse(given: &Path) -> Result<Location, StoreError> {
        match given.to_str() {
            Some(text) if is_postgres_url(text) => PgTarget::parse(text).map(Location::Postgres),
            // A mistyped URL (`postgres:/h/db`, `postgresql//h/db`) would
            // silently be a new SQLite file of that name.
            // Not shown: a password in it would be.
            Some(text) if looks_like_a_url(text) => Err(StoreError::Invalid(format!(
                "`{}…` looks like a mistyped PostgreSQL URL: write \
                 postgresql://USER@HOST/DB (for a file of that name, start it with ./)",
                text.split_inclusive([':', '/']).next().unwrap_or_default()
            ))),
            _ => Ok(Location::File(given.to_path_buf())),
        }
    }

    /// The file of an SQLite store.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// What stands for the store in messages (`Store::path`): the file,
    /// or the URL without its password.
    pub fn shown_path(&self) -> PathBuf {
        match self {
            Location::File(path) => path.clone(),
            Location::Postgres(pg) => PathBuf::from(&pg.shown),
        }
    }
}

impl PgTarget {
    fn parse(url: &str) -> Result<PgTarget, StoreError> {
        // Checked before the client parses it: it knows no verify-* mode,
        // and its message would not say why.
        if let Some(mode) = query_value(url, "sslmode") {
            if !matches!(mode.as_str(), "disable" | "allow" | "prefer") {
                return Err(StoreError::Invalid(format!(
                    "{}: sslmode={mode} asks for TLS, which rtlab does not support yet: use \
                     the server's local socket (postgresql://user@%2Fvar%2Frun%2Fpostgresql/db) \
                     or a tunnel (ssh -L), with sslmode=disable or prefer",
                    redact(url)
                )));
            }
        }
        // The client knows the scheme in lower case only.
        let plain = match url.split_once("://") {
            Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
            None => url.to_string(),
        };
        let plain = strip_query_key(&plain, "sslmode");
        let mut config: postgres::Config = plain.parse().map_err(|e| {
            StoreError::Invalid(format!(
                "{} is not a PostgreSQL URL rtlab can use: {e}; expected \
                 postgresql://[user[:password]@]host[:port]/database, the host a socket \
                 directory percent-encoded (%2Frun%2Fpostgresql) or given as ?host=/path",
                redact(url)
            ))
        })?;
        config.ssl_mode(postgres::config::SslMode::Disable);
        // The client ends the credentials at the first `@`: another one
        // was meant in the password, whose rest would be taken for (and
        // shown as) the host.
        let host_with_at = config.get_hosts().iter().any(|host| match host {
            postgres::config::Host::Tcp(name) => name.contains('@'),
            postgres::config::Host::Unix(dir) => dir.to_string_lossy().contains('@'),
        });
        if host_with_at {
            return Err(StoreError::Invalid(format!(
                "{}: more than one `@`: write an `@` of the password (or user) as %40",
                redact(url)
            )));
        }
        if config.get_hosts().is_empty() {
            return Err(StoreError::Invalid(format!(
                "{}: no host: give the server's host or its socket directory \
                 (postgresql://user@%2Frun%2Fpostgresql/db or ?host=/run/postgresql)",
                redact(url)
            )));
        }
        if config.get_dbname().is_none() {
            return Err(StoreError::Invalid(format!(
                "{}: no database: end the URL with /DATABASE",
                redact(url)
            )));
        }
        if config.get_user().is_none() {
            // The client needs one; libpq would take the login name.
            let login = std::env::var("USER").unwrap_or_else(|_| "root".into());
            config.user(&login);
        }
        if config.get_password().is_none() {
            if let Some(password) = std::env::var_os("PGPASSWORD") {
                use std::os::unix::ffi::OsStrExt;
                config.password(password.as_bytes());
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("rtlab");
        // A peer that vanished (a host powered off) is noticed within a
        // minute rather than the system's two hours.
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(30));
        }
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(30));
        }
        let shown = shown(&config);
        Ok(PgTarget {
            config: Box::new(config),
            shown,
        })
    }

    /// Connects, in plain text (no TLS). The client's connect timeout
    /// covers the socket only: a server that takes the connection and
    /// never answers would hold the start-up forever. So the connection
    /// is made by a thread of its own, given twice the connect timeout
    /// (socket, then start-up) and left behind if it takes longer.
    pub(crate) fn connect(&self, path: &Path) -> Result<postgres::Client, StoreError> {
        let config = self.config.clone();
        let limit = 2 * config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        let (sender, answer) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("rtlab-pg-connect".into())
            .spawn(move || {
                let _ = sender.send(config.connect(postgres::NoTls));
            })
            .map_err(|e| StoreError::Unreachable {
                path: path.to_path_buf(),
                cause: format!("cannot start a thread to connect: {e}"),
            })?;
        match answer.recv_timeout(limit) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(StoreError::postgres(path, &e)),
            Err(_) => Err(StoreError::Unreachable {
                path: path.to_path_buf(),
                cause: format!("the server did not answer within {} s", limit.as_secs()),
            }),
        }
    }
}

/// `postgresql://user@host:port/db` of a parsed URL: no password, no
/// options; a socket directory percent-encoded as the URL had it.
fn shown(config: &postgres::Config) -> String {
    use postgres::config::Host;
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                Host::Tcp(name) => name.clone(),
                Host::Unix(dir) => dir.display().to_string().replace('/', "%2F"),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) if *port != 5432 => format!("{name}:{port}"),
                _ => name,
            }
        })
        .collect();
    format!(
        "postgresql://{}@{}/{}",
        config.get_user().unwrap_or_default(),
        hosts.join(","),
        config.get_dbname().unwrap_or_default()
    )
}

/// A command line as a result records it: each PostgreSQL URL (`--db
/// URL`, `--db=URL`) with its password replaced by `***`.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|arg| match arg.split_once('=') {
            Some((flag, url)) if flag.starts_with("--") && is_postgres_url(url) => {
                format!("{flag}={}", redact(url))
            }
            _ if is_postgres_url(&arg) => redact(&arg),
            _ => arg,
        })
        .collect()
}

/// The URL with any password replaced by `***`, for a message about a URL
/// that did not parse and for recorded command lines.
pub fn redact(url: &str) -> String {
    // `password=` of the query first: its value may hold an `@`.
    let url = redact_query_password(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url;
    };
    // The credentials end at the last `@`, whatever comes between: a
    // password may hold `@`, `/` or `?` (this hides too much rather than
    // too little when the query holds an `@`).
    match rest.rfind('@') {
        Some(at) => {
            let credentials = &rest[..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{scheme}://{user}:***@{}", &rest[at + 1..]),
                None => url.clone(),
            }
        }
        None => url.clone(),
    }
}

/// The URL with the value of each `password=` pair (after a `?` or `&`)
/// replaced by `***`.
fn redact_query_password(url: &str) -> String {
    let mut shown = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(at) = rest.find(['?', '&']) {
        shown.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let end = rest.find('&').unwrap_or(rest.len());
        match rest[..end].split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                shown.push_str(key);
                shown.push_str("=***");
                rest = &rest[end..];
            }
            _ => {}
        }
    }
    shown.push_str(rest);
    shown
}

/// The value of `key` in the URL's query, if given.
fn query_value(url: &str, key: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_ascii_lowercase())
}

/// The URL without `key=...` in its query.
fn strip_query_key(url: &str, key: &str) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| pair.split_once('=').map_or(*pair, |(k, _)| k) != key)
        .collect();
    match kept.is_empty() {
        true => head.to_string(),
        false => format!("{head}?{}", kept.join("&")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location, StoreError> {
        Location::parse(Path::new(text))
    }

    #[test]
    fn a_path_is_a_file_and_a_url_is_postgres() {
        assert!(matches!(parse("results.db").unwrap(), Location::File(_)));
        assert!(matches!(
            parse("/x/postgres.db").unwrap(),
            Location::File(_)
        ));
        let socket = parse("postgresql://postgres@%2Ftmp%2Fpg%2Fsock/lab").unwrap();
        assert_eq!(
            socket.to_string(),
            "postgresql://postgres@%2Ftmp%2Fpg%2Fsock/lab"
        );
        let query = parse("postgres://u@/lab?host=/run/postgresql").unwrap();
        assert_eq!(query.to_string(), "postgresql://u@%2Frun%2Fpostgresql/lab");
        let tcp = parse("POSTGRES://u:secret@db.lab:5433/fleet").unwrap();
        assert_eq!(tcp.to_string(), "postgresql://u@db.lab:5433/fleet");
    }

    #[test]
    fn no_message_shows_the_password() {
        for bad in [
            "postgres://u:hunter2@db.lab/fleet?sslmode=require",
            "postgres://u:hunter2@db.lab/fleet?sslmode=verify-full",
            "postgres://u:hunter2@db.lab:notaport/fleet",
            "postgres://u:hunter2@db.lab/fleet?password=hunter2&bogus=1",
            "postgres://u:hunter2@db.lab",
        ] {
            let message = parse(bad).unwrap_err().to_string();
            assert!(!message.contains("hunter2"), "{message}");
            assert!(message.contains("u:***@db.lab"), "{message}");
        }
        let shown = parse("postgres://u@h/d?password=hunter2")
            .unwrap()
            .to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn recorded_command_lines_hold_no_password() {
        let args = [
            "rtlab",
            "runs",
            "--db",
            "postgres://u:pw@h/d",
            "--db=postgresql://v:pw@h/d",
        ];
        assert_eq!(
            redact_args(args.map(String::from)),
            [
                "rtlab",
                "runs",
                "--db",
                "postgres://u:***@h/d",
                "--db=postgresql://v:***@h/d"
            ]
        );
    }

    #[test]
    fn a_password_with_a_question_mark_or_an_at_sign_is_never_shown() {
        // The client ends the credentials at the first `@`: a `?` in the
        // password is the password's, an `@` not percent-encoded cuts it
        // short and leaves the rest in the host.
        for url in ["postgres://u:hunt?er2@h/d", "postgres://u:hunt@er2@h/d"] {
            let recorded = redact_args([url.to_string()]).concat();
            assert!(!recorded.contains("hunt"), "{recorded}");
            assert!(!recorded.contains("er2"), "{recorded}");
            assert!(recorded.contains("u:***@"), "{recorded}");
            let shown = match parse(url) {
                Ok(location) => location.to_string(),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("hunt"), "{shown}");
            assert!(!shown.contains("er2"), "{shown}");
        }
        let message = parse("postgres://u:hunt@er2@h/d").unwrap_err().to_string();
        assert!(message.contains("%40"), "{message}");
        assert_eq!(
            redact("postgres://h/d?application_name=x&password=p@ss&sslmode=disable"),
            "postgres://h/d?application_name=x&password=***&sslmode=disable"
        );
    }

    #[test]
    fn a_mistyped_url_is_no_file() {
        for typo in [
            "postgres:/u@h/d",
            "postgresql//u:hunter2@h/d",
            "POSTGRES:u@h/d",
        ] {
            let message = parse(typo).unwrap_err().to_string();
            assert!(message.contains("mistyped PostgreSQL URL"), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
        assert!(matches!(parse("./postgres:/x").unwrap(), Location::File(_)));
        assert!(matches!(parse("postgres.db").unwrap(), Location::File(_)));
    }

    #[test]
    fn tls_is_refused_with_what_to_do() {
        let message = parse("postgresql://u@h/d?sslmode=require")
            .unwrap_err()
            .to_string();
        assert!(message.contains("TLS"), "{message}");
        assert!(message.contains("socket"), "{message}");
        assert!(parse("postgresql://u@h/d?sslmode=prefer").is_ok());
        assert!(parse("postgresql://u@h/d?sslmode=disable&connect_timeout=2").is_ok());
    }

    #[test]
    fn a_url_needs_a_host_and_a_database() {
        assert!(parse("postgresql://u@h")
            .unwrap_err()
            .to_string()
            .contains("no database"));
        assert!(parse("postgresql:///d")
            .unwrap_err()
            .to_string()
            .contains("no host"));
    }
}
