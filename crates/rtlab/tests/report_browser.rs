//! `rtlab report` end to end, as people see it: the HTML page opened in
//! headless Chromium (no console message, no CSP violation, a screenshot
//! that shows charts, nothing fetched from outside), the detectors proven
//! to flag what they must (an injected script, refused by the page's CSP
//! or, without it, run; an injected remote image; charts hidden), and
//! `--png DIR` (one decodable, non-blank 1280 × 680 image with text per
//! chart).
//!
//! The run is a real `measure timer` run with its samples file when RT
//! scheduling is allowed, else cyclictest's histfile imported with
//! `rtlab import` (said on stderr), so the tests also run unprivileged.
//! Without Chromium (/usr/bin/chromium, `chromium` on PATH or
//! $RTLAB_TEST_CHROMIUM) the browser tests skip with the reason. No
//! absolute timing is asserted; Chromium is killed after 90 s so that a
//! hung browser fails the test instead of hanging CI.

mod common;

use common::{rtlab, run, skip};
use rtlab_core::env::Environment;
use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{
    CampaignRef, Effective, RunResult, RunStatus, Series, ThreadSettings, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::report::{Report, ReportOptions};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The report's first series colour (Okabe–Ito blue).
const CHART_BLUE: [u8; 3] = [0x00, 0x72, 0xB2];
/// A hung browser fails the test after this long.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);
/// The only URL the page may contain: the SVG namespace.
const SVG_NAMESPACE: &str = "xmlns=\"http://www.w3.org/2000/svg\"";

/// Says something about how a test ran, on the real stderr (the harness
/// captures eprintln! of passing tests).
fn note(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\nnote: {what}");
}

// ---------------------------------------------------------------- the run

/// A run in a store of its own, in a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    db: PathBuf,
    /// The run's samples file (measured runs only).
    samples: Option<PathBuf>,
}

impl Fixture {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The first two CPUs this process may run on (one when there is one):
/// two series give the report its comparison charts.
fn two_cpus() -> String {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let cpus: Vec<usize> = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .take(2)
            .collect()
    };
    assert!(!cpus.is_empty(), "no CPU in this process's affinity");
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A real run (2 s of `measure timer` with --samples) when RT scheduling
/// is allowed; else a real cyclictest histfile (two threads) imported.
fn make_run() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let state = dir.path().join("state");
    match common::realtime_allowed() {
        Ok(()) => {
            let samples = dir.path().join("samples.csv");
            let out = run(rtlab(&state)
                .args(["measure", "timer", "--quiet", "--duration", "2s", "--cpus"])
                .arg(two_cpus())
                .arg("--db")
                .arg(&db)
                .arg("--samples")
                .arg(&samples));
            assert!(
                out.status.success(),
                "measure timer: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(samples.is_file(), "no samples file written");
            Fixture {
                dir,
                db,
                samples: Some(samples),
            }
        }
        Err(why) => {
            note(&format!(
                "{why}: reporting on an imported cyclictest histfile instead of a measured run"
            ));
            let hist = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../rtlab-report/tests/golden/cyclictest-2.40-H40.hist");
            let out = run(rtlab(&state).arg("import").arg(&hist).arg("--db").arg(&db));
            assert!(
                out.status.success(),
                "import: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Fixture {
                dir,
                db,
                samples: None,
            }
        }
    }
}

/// `rtlab report last -o HTML --json EXTRA…` on the fixture's run, with
/// its samples file; the JSON document and the report's stderr.
fn report(fixture: &Fixture, html: &Path, extra: &[&str]) -> (Value, String) {
    let mut cmd = rtlab(&fixture.path().join("state"));
    cmd.args(["report", "last", "--quiet", "--json", "--db"])
        .arg(&fixture.db)
        .arg("-o")
        .arg(html);
    if let Some(samples) = &fixture.samples {
        cmd.arg("--samples").arg(samples);
    }
    let out = run(cmd.args(extra));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "report: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report --json: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(doc["schema"], "rtlab.report/1");
    assert!(html.is_file(), "-o {} not written", html.display());
    (doc, stderr)
}

// ------------------------------------------------------------ the browser

/// Chromium: $RTLAB_TEST_CHROMIUM when set, else Debian's
/// /usr/bin/chromium, else `chromium` on PATH; the reason when none.
fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("RTLAB_TEST_CHROMIUM") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "RTLAB_TEST_CHROMIUM={}: no such file",
                path.display()
            ))
        };
    }
    let debian = Path::new("/usr/bin/chromium");
    if debian.is_file() {
        return Ok(debian.to_path_buf());
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("chromium"))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            "no Chromium (/usr/bin/chromium or `chromium` on PATH): install Debian's \
             `chromium` (scripts/setup does), or set RTLAB_TEST_CHROMIUM"
                .to_string()
        })
}

/// Skips the calling test, with the reason printed, unless Chromium is
/// there; its path when it is.
macro_rules! require_chromium {
    () => {
        match chromium() {
            Ok(path) => path,
            Err(why) => {
                skip(&why);
                return;
            }
        }
    };
}

/// `file://` URL of an absolute path, bytes other than unreserved ones
/// and `/` percent-encoded.
fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = std::fs::canonicalize(path).unwrap();
    let mut url = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// What Chromium did with a page.
struct Visit {
    /// Its log (--enable-logging=stderr --v=0).
    log: String,
    screenshot: PathBuf,
    took: Duration,
}

/// Opens `html` in headless Chromium with a fresh profile (and HOME) under
/// `work`, and takes a 1400 × 3000 screenshot. Panics, with the log, when
/// Chromium fails or is not done within [`CHROMIUM_TIMEOUT`] (then its
/// whole process group is killed).
fn open_in_chromium(chromium: &Path, html: &Path, work: &Path) -> Visit {
    let home = tempfile::Builder::new()
        .prefix("chromium-")
        .tempdir_in(work)
        .unwrap()
        .keep();
    let profile = home.join("profile");
    let screenshot = home.join("screenshot.png");
    let log_path = home.join("chromium.log");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let start = Instant::now();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,3000",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(file_url(html))
        // Chromium writes under HOME and the XDG directories: keep it in
        // the test's own directory.
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        // Its own process group, so that a hung browser is killed with
        // its renderer, GPU and zygote processes.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", chromium.display()));
    let status = wait_or_kill(&mut child, start, html, &log_path);
    let took = start.elapsed();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        status.success(),
        "Chromium failed ({status}) on {}:\n{log}",
        html.display()
    );
    assert!(
        screenshot.is_file(),
        "Chromium wrote no screenshot of {}:\n{log}",
        html.display()
    );
    note(&format!(
        "Chromium took {:.2} s on {}",
        took.as_secs_f64(),
        html.display()
    ));
    Visit {
        log,
        screenshot,
        took,
    }
}

/// Waits for Chromium on `html`; after [`CHROMIUM_TIMEOUT`] kills its
/// whole process group and panics with its log.
fn wait_or_kill(
    child: &mut std::process::Child,
    start: Instant,
    html: &Path,
    log_path: &Path,
) -> ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            // SAFETY: kill(2) on the process group of our own child, not
            // yet reaped, so its id is still ours.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "Chromium did not finish {} within {CHROMIUM_TIMEOUT:?}: killed; its log:\n{}",
                html.display(),
                std::fs::read_to_string(log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Opens `html` in headless Chromium `width` px wide and returns the DOM
/// once its scripts ran (`--dump-dom`), with a fresh profile under `work`
/// as [`open_in_chromium`] does.
fn dump_dom(chromium: &Path, html: &Path, work: &Path, width: u32) -> String {
    let home = tempfile::Builder::new()
        .prefix("chromium-")
        .tempdir_in(work)
        .unwrap()
        .keep();
    let dom_path = home.join("dom.html");
    let log_path = home.join("chromium.log");
    let start = Instant::now();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--dump-dom",
        ])
        .arg(format!("--window-size={width},2000"))
        .arg(format!(
            "--user-data-dir={}",
            home.join("profile").display()
        ))
        .arg(file_url(html))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom_path).unwrap())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", chromium.display()));
    let status = wait_or_kill(&mut child, start, html, &log_path);
    assert!(
        status.success(),
        "Chromium failed ({status}) on {}:\n{}",
        html.display(),
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    std::fs::read_to_string(&dom_path).unwrap()
}

/// The console messages and CSP violations in Chromium's log. The report
/// has no script, so every console message is the browser complaining
/// (a CSP violation, a refused or failed load, an SVG attribute it cannot
/// parse): all of them count, whatever their level. (Chromium 156 logs
/// them all as `INFO:CONSOLE:LINE`, console.error included, so the level
/// could not be told anyway; older ones as `CONSOLE(LINE)`.) The noise of
/// a machine without D-Bus or GPU is not a console message and is ignored.
fn console_problems(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| {
            line.contains(":CONSOLE")
                || line.contains("CONSOLE(")
                || line.contains("Refused to")
                || line.contains("Content Security Policy")
                || line.contains("Content-Security-Policy")
        })
        .collect()
}

/// Every reference to something outside the page: attributes that load
/// or link (src, href, …) with anything but a `#fragment` or a `data:`
/// URI, CSS `url(…)` likewise, `@import`, and any http(s) URL but the SVG
/// namespace.
fn external_references(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let local = |value: &str| {
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        value.starts_with('#') || value.starts_with("data:")
    };
    for attribute in [
        "src",
        "href",
        "srcset",
        "action",
        "formaction",
        "poster",
        "data",
        "background",
        "ping",
    ] {
        let needle = format!("{attribute}=");
        for (at, _) in lower.match_indices(&needle) {
            // A whole attribute name: `xlink:href=` counts, `data-src=` not.
            if at > 0
                && !matches!(
                    bytes[at - 1],
                    b' ' | b'\t' | b'\n' | b'\r' | b':' | b'"' | b'\''
                )
            {
                continue;
            }
            let rest = &html[at + needle.len()..];
            let value = match rest.chars().next() {
                Some(q @ ('"' | '\'')) => rest[1..].split(q).next().unwrap_or(""),
                _ => rest
                    .split(|c: char| c.is_whitespace() || c == '>')
                    .next()
                    .unwrap_or(""),
            };
            if !local(value) {
                found.push(format!("{attribute}={value}"));
            }
        }
    }
    for (at, _) in lower.match_indices("url(") {
        let value = html[at + 4..].split(')').next().unwrap_or("");
        if !local(value) {
            found.push(format!("url({value})"));
        }
    }
    if lower.contains("@import") {
        found.push("@import".into());
    }
    for scheme in ["http://", "https://"] {
        for (at, _) in lower.match_indices(scheme) {
            let allowed = html[..at].ends_with("xmlns=\"")
                && html[at - "xmlns=\"".len()..].starts_with(SVG_NAMESPACE);
            if !allowed {
                let end = html[at..]
                    .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>'))
                    .map_or(html.len(), |n| at + n);
                found.push(html[at..end].to_string());
            }
        }
    }
    found
}

// ------------------------------------------------------------------ images

struct Image {
    width: u32,
    height: u32,
    /// RGB, composited on white where the image is transparent.
    pixels: Vec<[u8; 3]>,
}

fn decode_png(path: &Path) -> Image {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size().expect("image size fits")];
    let info = reader
        .next_frame(&mut buf)
        .unwrap_or_else(|e| panic!("{}: does not decode: {e}", path.display()));
    let channels = info.color_type.samples();
    let over_white = |c: u8, a: u8| ((c as u32 * a as u32 + 255 * (255 - a as u32)) / 255) as u8;
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(info.line_size)
        .flat_map(|row| row[..info.width as usize * channels].chunks_exact(channels))
        .map(|p| match *p {
            [g] => [g; 3],
            [g, a] => [over_white(g, a); 3],
            [r, g, b] => [r, g, b],
            [r, g, b, a] => [over_white(r, a), over_white(g, a), over_white(b, a)],
            _ => unreachable!("{channels} channels"),
        })
        .collect();
    Image {
        width: info.width,
        height: info.height,
        pixels,
    }
}

fn near(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

/// What an image shows, roughly, on a known background.
#[derive(Debug)]
struct Looks {
    /// The most common colour.
    commonest: [u8; 3],
    /// Share of pixels unlike the background (by more than 4 a channel).
    drawn: f64,
    /// Share of pixels clearly unlike both the background and white (by
    /// more than 24 a channel): lines, bars, dots and text.
    ink: f64,
    /// Colours with at least 50 pixels each (anti-aliasing aside).
    colours: usize,
    /// Pixels of the chart blue on a chart: see [`chart_blue`].
    blue: usize,
    /// Dark grey pixels: text (#222, #444, the page's #1d1d1d).
    text: usize,
}

/// Pixels of the chart blue (#0072B2, ± 24 a channel) with white
/// (#ffffff) at most 2 pixels away: on a chart, not the page's blue rules
/// and links, which lie on its #fafafa.
fn chart_blue(image: &Image) -> usize {
    let (w, h) = (image.width as usize, image.height as usize);
    let at = |x: usize, y: usize| image.pixels[y * w + x];
    let mut count = 0;
    for y in 0..h {
        for x in 0..w {
            if !near(at(x, y), CHART_BLUE, 24) {
                continue;
            }
            let on_white = (y.saturating_sub(2)..(y + 3).min(h))
                .any(|v| (x.saturating_sub(2)..(x + 3).min(w)).any(|u| at(u, v) == [0xff; 3]));
            count += usize::from(on_white);
        }
    }
    count
}

fn looks(image: &Image, background: [u8; 3]) -> Looks {
    let mut counts: HashMap<[u8; 3], usize> = HashMap::new();
    for &p in &image.pixels {
        *counts.entry(p).or_default() += 1;
    }
    let commonest = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, _)| *c)
        .unwrap();
    let share = |keep: &dyn Fn(&[u8; 3]) -> bool| {
        image.pixels.iter().filter(|p| keep(p)).count() as f64 / image.pixels.len() as f64
    };
    let dark_grey = |p: &[u8; 3]| {
        let (lo, hi) = (p.iter().min().unwrap(), p.iter().max().unwrap());
        *hi <= 0x60 && hi - lo <= 16
    };
    Looks {
        commonest,
        drawn: share(&|p| !near(*p, background, 4)),
        ink: share(&|p| !near(*p, background, 24) && !near(*p, [0xff; 3], 24)),
        colours: counts.values().filter(|n| **n >= 50).count(),
        blue: chart_blue(image),
        text: image.pixels.iter().filter(|p| dark_grey(p)).count(),
    }
}

// ------------------------------------------------------------------ tests

#[test]
fn the_html_report_opens_in_chromium_without_console_errors_and_shows_charts() {
    let chromium = require_chromium!();
    let fixture = make_run();
    let html = fixture.path().join("report.html");
    let (doc, _) = report(&fixture, &html, &[]);
    assert!(!doc["series"].as_array().unwrap().is_empty(), "{doc}");
    let page = std::fs::read_to_string(&html).unwrap();

    let external = external_references(&page);
    assert!(
        external.is_empty(),
        "the report refers to outside resources: {external:?}"
    );
    assert!(
        page.contains("Content-Security-Policy"),
        "no CSP in the page"
    );
    assert!(page.contains(SVG_NAMESPACE), "no inline SVG in the page");

    let visit = open_in_chromium(&chromium, &html, fixture.path());
    let problems = console_problems(&visit.log);
    assert!(
        problems.is_empty(),
        "Chromium reported on the report:\n{}",
        problems.join("\n")
    );

    let image = decode_png(&visit.screenshot);
    assert_eq!((image.width, image.height), (1400, 3000));
    // The page is #fafafa; its tables and figures are white.
    let seen = looks(&image, [0xfa; 3]);
    note(&format!(
        "screenshot after {:.2} s: {seen:?}",
        visit.took.as_secs_f64()
    ));
    assert!(
        [[0xfa; 3], [0xff; 3]].contains(&seen.commonest),
        "the screenshot is mostly {:?}, neither the page's #fafafa nor white",
        seen.commonest
    );
    assert!(
        seen.drawn > 0.10,
        "the screenshot is nearly blank: {seen:?}"
    );
    assert!(
        seen.ink > 0.01,
        "the screenshot shows hardly anything: {seen:?}"
    );
    assert!(
        seen.colours >= 8,
        "the screenshot has few colours: {seen:?}"
    );
    assert!(
        seen.blue >= 500,
        "the screenshot has hardly any chart blue: {seen:?}"
    );
    assert!(
        seen.text >= 5000,
        "the screenshot has hardly any text: {seen:?}"
    );
}

/// Copies `html` to `name` in `dir` with `injection` right after `<body>`.
fn inject(html: &str, dir: &Path, name: &str, injection: &str) -> PathBuf {
    assert_eq!(html.matches("<body>").count(), 1);
    let path = dir.join(name);
    std::fs::write(&path, html.replace("<body>", &format!("<body>{injection}"))).unwrap();
    path
}

#[test]
fn the_detectors_flag_injected_scripts_remote_images_and_hidden_charts() {
    // Canned log lines first: both of Chromium's formats count, the
    // D-Bus and GPU noise does not.
    let canned = r#"[1:2:1122/032428.362258:ERROR:dbus/bus.cc:405] Failed to connect to the bus: no socket
[3:3:1122/032428.444473:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] drmGetDevices2() has not found any devices
[4:4:1122/032436.437021:INFO:CONSOLE:28] "injected", source: file:///tmp/r.html (28)
[5:5:0101/000000.000000:INFO:CONSOLE(12)] "Refused to load the image 'https://x/y.png'", source: file:///tmp/r.html (12)
"#;
    assert_eq!(console_problems(canned).len(), 2, "{canned}");
    assert!(external_references("<img src=\"https://example.invalid/x.png\">").len() == 2);
    assert!(external_references("<a href=\"#run-0\">x</a><svg xmlns=\"http://www.w3.org/2000/svg\"><image href=\"data:image/png;base64,AA\"/></svg>").is_empty());
    assert_eq!(
        external_references("<link rel=stylesheet href=//cdn.invalid/x.css>"),
        ["href=//cdn.invalid/x.css"]
    );
    assert_eq!(
        external_references("<style>body{background:url('x.png')}</style>"),
        ["url('x.png')"]
    );

    let chromium = require_chromium!();
    let fixture = make_run();
    let html = fixture.path().join("report.html");
    report(&fixture, &html, &[]);
    let page = std::fs::read_to_string(&html).unwrap();

    // The report forbids scripts: the injected one is either run (its
    // console.error) or refused (a CSP violation); both must be flagged.
    let script = inject(
        &page,
        fixture.path(),
        "script.html",
        r#"<script>console.error("injected")</script>"#,
    );
    let visit = open_in_chromium(&chromium, &script, fixture.path());
    let problems = console_problems(&visit.log);
    note(&format!("injected script flagged as: {problems:?}"));
    assert!(
        problems
            .iter()
            .any(|l| l.contains("injected") || l.contains("script")),
        "the injected script went unnoticed; Chromium's log:\n{}",
        visit.log
    );

    // Without the CSP the script runs: its console.error is flagged.
    let csp = page
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("the report has a CSP");
    let csp_end = csp + page[csp..].find('>').unwrap() + 1;
    let unprotected = format!("{}{}", &page[..csp], &page[csp_end..]);
    let script = inject(
        &unprotected,
        fixture.path(),
        "script-no-csp.html",
        r#"<script>console.error("injected")</script>"#,
    );
    let visit = open_in_chromium(&chromium, &script, fixture.path());
    let problems = console_problems(&visit.log);
    note(&format!(
        "console.error without the CSP flagged as: {problems:?}"
    ));
    assert!(
        problems.iter().any(|l| l.contains("\"injected\"")),
        "console.error(\"injected\") went unnoticed; Chromium's log:\n{}",
        visit.log
    );

    // A remote image: the page's CSP refuses it (a console message), and
    // the static scan sees it.
    let image = inject(
        &page,
        fixture.path(),
        "image.html",
        r#"<img src="https://example.invalid/x.png" alt="">"#,
    );
    let external = external_references(&std::fs::read_to_string(&image).unwrap());
    assert!(
        external
            .iter()
            .any(|r| r.contains("https://example.invalid/x.png")),
        "the static scan missed the remote image: {external:?}"
    );
    let visit = open_in_chromium(&chromium, &image, fixture.path());
    let problems = console_problems(&visit.log);
    note(&format!("injected remote image flagged as: {problems:?}"));
    assert!(
        problems.iter().any(|l| l.contains("example.invalid")),
        "Chromium reported no CSP violation for the remote image; its log:\n{}",
        visit.log
    );

    // The charts hidden (inline style is allowed): the page's own blue
    // rules and links remain, the chart blue is gone.
    let hidden = inject(
        &page,
        fixture.path(),
        "hidden.html",
        "<style>figure svg { visibility: hidden; }</style>",
    );
    let visit = open_in_chromium(&chromium, &hidden, fixture.path());
    assert!(console_problems(&visit.log).is_empty(), "{}", visit.log);
    let seen = looks(&decode_png(&visit.screenshot), [0xfa; 3]);
    note(&format!("screenshot with the charts hidden: {seen:?}"));
    assert!(
        seen.blue < 50,
        "chart blue counted without charts: {seen:?}"
    );
}

#[test]
fn png_writes_every_chart_as_a_non_blank_1280_by_680_image_with_text() {
    let fixture = make_run();
    let html = fixture.path().join("report.html");
    let dir = fixture.path().join("png");
    let (doc, stderr) = report(&fixture, &html, &["--png", dir.to_str().unwrap()]);

    // The charts expected: three per series, two comparing them all (every
    // series here measures wake-up latency).
    let series = doc["series"].as_array().unwrap();
    assert!(!series.is_empty(), "{doc}");
    let mut expected: Vec<String> = Vec::new();
    if series.len() > 1 {
        expected.extend([
            "compare-wakeup_latency-exceedance.png".into(),
            "compare-wakeup_latency-histogram.png".into(),
        ]);
    }
    for s in series {
        let (run, name) = (s["run_id"].as_str().unwrap(), s["series"].as_str().unwrap());
        for kind in ["histogram", "exceedance", "timeline"] {
            expected.push(format!("{run}-{name}-{kind}.png"));
        }
    }
    expected.sort();
    assert_eq!(
        expected.len(),
        series.len() * 3 + if series.len() > 1 { 2 } else { 0 }
    );

    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, expected, "the files in --png {}", dir.display());
    let mut listed: Vec<String> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .filter(|f| f != &html)
        .map(|f| {
            assert_eq!(f.parent(), Some(dir.as_path()), "{}", f.display());
            f.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    listed.sort();
    assert_eq!(listed, expected, "the files report --json lists");

    let no_fonts = stderr.contains("no system font found");
    if no_fonts {
        skip("no system font: the charts' text is not checked (install fonts-dejavu-core)");
    }
    for name in &expected {
        let image = decode_png(&dir.join(name));
        assert_eq!((image.width, image.height), (1280, 680), "{name}");
        let seen = looks(&image, [0xff; 3]);
        note(&format!("{name}: {seen:?}"));
        assert_eq!(seen.commonest, [0xff; 3], "{name}: {seen:?}");
        assert!(seen.drawn > 0.01, "{name} is nearly blank: {seen:?}");
        assert!(seen.colours >= 4, "{name} has few colours: {seen:?}");
        if !no_fonts {
            assert!(seen.text >= 1000, "{name} has hardly any text: {seen:?}");
        }
        // Every chart draws its first series in blue; a time chart has
        // no data without samples or block maxima (an imported run).
        let has_data = !name.ends_with("-timeline.png") || fixture.samples.is_some();
        if has_data {
            assert!(seen.blue >= 100, "{name} has no chart blue: {seen:?}");
        }
    }
}

// -------------------------------------------------------- the campaign page

/// The width the report must fit: `--png`'s and a common screen's.
const PAGE_WIDTH: u32 = 1280;

/// A series of `n` samples (1 ms apart) recorded by rtlab's own recorder:
/// `base` plus up to 4 ms, with `spike` ns once and a deadline missed
/// every 500th.
fn campaign_series(name: &str, metric: &str, seed: u64, base: u64, spike: u64) -> Series {
    let n = 5_000;
    let mut recorder = SeriesRecorder::new(None);
    let mut x = seed;
    for i in 0..n {
        // An LCG: the same figures on every run.
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let latency = if i == n / 2 {
            spike
        } else {
            base + (x >> 33) % 4_000_000
        };
        recorder.record(latency, i * 1_000_000 + latency, u64::from(i % 500 == 499));
    }
    let fifo = SchedParams {
        policy: Policy::Fifo,
        priority: 80,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: metric.into(),
        cpu: Some(0),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 1,
            pinned_cpu: Some(0),
            requested: fifo,
            actual: Some(fifo),
            timer_slack_ns: Some(1),
        },
        stats: recorder.stats(),
    }
}

/// A campaign as long as real ones get: a timer probe and a net probe
/// (series `response`, `response_from_send`, `send_lag`), loads `idle`
/// and `dohell-no-stat` × `promoted` and `not-promoted`, two repeats;
/// not promoted, every figure is milliseconds (four and five digits of
/// µs, three decimals), and the labels are long
/// (`net/dohell-no-stat/not-promoted #2`).
fn campaign_results() -> Vec<RunResult> {
    let mut results = Vec::new();
    let mut index = 0;
    for repeat in 1..=2u32 {
        for probe in ["timer", "net"] {
            for load in ["idle", "dohell-no-stat"] {
                for configuration in ["promoted", "not-promoted"] {
                    index += 1;
                    let (base, spike) = match configuration {
                        "promoted" => (12_000, 1_795_643),
                        _ => (1_200_000, 35_027_458),
                    };
                    let seed = index as u64;
                    let series = match probe {
                        "timer" => {
                            vec![campaign_series("cpu0", "wakeup_latency", seed, base, spike)]
                        }
                        _ => ["response", "response_from_send", "send_lag"]
                            .iter()
                            .zip(["response_time", "response_time_from_send", "send_lag"])
                            .enumerate()
                            .map(|(i, (name, metric))| {
                                campaign_series(name, metric, seed * 10 + i as u64, base, spike)
                            })
                            .collect(),
                    };
                    results.push(RunResult {
                        schema: RUN_SCHEMA.into(),
                        id: format!("20261126T1053{index:02}Z-24465-{index}"),
                        probe: probe.into(),
                        status: RunStatus::Complete,
                        started_at: "2026-11-26T10:53:25.123456Z".into(),
                        ended_at: Some("2026-11-26T10:53:46.123456Z".into()),
                        elapsed_ns: 5_000_000_000,
                        command: vec!["rtlab".into(), "campaign".into(), "run".into()],
                        config: serde_json::json!({}),
                        effective: Effective::default(),
                        environment: Environment {
                            hostname: Some("bench-host-01".into()),
                            kernel_release: Some("6.18.44-fc-v657".into()),
                            kernel_version: Some("#1 SMP PREEMPT_DYNAMIC".into()),
                            preempt_model: "dynamic-voluntary".into(),
                            ..Environment::default()
                        },
                        series,
                        break_event: None,
                        loads: Vec::new(),
                        campaign: Some(CampaignRef {
                            name: "multi".into(),
                            execution: "20261126T105325Z-24465".into(),
                            index,
                            total: 16,
                            configuration: configuration.into(),
                            load: load.into(),
                            repeat,
                        }),
                        noise: None,
                        net: None,
                        traffic: None,
                        witness: None,
                        executive: None,
                        warnings: Vec::new(),
                    });
                }
            }
        }
    }
    results
}

/// Measures the page as laid out: the viewport's width, the page's
/// scrolling width, and per table shown its caption, right edge and its
/// last header cell's right edge. The page's own CSP forbids scripts, so
/// this runs on a copy without it.
const MEASURE: &str = r#"<script>
const lines = ['viewport ' + document.documentElement.clientWidth, 'scroll ' + document.documentElement.scrollWidth];
const h2 = [...document.querySelectorAll('h2')].map(h => h.id);
lines.push('h2 ' + h2.join(' '));
for (const table of document.querySelectorAll('table')) {
  const box = table.getBoundingClientRect();
  if (box.width === 0 || table.closest('details:not([open])')) continue;
  const cells = table.querySelectorAll('thead th');
  const last = cells[cells.length - 1].getBoundingClientRect();
  lines.push('table ' + Math.ceil(box.right) + ' ' + Math.ceil(last.right) + ' ' + cells[cells.length - 1].textContent + ' | ' + table.caption.textContent);
}
const out = document.createElement('pre');
out.id = 'rtlab-layout';
out.textContent = lines.join('\n');
document.body.appendChild(out);
</script>"#;

/// The lines [`MEASURE`] wrote into the page.
fn layout(dom: &str) -> Vec<String> {
    let start = dom
        .find("<pre id=\"rtlab-layout\">")
        .unwrap_or_else(|| panic!("no measurements in the DOM:\n{dom}"));
    let text = &dom[start + "<pre id=\"rtlab-layout\">".len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    text.lines()
        .map(|l| {
            l.replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
        })
        .collect()
}

/// Issue 16 item 17: in a multi-probe campaign the percentile table ran
/// past 1280 px and hid its max column. Every table of the campaign page
/// must now end within a 1280 px window (nothing to scroll sideways), the
/// percentile table's max column included, and the page must open with
/// the verdict.
#[test]
fn the_campaign_page_fits_1280_px_and_opens_with_the_verdict() {
    let chromium = require_chromium!();
    let dir = tempfile::tempdir().unwrap();
    let report = Report::build(
        campaign_results(),
        BTreeMap::new(),
        &ReportOptions::default(),
        &mut |_, _| {},
    );
    let labels: Vec<&str> = report.runs.iter().map(|r| r.label.as_str()).collect();
    assert!(
        labels.contains(&"net/dohell-no-stat/not-promoted #2"),
        "{labels:?}"
    );
    let page = report.to_html();
    std::fs::write(dir.path().join("campaign.html"), &page).unwrap();

    let csp = page
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("the report has a CSP");
    let csp_end = csp + page[csp..].find('>').unwrap() + 1;
    let unprotected = format!("{}{}", &page[..csp], &page[csp_end..]);
    assert_eq!(unprotected.matches("</body>").count(), 1);
    let measured = dir.path().join("measured.html");
    std::fs::write(
        &measured,
        unprotected.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .unwrap();
    let lines = layout(&dump_dom(&chromium, &measured, dir.path(), PAGE_WIDTH));
    note(&format!("layout at {PAGE_WIDTH} px:\n{}", lines.join("\n")));

    let number = |prefix: &str| -> u32 {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {prefix:?} in {lines:?}"))
    };
    let viewport = number("viewport ");
    assert_eq!(viewport, PAGE_WIDTH, "{lines:?}");
    assert!(
        number("scroll ") <= viewport,
        "the page scrolls sideways at {PAGE_WIDTH} px: {lines:?}"
    );
    // The verdict first, then the tables.
    let h2 = lines.iter().find_map(|l| l.strip_prefix("h2 ")).unwrap();
    assert!(h2.starts_with("verdict overview "), "{h2}");

    let tables: Vec<(u32, u32, &str)> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("table "))
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let right = parts.next().unwrap().parse().unwrap();
            let last = parts.next().unwrap().parse().unwrap();
            (right, last, parts.next().unwrap())
        })
        .collect();
    assert!(tables.len() >= 6, "{lines:?}");
    for (right, last, what) in &tables {
        assert!(
            right <= &viewport && last <= &viewport,
            "a table ends at {right} px, its last column at {last} px, past {viewport} px: {what}"
        );
    }
    let percentiles = tables
        .iter()
        .find(|(_, _, what)| what.ends_with("| latency percentiles (µs)"))
        .expect("the percentile table is shown");
    assert!(percentiles.2.starts_with("max |"), "{percentiles:?}");
}
