//! A real Prometheus for the monitor tests, and what the tests of
//! `examples/monitor/` share: the Debian `prometheus` binary started by the
//! test itself (never the system's service) in a temporary directory of its
//! own (generated configuration, TSDB), on a free port of 127.0.0.1,
//! scraping one target every second with native histograms on; stopped and
//! its directory removed when dropped, also when the test panics. Queries
//! go over the HTTP API with a minimal HTTP/1.1 client on a `TcpStream`
//! (no HTTP client crate, no curl: scripts/setup does not install it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The Accept header of a scrape that wants the text format (0.0.4).
pub const ACCEPT_TEXT: &str = "text/plain;version=0.0.4";
/// The Accept header of a scrape that wants the protobuf exposition.
pub const ACCEPT_PROTOBUF: &str =
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited";

/// The families `rtlab monitor` serves (the contract of docs/monitor.md),
/// as PromQL names them; the examples must use each of them.
pub const MONITOR_METRICS: &[&str] = &[
    "rtlab_wakeup_latency_seconds_bucket",
    "rtlab_wakeup_latency_native_seconds",
    "rtlab_wakeup_latency_window_max_seconds",
    "rtlab_wakeup_latency_max_seconds",
    "rtlab_wakeup_samples_total",
    "rtlab_wakeup_missed_total",
    "rtlab_monitor_measuring_seconds_total",
    "rtlab_environment_info",
    "rtlab_monitor_cpu_seconds_total",
];

/// `examples/monitor/` of this checkout.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monitor")
}

/// Why `prometheus` or `promtool` cannot run here, or Ok.
pub fn available(program: &str) -> Result<(), String> {
    match Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("{program} --version failed ({status})")),
        Err(e) => Err(format!(
            "{program} cannot run ({e}): scripts/setup installs the Debian package prometheus"
        )),
    }
}

/// Runs `promtool ARGS` with `stdin` as its input; None (skip printed) when
/// promtool is not installed.
pub fn promtool(args: &[&str], stdin: &[u8]) -> Option<Output> {
    if let Err(why) = available("promtool") {
        super::skip(&why);
        return None;
    }
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    // A writer thread: promtool may answer before it has read everything.
    let writer = std::thread::spawn(move || input.write_all(&data));
    let out = child.wait_with_output().expect("promtool ends");
    let _ = writer.join();
    Some(out)
}

/// A port of 127.0.0.1 free a moment ago: bound to port 0, then let go.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

/// A running Prometheus of the calling test.
pub struct Prometheus {
    child: Child,
    dir: tempfile::TempDir,
    addr: String,
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (`HOST:PORT`, job
    /// `rtlab-monitor`, every second) and evaluating `rule_files` every
    /// second; returns once it is ready. None (skip printed) when
    /// Prometheus is not installed.
    pub fn start(target: &str, rule_files: &[PathBuf]) -> Option<Prometheus> {
        if let Err(why) = available("prometheus") {
            super::skip(&why);
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, config_text(target, rule_files)).unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--enable-feature=native-histograms")
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let mut prometheus = Prometheus { child, dir, addr };
        prometheus.wait_until_ready();
        Some(prometheus)
    }

    fn wait_until_ready(&mut self) {
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(response) = http_get(&self.addr, "/-/ready", None) {
                if response.status == 200 {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("prometheus exited early ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < give_up,
                "prometheus not ready in 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What Prometheus logged so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The answer of the HTTP API to the instant query `expr`, as JSON
    /// (`status` is "error", with `error`, when the expression is wrong).
    pub fn query(&self, expr: &str) -> serde_json::Value {
        self.api(&format!("/api/v1/query?query={}", url_encode(expr)))
    }

    /// The instant vector `expr` evaluates to (panics on an error answer).
    pub fn vector(&self, expr: &str) -> Vec<serde_json::Value> {
        let answer = self.query(expr);
        assert_eq!(answer["status"], "success", "{expr}: {answer}");
        assert_eq!(answer["data"]["resultType"], "vector", "{expr}: {answer}");
        answer["data"]["result"].as_array().unwrap().clone()
    }

    /// The value of every element of `expr`'s vector by its `cpu` label
    /// (elements without a float value, a native histogram, are left out).
    pub fn values_by_cpu(&self, expr: &str) -> std::collections::BTreeMap<String, f64> {
        self.vector(expr)
            .iter()
            .filter_map(|element| {
                let cpu = element["metric"]["cpu"].as_str()?.to_string();
                let value = element["value"][1].as_str()?.parse::<f64>().ok()?;
                Some((cpu, value))
            })
            .collect()
    }

    /// GET `path` of the HTTP API, as JSON.
    pub fn api(&self, path: &str) -> serde_json::Value {
        let response = http_get(&self.addr, path, None).expect("the Prometheus API answers");
        serde_json::from_slice(&response.body).unwrap_or_else(|e| {
            panic!(
                "{path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&response.body)
            )
        })
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: plain kill(2) on our own child, still running.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let give_up = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // self.dir (TSDB, configuration, log) goes when it drops, after this.
    }
}

/// The configuration of a test Prometheus: one job, every second.
fn config_text(target: &str, rule_files: &[PathBuf]) -> String {
    let rules: String = rule_files
        .iter()
        .map(|file| format!("  - '{}'\n", file.display()))
        .collect();
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n{rules}\
         scrape_configs:\n  - job_name: rtlab-monitor\n    static_configs:\n      - targets: ['{target}']\n"
    )
}

/// An HTTP answer: status code, Content-Type and body.
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// GET `target` (path and query) from `addr` over HTTP/1.1 with the
/// connection closed after the answer; a chunked body is decoded.
pub fn http_get(addr: &str, target: &str, accept: Option<&str>) -> std::io::Result<Response> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
        .ok_or_else(|| std::io::Error::other(format!("GET {target}: not an HTTP answer")))
}

fn parse_response(raw: &[u8]) -> Option<Response> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut content_type = String::new();
    let mut chunked = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type") {
            content_type = value.to_string();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let body = &raw[end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Some(Response {
        status,
        content_type,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// `text` percent-encoded for a URL's query string.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every `expr` of the Grafana dashboard in examples/monitor, by the title
/// of its panel, as plain PromQL: Grafana's variables replaced by what
/// Prometheus accepts (`$instance` by any instance, the rate interval by
/// `rate_window`). Panics on a variable it does not know, so a new one
/// cannot slip past the checks unreplaced.
pub fn dashboard_queries(rate_window: &str) -> Vec<(String, String)> {
    let path = examples_dir().join("grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let dashboard: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("every target has an expr");
            let promql = expr
                .replace("$__rate_interval", rate_window)
                .replace("$__interval", rate_window)
                .replace("$instance", ".+");
            assert!(
                !promql.contains('$'),
                "panel {}: a Grafana variable the tests do not replace: {expr}",
                panel["title"]
            );
            queries.push((panel["title"].as_str().unwrap().to_string(), promql));
        }
    }
    queries
}
