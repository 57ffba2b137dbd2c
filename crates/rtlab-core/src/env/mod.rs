//! The environment snapshot stored with every result.
//!
//! A latency figure means little without knowing what it was measured on: an
//! RT kernel with isolated CPUs and a pinned governor behaves nothing like a
//! stock kernel in a VM. This module records the facts needed to interpret a
//! result later, reading only /proc and /sys (never running programs), so it
//! is cheap, side-effect free and works in minimal containers.
//!
//! Capture never fails: on a locked-down or unusual system any value that
//! cannot be read is simply `None`, because a partial snapshot is still far
//! more useful than aborting a measurement.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The system facts stored next to a measurement.
///
/// `#[serde(default)]` lets results written by older rtlab versions (with
/// fewer fields) still load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Environment {
    /// uname nodename.
    pub hostname: Option<String>,
    /// uname -r.
    pub kernel_release: Option<String>,
    /// uname -v, e.g. "#1 SMP PREEMPT_DYNAMIC ...".
    pub kernel_version: Option<String>,
    /// uname -m, e.g. "x86_64".
    pub machine: Option<String>,

    /// One of "rt", "full", "voluntary", "none", "lazy", "dynamic-full",
    /// "dynamic-voluntary", "dynamic-none", "dynamic-lazy",
    /// "dynamic-unknown" or "unknown".
    pub preempt_model: String,
    /// Which files / strings `preempt_model` was derived from.
    pub preempt_sources: Vec<String>,
    /// /sys/kernel/realtime == "1", if the file exists.
    pub realtime_sysfs: Option<bool>,
    /// Raw /sys/kernel/debug/sched/preempt, e.g. "none voluntary (full) lazy".
    pub sched_preempt: Option<String>,

    /// /proc/cmdline.
    pub cmdline: Option<String>,

    pub cpu_model: Option<String>,
    /// Number of "processor" entries in /proc/cpuinfo.
    pub cpu_count: Option<u32>,
    /// Kernel CPU list, e.g. "0-3".
    pub online_cpus: Option<String>,
    pub isolated_cpus: Option<String>,
    pub nohz_full: Option<String>,

    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,

    /// cpu name ("cpu0") -> scaling governor; empty without cpufreq.
    pub governors: BTreeMap<String, String>,
    pub cpuidle_driver: Option<String>,
    pub cpuidle_governor: Option<String>,

    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
    pub timer_migration: Option<i64>,

    /// Current (bracketed) value of transparent_hugepage/enabled.
    pub thp_enabled: Option<String>,
    /// Current (bracketed) value of transparent_hugepage/defrag.
    pub thp_defrag: Option<String>,

    pub swap_total_kb: Option<u64>,
    pub mem_total_kb: Option<u64>,
    /// Number of active swap areas in /proc/swaps.
    pub swap_devices: Option<u32>,

    /// systemd-detect-virt style name: "none", "vm" (some hypervisor, not
    /// identified), "kvm", "qemu", "vmware", "oracle" (VirtualBox),
    /// "microsoft" (Hyper-V), "xen", "amazon", "google", "firecracker",
    /// "docker", "podman". A hypervisor wins over a container marker.
    pub virtualization: Option<String>,
    /// What `virtualization` was decided from.
    pub virtualization_evidence: Vec<String>,

    pub rtlab_version: String,
    /// RFC 3339 UTC, seconds precision.
    pub captured_at: String,
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            hostname: None,
            kernel_release: None,
            kernel_version: None,
            machine: None,
            // "unknown" rather than "" so a result missing this field still
            // reads sensibly in reports.
            preempt_model: UNKNOWN.to_string(),
            preempt_sources: Vec::new(),
            realtime_sysfs: None,
            sched_preempt: None,
            cmdline: None,
            cpu_model: None,
            cpu_count: None,
            online_cpus: None,
            isolated_cpus: None,
            nohz_full: None,
            clocksource: None,
            available_clocksources: Vec::new(),
            governors: BTreeMap::new(),
            cpuidle_driver: None,
            cpuidle_governor: None,
            sched_rt_runtime_us: None,
            sched_rt_period_us: None,
            timer_migration: None,
            thp_enabled: None,
            thp_defrag: None,
            swap_total_kb: None,
            mem_total_kb: None,
            swap_devices: None,
            virtualization: None,
            virtualization_evidence: Vec::new(),
            rtlab_version: String::new(),
            captured_at: String::new(),
        }
    }
}

/// The uname(2) fields, passed in explicitly so tests can fake them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

impl Uname {
    /// uname(2) of the running system; empty fields if the call fails.
    pub fn current() -> Uname {
        // SAFETY: utsname is plain C arrays, so all-zero is a valid value, and
        // uname only writes NUL-terminated strings into them.
        let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut uts) } != 0 {
            return Uname::default();
        }
        Uname {
            sysname: c_chars_to_string(&uts.sysname),
            nodename: c_chars_to_string(&uts.nodename),
            release: c_chars_to_string(&uts.release),
            version: c_chars_to_string(&uts.version),
            machine: c_chars_to_string(&uts.machine),
        }
    }
}

fn c_chars_to_string(chars: &[libc::c_char]) -> String {
    // SAFETY: c_char and u8 have the same size and layout.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) };
    // from_bytes_until_nul rather than CStr::from_ptr: never reads past the
    // array even if the kernel (or a zeroed struct) left no terminator.
    match CStr::from_bytes_until_nul(bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Reads a small text file, trimmed; `None` if unreadable or empty.
///
/// Trailing NULs are trimmed too, because device-tree files
/// (/proc/device-tree/model) end with one.
pub fn read_trimmed(path: &Path) -> Option<String> {
    // Lossy decoding: a stray non-UTF-8 byte in e.g. a DMI string should not
    // cost us the whole value.
    let bytes = fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let trimmed = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if trimmed.is_empty() {
        None
    } else {
        Some(trimmed.to_string())
    }
}

const UNKNOWN: &str = "unknown";
const REALTIME: &str = "/sys/kernel/realtime";
const SCHED_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";
const CPU_DIR: &str = "/sys/devices/system/cpu";
/// The preemption models a PREEMPT_DYNAMIC kernel can switch between.
const DYNAMIC_MODELS: &[&str] = &["none", "voluntary", "full", "lazy"];

/// Reads absolute system paths relative to a root, so tests can point the
/// whole capture at a fake tree.
struct Sys {
    root: PathBuf,
}

impl Sys {
    fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    fn read(&self, abs: &str) -> Option<String> {
        read_trimmed(&self.path(abs))
    }

    fn read_i64(&self, abs: &str) -> Option<i64> {
        self.read(abs)?.parse().ok()
    }

    fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }
}

/// How a source of the preemption model says it is a PREEMPT_DYNAMIC
/// kernel's boot default read from its build configuration.
const BOOT_DEFAULT: &str = "the boot default of CONFIG_PREEMPT_DYNAMIC";

impl Environment {
    /// For a PREEMPT_DYNAMIC kernel whose model was read from its build
    /// configuration (debugfs unreadable, no `preempt=`): that file and
    /// the model it boots with (`none`, `voluntary`, `full`, `lazy`). The
    /// live model differs if someone changed it through debugfs since.
    pub fn preempt_boot_default(&self) -> Option<(&str, &str)> {
        let model = self.preempt_model.strip_prefix("dynamic-")?;
        let source = self
            .preempt_sources
            .iter()
            .find(|s| s.contains(BOOT_DEFAULT))?;
        let (path, _) = source.split_once(": ")?;
        Some((path, model))
    }
}

/// The running kernel's build configuration is kept here (gzipped) with
/// CONFIG_IKCONFIG_PROC.
const PROC_CONFIG: &str = "/proc/config.gz";
/// More than any kernel's configuration (about 300 KiB): a bigger file,
/// or one that inflates to more, is not read.
const CONFIG_MAX_BYTES: u64 = 4 << 20;

/// The running kernel's build configuration and where it was read:
/// /boot/config-RELEASE (as distributions install it), else
/// /proc/config.gz. None when neither is readable.
fn build_config(sys: &Sys, release: &str) -> Option<(String, String)> {
    use std::io::Read;
    // A release with a `/` is no file name (and no real release).
    if !release.is_empty() && !release.contains('/') && release != ".." {
        let boot = format!("/boot/config-{release}");
        let mut text = String::new();
        let read = fs::File::open(sys.path(&boot))
            .and_then(|f| f.take(CONFIG_MAX_BYTES).read_to_string(&mut text));
        if read.is_ok() && !text.is_empty() {
            return Some((boot, text));
        }
    }
    let file = fs::File::open(sys.path(PROC_CONFIG)).ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file.take(CONFIG_MAX_BYTES))
        .take(CONFIG_MAX_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    (!text.is_empty()).then(|| (PROC_CONFIG.to_string(), text))
}

/// The preemption model a build configuration selects: its
/// CONFIG_PREEMPT_NONE/VOLUNTARY/PREEMPT/LAZY choice (with
/// CONFIG_PREEMPT_DYNAMIC, the model the kernel boots with unless
/// `preempt=` says otherwise), and the line that says so.
fn config_model(config: &str) -> Option<(&'static str, &'static str)> {
    const CHOICE: [(&str, &str); 4] = [
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT=y", "full"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
    ];
    config
        .lines()
        .map(str::trim)
        .find_map(|line| CHOICE.iter().find(|(set, _)| *set == line).copied())
        .map(|(line, model)| (model, line))
}

impl Environment {
    /// Reads the running system. Never fails and never panics: anything
    /// unreadable is `None`.
    pub fn capture() -> Environment {
        Environment::capture_from(Path::new("/"), Uname::current())
    }

    /// Like [`Environment::capture`], but every /proc and /sys path is read
    /// under `root`, and the uname fields come from `uname`.
    pub fn capture_from(root: &Path, uname: Uname) -> Environment {
        let sys = Sys {
            root: root.to_path_buf(),
        };

        let cmdline = sys.read("/proc/cmdline");
        let cpuinfo = sys
            .read("/proc/cpuinfo")
            .map(|text| parse_cpuinfo(&text))
            .unwrap_or_default();

        let realtime = sys.read(REALTIME);
        let sched_preempt = sys.read(SCHED_PREEMPT);
        let (preempt_model, preempt_sources) = preempt_model(
            realtime.as_deref(),
            sched_preempt.as_deref(),
            &uname.version,
            cmdline.as_deref(),
            &|| build_config(&sys, &uname.release),
        );

        let meminfo = sys.read("/proc/meminfo").unwrap_or_default();
        let available_clocksources: Vec<String> = sys
            .read("/sys/devices/system/clocksource/clocksource0/available_clocksource")
            .map(|v| v.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();

        let (virtualization, virtualization_evidence) = detect_virtualization(&VirtInput {
            hypervisor_flag: cpuinfo.hypervisor_flag,
            sys_vendor: sys.read("/sys/class/dmi/id/sys_vendor"),
            product_name: sys.read("/sys/class/dmi/id/product_name"),
            hypervisor_type: sys.read("/sys/hypervisor/type"),
            clocksources: available_clocksources.clone(),
            containerenv: sys.exists("/run/.containerenv"),
            dockerenv: sys.exists("/.dockerenv"),
        });

        Environment {
            hostname: non_empty(uname.nodename),
            kernel_release: non_empty(uname.release),
            kernel_version: non_empty(uname.version),
            machine: non_empty(uname.machine),

            preempt_model,
            preempt_sources,
            realtime_sysfs: realtime.map(|v| v == "1"),
            sched_preempt,

            cmdline,

            cpu_model: cpuinfo.model,
            cpu_count: cpuinfo.count,
            online_cpus: sys.read("/sys/devices/system/cpu/online"),
            isolated_cpus: sys.read("/sys/devices/system/cpu/isolated"),
            // CONFIG_NO_HZ_FULL kernels booted without nohz_full= print "(null)".
            nohz_full: sys
                .read("/sys/devices/system/cpu/nohz_full")
                .filter(|v| v != "(null)"),

            clocksource: sys
                .read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            available_clocksources,

            governors: read_governors(&sys),
            cpuidle_driver: sys.read("/sys/devices/system/cpu/cpuidle/current_driver"),
            // Kernels before 5.x without cpuidle_sysfs_switch only have the
            // read-only variant.
            cpuidle_governor: sys
                .read("/sys/devices/system/cpu/cpuidle/current_governor")
                .or_else(|| sys.read("/sys/devices/system/cpu/cpuidle/current_governor_ro")),

            sched_rt_runtime_us: sys.read_i64("/proc/sys/kernel/sched_rt_runtime_us"),
            sched_rt_period_us: sys.read_i64("/proc/sys/kernel/sched_rt_period_us"),
            timer_migration: sys.read_i64("/proc/sys/kernel/timer_migration"),

            thp_enabled: sys
                .read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|v| bracketed(&v)),
            thp_defrag: sys
                .read("/sys/kernel/mm/transparent_hugepage/defrag")
                .and_then(|v| bracketed(&v)),

            swap_total_kb: meminfo_kb(&meminfo, "SwapTotal"),
            mem_total_kb: meminfo_kb(&meminfo, "MemTotal"),
            swap_devices: sys
                .read("/proc/swaps")
                .map(|v| v.lines().skip(1).filter(|l| !l.trim().is_empty()).count() as u32),

            virtualization,
            virtualization_evidence,

            rtlab_version: crate::VERSION.to_string(),
            captured_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        }
    }
}

fn non_empty(s: String) -> Option<String> {
    let t = s.trim();
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// Derives the preemption model, returning it and the sources used.
///
/// PREEMPT_RT in the version string is checked before sched/preempt, since
/// RT is orthogonal to the dynamic model and is what matters most for
/// latency; everything else follows the order: sysfs, debugfs, cmdline,
/// uname.
///
/// Without debugfs (not mounted, or not root) a PREEMPT_DYNAMIC kernel's
/// model is the one it booted with: `preempt=` on the command line, else
/// the default of its build configuration (`build_config`, read only
/// then: /boot/config-RELEASE or /proc/config.gz), which also tells a
/// plain SMP kernel's none from voluntary.
fn preempt_model(
    realtime: Option<&str>,
    sched_preempt: Option<&str>,
    version: &str,
    cmdline: Option<&str>,
    build_config: &dyn Fn() -> Option<(String, String)>,
) -> (String, Vec<String>) {
    if realtime == Some("1") {
        return ("rt".to_string(), vec![REALTIME.to_string()]);
    }

    let tokens: Vec<&str> = version.split_whitespace().collect();
    let has = |t: &str| tokens.contains(&t);
    // Out-of-tree RT patch sets for older kernels wrote "PREEMPT RT".
    if has("PREEMPT_RT") || tokens.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        return ("rt".to_string(), vec!["uname -v: PREEMPT_RT".to_string()]);
    }
    let dynamic = has("PREEMPT_DYNAMIC");
    let prefixed = |model: &str| {
        if dynamic {
            format!("dynamic-{model}")
        } else {
            model.to_string()
        }
    };
    let mut sources = Vec::new();

    // debugfs shows the live model (it can be changed at runtime), so it
    // beats anything decided at boot.
    if let Some(current) = sched_preempt.and_then(parenthesized) {
        if DYNAMIC_MODELS.contains(&current) {
            sources.push(SCHED_PREEMPT.to_string());
            if dynamic {
                sources.push("uname -v: PREEMPT_DYNAMIC".to_string());
            }
            return (prefixed(current), sources);
        }
    }

    if dynamic {
        sources.push("uname -v: PREEMPT_DYNAMIC".to_string());
        // Without debugfs (non-root), preempt= on the command line is the
        // best remaining evidence of the boot-time model; the last one wins,
        // as in the kernel's own parsing. Arguments after "--" belong to init,
        // not the kernel.
        let from_cmdline = cmdline
            .unwrap_or("")
            .split_whitespace()
            .take_while(|arg| *arg != "--")
            .filter_map(|arg| arg.strip_prefix("preempt="))
            .last()
            .filter(|m| DYNAMIC_MODELS.contains(m));
        if let Some(model) = from_cmdline {
            sources.push(format!("/proc/cmdline: preempt={model}"));
            return (prefixed(model), sources);
        }
        if let Some((path, config)) = build_config() {
            let dynamic_config = config
                .lines()
                .any(|l| l.trim() == "CONFIG_PREEMPT_DYNAMIC=y");
            if let Some((model, line)) = config_model(&config).filter(|_| dynamic_config) {
                sources.push(format!(
                    "{path}: {line}, {BOOT_DEFAULT} (no preempt= on the command line)"
                ));
                return (prefixed(model), sources);
            }
        }
        return ("dynamic-unknown".to_string(), sources);
    }
    if has("PREEMPT_LAZY") {
        return (
            "lazy".to_string(),
            vec!["uname -v: PREEMPT_LAZY".to_string()],
        );
    }
    if has("PREEMPT") {
        return ("full".to_string(), vec!["uname -v: PREEMPT".to_string()]);
    }
    // A plain "SMP" kernel is none or voluntary; the version string does not
    // say which, its build configuration does.
    if let Some((path, config)) = build_config() {
        if let Some((model @ ("none" | "voluntary"), line)) = config_model(&config) {
            return (model.to_string(), vec![format!("{path}: {line}")]);
        }
    }
    (UNKNOWN.to_string(), sources)
}

/// The word written as "(word)" in e.g. "none voluntary (full) lazy".
fn parenthesized(text: &str) -> Option<&str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
}

/// The word written as "[word]" in e.g. "always [madvise] never".
fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    non_empty(text[start..start + len].to_string())
}

#[derive(Debug, Default, PartialEq)]
struct CpuInfo {
    model: Option<String>,
    count: Option<u32>,
    /// `None` when cpuinfo has no "flags" line at all (e.g. arm), so the
    /// absence of the flag proves nothing.
    hypervisor_flag: Option<bool>,
}

fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model_name = None;
    let mut arm_processor = None;
    let mut hardware = None;
    let mut cpu_part = None;
    let mut count = 0u32;
    let mut hypervisor_flag = None;

    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let first = |slot: &mut Option<String>| {
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value.to_string());
            }
        };
        match key.trim() {
            "processor" => count += 1,
            "model name" => first(&mut model_name),
            // 32-bit arm puts its model here, capitalised.
            "Processor" => first(&mut arm_processor),
            "Hardware" => first(&mut hardware),
            "CPU part" => first(&mut cpu_part),
            "flags" if hypervisor_flag.is_none() => {
                hypervisor_flag = Some(value.split_whitespace().any(|f| f == "hypervisor"));
            }
            _ => {}
        }
    }

    CpuInfo {
        model: model_name.or(arm_processor).or(hardware).or(cpu_part),
        count: (count > 0).then_some(count),
        hypervisor_flag,
    }
}

/// A "Key:   123 kB" value from /proc/meminfo.
fn meminfo_kb(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let (k, rest) = line.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn read_governors(sys: &Sys) -> BTreeMap<String, String> {
    let mut governors = BTreeMap::new();
    let Ok(entries) = fs::read_dir(sys.path(CPU_DIR)) else {
        return governors;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only cpuN directories; cpufreq, cpuidle etc. live alongside them.
        let is_cpu = name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        if let Some(gov) = read_trimmed(&entry.path().join("cpufreq/scaling_governor")) {
            governors.insert(name, gov);
        }
    }
    governors
}

#[derive(Debug, Clone)]
struct VirtInput {
    hypervisor_flag: Option<bool>,
    sys_vendor: Option<String>,
    product_name: Option<String>,
    hypervisor_type: Option<String>,
    /// Available clocksources: paravirtual ones name the hypervisor even
    /// when DMI is absent (e.g. Firecracker, which has no DMI tables).
    clocksources: Vec<String>,
    containerenv: bool,
    dockerenv: bool,
}

/// Decides the virtualization name and the evidence for it.
///
/// Unlike systemd-detect-virt, a hypervisor wins over a container marker:
/// for latency the hypervisor is what matters, and /.dockerenv is also left
/// behind in VM root filesystems built from Docker images. The evidence
/// keeps both.
fn detect_virtualization(input: &VirtInput) -> (Option<String>, Vec<String>) {
    let mut evidence = Vec::new();

    if input.containerenv {
        evidence.push("/run/.containerenv exists".to_string());
    }
    if input.dockerenv {
        evidence.push("/.dockerenv exists".to_string());
    }
    if input.hypervisor_flag == Some(true) {
        evidence.push("cpuinfo flags: hypervisor".to_string());
    }
    if let Some(v) = &input.sys_vendor {
        evidence.push(format!("dmi sys_vendor: {v}"));
    }
    if let Some(p) = &input.product_name {
        evidence.push(format!("dmi product_name: {p}"));
    }
    if let Some(t) = &input.hypervisor_type {
        evidence.push(format!("/sys/hypervisor/type: {t}"));
    }
    let pv_clock = input.clocksources.iter().find_map(|c| {
        let name = pv_clocksource_hypervisor(c)?;
        evidence.push(format!("clocksource: {c}"));
        Some(name)
    });

    let container = if input.containerenv {
        Some("podman")
    } else if input.dockerenv {
        Some("docker")
    } else {
        None
    };
    let dmi = dmi_hypervisor(
        input.sys_vendor.as_deref().unwrap_or(""),
        input.product_name.as_deref().unwrap_or(""),
    );
    let hypervisor_type = input
        .hypervisor_type
        .as_deref()
        .map(|t| t.to_ascii_lowercase());

    let name = dmi
        .map(str::to_string)
        .or(hypervisor_type)
        .or(pv_clock.map(str::to_string))
        .or_else(|| (input.hypervisor_flag == Some(true)).then(|| "vm".to_string()))
        .or(container.map(str::to_string))
        // Only claim bare metal when there was a flags line to look at.
        .or_else(|| (input.hypervisor_flag == Some(false)).then(|| "none".to_string()));
    (name, evidence)
}

/// Hypervisor implied by a paravirtual clocksource, which only registers
/// when running under that hypervisor.
fn pv_clocksource_hypervisor(clocksource: &str) -> Option<&'static str> {
    match clocksource {
        "kvm-clock" => Some("kvm"),
        "xen" => Some("xen"),
        c if c.starts_with("hyperv_clocksource") => Some("microsoft"),
        _ => None,
    }
}

/// Identifies a hypervisor from DMI strings.
fn dmi_hypervisor(vendor: &str, product: &str) -> Option<&'static str> {
    let vendor = vendor.to_ascii_lowercase();
    let product = product.to_ascii_lowercase();
    let either = |needle: &str| vendor.contains(needle) || product.contains(needle);

    if either("firecracker") {
        Some("firecracker")
    } else if either("kvm") {
        // Checked before "qemu": KVM guests often report a QEMU vendor with a
        // KVM product (e.g. "Red Hat" / "KVM").
        Some("kvm")
    } else if either("qemu") {
        Some("qemu")
    } else if either("vmware") {
        Some("vmware")
    } else if either("virtualbox") || vendor.contains("innotek") {
        Some("oracle")
    } else if either("xen") {
        Some("xen")
    } else if vendor.contains("microsoft") && product.contains("virtual machine") {
        // Microsoft also sells bare-metal Surface machines; only its Hyper-V
        // guests say "Virtual Machine".
        Some("microsoft")
    } else if vendor.contains("amazon") && !product.contains("metal") {
        // EC2 "*.metal" instances carry the Amazon vendor string but no
        // hypervisor.
        Some("amazon")
    } else if vendor == "google" && !product.contains("metal") {
        Some("google")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn write(root: &Path, abs: &str, content: &str) {
        let path = root.join(abs.trim_start_matches('/'));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn uname(version: &str) -> Uname {
        Uname {
            sysname: "Linux".into(),
            nodename: "testhost".into(),
            release: "6.12.0-test".into(),
            version: version.into(),
            machine: "x86_64".into(),
        }
    }

    const CPUINFO_VM: &str = "\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic hypervisor lahf_lm
bogomips\t: 5000.00

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic hypervisor lahf_lm
bogomips\t: 5000.00
";

    const MEMINFO: &str = "\
MemTotal:        4028440 kB
MemFree:         1234567 kB
SwapTotal:       2097148 kB
SwapFree:        2097148 kB
";

    const SWAPS: &str = "\
Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
/dev/vda2                               partition\t2097148\t\t0\t\t-2
";

    fn full_tree() -> TempDir {
        let dir = TempDir::new().unwrap();
        let r = dir.path();
        write(
            r,
            "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz root=/dev/vda1 isolcpus=1 nohz_full=1\n",
        );
        write(r, "/proc/cpuinfo", CPUINFO_VM);
        write(r, "/proc/meminfo", MEMINFO);
        write(r, "/proc/swaps", SWAPS);
        write(r, "/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
        write(r, "/proc/sys/kernel/sched_rt_period_us", "1000000\n");
        write(r, "/proc/sys/kernel/timer_migration", "1\n");
        write(r, SCHED_PREEMPT, "none voluntary (full) lazy\n");
        write(r, "/sys/devices/system/cpu/online", "0-1\n");
        write(r, "/sys/devices/system/cpu/isolated", "1\n");
        write(r, "/sys/devices/system/cpu/nohz_full", "1\n");
        write(
            r,
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        );
        write(
            r,
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "schedutil\n",
        );
        write(
            r,
            "/sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
            "performance\n",
        );
        write(
            r,
            "/sys/devices/system/cpu/cpuidle/current_driver",
            "intel_idle\n",
        );
        write(
            r,
            "/sys/devices/system/cpu/cpuidle/current_governor",
            "menu\n",
        );
        write(
            r,
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        write(
            r,
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet acpi_pm \n",
        );
        write(
            r,
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        write(
            r,
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        );
        write(r, "/sys/class/dmi/id/sys_vendor", "QEMU\n");
        write(
            r,
            "/sys/class/dmi/id/product_name",
            "Standard PC (Q35 + ICH9, 2009)\n",
        );
        dir
    }

    #[test]
    fn full_tree_fields() {
        let dir = full_tree();
        let env = Environment::capture_from(
            dir.path(),
            uname("#1 SMP PREEMPT_DYNAMIC Thu Jan  1 00:00:00 UTC 2025"),
        );

        assert_eq!(env.hostname.as_deref(), Some("testhost"));
        assert_eq!(env.kernel_release.as_deref(), Some("6.12.0-test"));
        assert_eq!(
            env.kernel_version.as_deref(),
            Some("#1 SMP PREEMPT_DYNAMIC Thu Jan  1 00:00:00 UTC 2025")
        );
        assert_eq!(env.machine.as_deref(), Some("x86_64"));

        assert_eq!(env.preempt_model, "dynamic-full");
        assert_eq!(
            env.preempt_sources,
            vec![
                SCHED_PREEMPT.to_string(),
                "uname -v: PREEMPT_DYNAMIC".to_string()
            ]
        );
        assert_eq!(env.realtime_sysfs, None);
        assert_eq!(
            env.sched_preempt.as_deref(),
            Some("none voluntary (full) lazy")
        );

        assert_eq!(
            env.cmdline.as_deref(),
            Some("BOOT_IMAGE=/vmlinuz root=/dev/vda1 isolcpus=1 nohz_full=1")
        );
        assert_eq!(
            env.cpu_model.as_deref(),
            Some("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz")
        );
        assert_eq!(env.cpu_count, Some(2));
        assert_eq!(env.online_cpus.as_deref(), Some("0-1"));
        assert_eq!(env.isolated_cpus.as_deref(), Some("1"));
        assert_eq!(env.nohz_full.as_deref(), Some("1"));

        assert_eq!(env.clocksource.as_deref(), Some("tsc"));
        assert_eq!(env.available_clocksources, vec!["tsc", "hpet", "acpi_pm"]);

        let expected: BTreeMap<String, String> = [
            ("cpu0".to_string(), "performance".to_string()),
            ("cpu1".to_string(), "schedutil".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(env.governors, expected);
        assert_eq!(env.cpuidle_driver.as_deref(), Some("intel_idle"));
        assert_eq!(env.cpuidle_governor.as_deref(), Some("menu"));

        assert_eq!(env.sched_rt_runtime_us, Some(950_000));
        assert_eq!(env.sched_rt_period_us, Some(1_000_000));
        assert_eq!(env.timer_migration, Some(1));

        assert_eq!(env.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(env.thp_defrag.as_deref(), Some("madvise"));

        assert_eq!(env.swap_total_kb, Some(2_097_148));
        assert_eq!(env.mem_total_kb, Some(4_028_440));
        assert_eq!(env.swap_devices, Some(1));

        assert_eq!(env.virtualization.as_deref(), Some("qemu"));
        assert!(env
            .virtualization_evidence
            .contains(&"cpuinfo flags: hypervisor".to_string()));
        assert!(env
            .virtualization_evidence
            .contains(&"dmi sys_vendor: QEMU".to_string()));

        assert_eq!(env.rtlab_version, crate::VERSION);
        assert!(
            humantime::parse_rfc3339(&env.captured_at).is_ok(),
            "{}",
            env.captured_at
        );
    }

    #[test]
    fn realtime_sysfs_means_rt() {
        let dir = full_tree();
        write(dir.path(), REALTIME, "1\n");
        let env = Environment::capture_from(dir.path(), uname("#1 SMP PREEMPT_RT"));
        assert_eq!(env.preempt_model, "rt");
        assert_eq!(env.preempt_sources, vec![REALTIME.to_string()]);
        assert_eq!(env.realtime_sysfs, Some(true));
    }

    #[test]
    fn empty_tree_is_all_unknown() {
        let dir = TempDir::new().unwrap();
        let env = Environment::capture_from(dir.path(), Uname::default());
        let expected = Environment {
            rtlab_version: crate::VERSION.to_string(),
            captured_at: env.captured_at.clone(),
            ..Environment::default()
        };
        assert_eq!(env, expected);
        assert_eq!(env.preempt_model, "unknown");
    }

    #[test]
    fn missing_root_does_not_panic() {
        let env = Environment::capture_from(Path::new("/nonexistent/rtlab/root"), Uname::default());
        assert_eq!(env.cpu_count, None);
        assert!(env.governors.is_empty());
    }

    #[test]
    fn captures_this_machine() {
        let env = Environment::capture();
        assert!(env.kernel_release.is_some());
        assert!(env.cpu_count.unwrap_or(0) >= 1, "{env:?}");
        assert_eq!(env.rtlab_version, crate::VERSION);
    }

    #[test]
    fn serde_round_trip() {
        let dir = full_tree();
        let env = Environment::capture_from(dir.path(), uname("#1 SMP PREEMPT_DYNAMIC"));
        let json = serde_json::to_string(&env).unwrap();
        let back: Environment = serde_json::from_str(&json).unwrap();
        assert_eq!(back, env);
        // Keys are plain snake_case field names.
        assert!(json.contains("\"preempt_model\":\"dynamic-full\""));
        assert!(json.contains("\"swap_total_kb\":2097148"));
    }

    #[test]
    fn deserialize_empty_object_uses_defaults() {
        let env: Environment = serde_json::from_str("{}").unwrap();
        assert_eq!(env, Environment::default());
        assert_eq!(env.preempt_model, "unknown");
        assert!(env.governors.is_empty());
    }

    #[test]
    fn preempt_from_version_string() {
        let model = |v: &str| preempt_model(None, None, v, None, &|| None).0;
        assert_eq!(model("#1 SMP PREEMPT_RT Mon"), "rt");
        assert_eq!(model("#1 SMP PREEMPT RT Mon"), "rt");
        assert_eq!(model("#1 SMP PREEMPT_DYNAMIC Mon"), "dynamic-unknown");
        assert_eq!(model("#1 SMP PREEMPT_LAZY Mon"), "lazy");
        assert_eq!(model("#1 SMP PREEMPT Mon"), "full");
        assert_eq!(model("#1 SMP Mon"), "unknown");
        assert_eq!(model(""), "unknown");
        // Realtime present but "0" is not RT.
        assert_eq!(
            preempt_model(Some("0"), None, "#1 SMP", None, &|| None).0,
            "unknown"
        );
    }

    #[test]
    fn preempt_from_debugfs_and_cmdline() {
        // Without PREEMPT_DYNAMIC in the version, no prefix.
        let (m, s) = preempt_model(None, Some("(none) voluntary full"), "#1 SMP", None, &|| {
            None
        });
        assert_eq!(m, "none");
        assert_eq!(s, vec![SCHED_PREEMPT.to_string()]);
        assert_eq!(
            preempt_model(
                None,
                Some("none voluntary full (lazy)"),
                "#1 SMP PREEMPT_DYNAMIC",
                None,
                &|| None
            )
            .0,
            "dynamic-lazy"
        );
        // Garbage in debugfs falls through to the other sources.
        assert_eq!(
            preempt_model(None, Some("???"), "#1 SMP PREEMPT", None, &|| None).0,
            "full"
        );

        let (m, s) = preempt_model(
            None,
            None,
            "#1 SMP PREEMPT_DYNAMIC",
            Some("quiet preempt=full preempt=voluntary -- preempt=none"),
            &|| None,
        );
        assert_eq!(m, "dynamic-voluntary");
        assert!(s.contains(&"/proc/cmdline: preempt=voluntary".to_string()));
        // preempt= means nothing without PREEMPT_DYNAMIC.
        assert_eq!(
            preempt_model(None, None, "#1 SMP", Some("preempt=none"), &|| None).0,
            "unknown"
        );
    }

    /// A PREEMPT_DYNAMIC kernel's config: `choice` is its default model.
    fn dynamic_config(choice: &str) -> String {
        format!(
            "# Linux/x86 6.12.0 Kernel Configuration\nCONFIG_PREEMPT_BUILD=y\n# CONFIG_PREEMPT_NONE is not set\n{choice}=y\nCONFIG_PREEMPT_COUNT=y\nCONFIG_PREEMPTION=y\nCONFIG_PREEMPT_DYNAMIC=y\n"
        )
    }

    fn write_gz(root: &Path, abs: &str, content: &str) {
        use std::io::Write;
        let path = root.join(abs.trim_start_matches('/'));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            fs::File::create(path).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(content.as_bytes()).unwrap();
        gz.finish().unwrap();
    }

    /// Issue 16 item 17: a PREEMPT_DYNAMIC kernel without debugfs said
    /// `dynamic-unknown` although its build configuration knows the model.
    #[test]
    fn preempt_dynamic_without_debugfs_reads_the_build_configuration() {
        let dynamic = uname("#1 SMP PREEMPT_DYNAMIC Mon");
        let dir = TempDir::new().unwrap();
        let r = dir.path();
        write(r, "/proc/cmdline", "quiet console=ttyS0 -- preempt=full\n");
        // Nothing to read: unknown, as before.
        let env = Environment::capture_from(r, dynamic.clone());
        assert_eq!(env.preempt_model, "dynamic-unknown");

        // /proc/config.gz (gzipped, as the kernel serves it).
        write_gz(r, PROC_CONFIG, &dynamic_config("CONFIG_PREEMPT_VOLUNTARY"));
        let env = Environment::capture_from(r, dynamic.clone());
        assert_eq!(env.preempt_model, "dynamic-voluntary");
        assert_eq!(
            env.preempt_sources,
            [
                "uname -v: PREEMPT_DYNAMIC",
                "/proc/config.gz: CONFIG_PREEMPT_VOLUNTARY=y, the boot default of CONFIG_PREEMPT_DYNAMIC (no preempt= on the command line)"
            ]
        );

        assert_eq!(env.preempt_boot_default(), Some((PROC_CONFIG, "voluntary")));

        // The distribution's /boot/config-RELEASE comes first.
        write(
            r,
            "/boot/config-6.12.0-test",
            &dynamic_config("CONFIG_PREEMPT"),
        );
        let env = Environment::capture_from(r, dynamic.clone());
        assert_eq!(env.preempt_model, "dynamic-full");
        assert!(
            env.preempt_sources[1].starts_with("/boot/config-6.12.0-test: CONFIG_PREEMPT=y"),
            "{:?}",
            env.preempt_sources
        );

        // preempt= on the kernel's command line overrides the default...
        write(r, "/proc/cmdline", "quiet preempt=none\n");
        let env = Environment::capture_from(r, dynamic.clone());
        assert_eq!(env.preempt_model, "dynamic-none");
        assert!(env
            .preempt_sources
            .contains(&"/proc/cmdline: preempt=none".to_string()));

        assert_eq!(env.preempt_boot_default(), None, "preempt= is no default");

        // ...and debugfs, the live model, overrides both.
        write(r, SCHED_PREEMPT, "none voluntary full (lazy)\n");
        let env = Environment::capture_from(r, dynamic);
        assert_eq!(env.preempt_model, "dynamic-lazy");
    }

    #[test]
    fn a_build_configuration_that_does_not_fit_the_kernel_is_not_believed() {
        let dynamic = uname("#1 SMP PREEMPT_DYNAMIC Mon");
        let dir = TempDir::new().unwrap();
        let r = dir.path();
        // Not a PREEMPT_DYNAMIC configuration: another kernel's.
        write(
            r,
            "/boot/config-6.12.0-test",
            "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT_DYNAMIC is not set\n",
        );
        assert_eq!(
            Environment::capture_from(r, dynamic.clone()).preempt_model,
            "dynamic-unknown"
        );
        // A corrupt /proc/config.gz is no configuration.
        fs::remove_file(r.join("boot/config-6.12.0-test")).unwrap();
        write(r, PROC_CONFIG, "not gzip at all");
        assert_eq!(
            Environment::capture_from(r, dynamic).preempt_model,
            "dynamic-unknown"
        );
        // A plain SMP kernel: none or voluntary, which the configuration
        // tells; a release with a `/` is not looked up under /boot.
        write_gz(r, PROC_CONFIG, "CONFIG_PREEMPT_NONE=y\n");
        let env = Environment::capture_from(r, uname("#1 SMP Mon"));
        assert_eq!(env.preempt_model, "none");
        assert_eq!(
            env.preempt_sources,
            ["/proc/config.gz: CONFIG_PREEMPT_NONE=y"]
        );
        let mut odd = uname("#1 SMP Mon");
        odd.release = "../../etc/x".into();
        assert_eq!(Environment::capture_from(r, odd).preempt_model, "none");
    }

    #[test]
    fn bracketed_values() {
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            bracketed("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(bracketed("always madvise never"), None);
        assert_eq!(bracketed("[]"), None);
        assert_eq!(bracketed("broken [value"), None);
    }

    #[test]
    fn cpuinfo_arm_and_bare_metal() {
        let arm = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd\n\
                   CPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n\
                   processor\t: 1\nCPU part\t: 0xd08\n\nHardware\t: BCM2835\n";
        let info = parse_cpuinfo(arm);
        assert_eq!(info.model.as_deref(), Some("BCM2835"));
        assert_eq!(info.count, Some(2));
        assert_eq!(info.hypervisor_flag, None);

        let info = parse_cpuinfo("processor\t: 0\nCPU part\t: 0xd0c\n");
        assert_eq!(info.model.as_deref(), Some("0xd0c"));

        let metal = "processor\t: 0\nmodel name\t: AMD Ryzen\nflags\t: fpu vme hypervisorx\n";
        assert_eq!(parse_cpuinfo(metal).hypervisor_flag, Some(false));
        assert_eq!(parse_cpuinfo("").count, None);
    }

    #[test]
    fn virtualization_cases() {
        let base = VirtInput {
            hypervisor_flag: Some(false),
            sys_vendor: None,
            product_name: None,
            hypervisor_type: None,
            clocksources: Vec::new(),
            containerenv: false,
            dockerenv: false,
        };
        let name = |i: &VirtInput| detect_virtualization(i).0;

        assert_eq!(name(&base).as_deref(), Some("none"));
        assert_eq!(
            name(&VirtInput {
                hypervisor_flag: None,
                ..base.clone()
            }),
            None
        );
        assert_eq!(
            name(&VirtInput {
                hypervisor_flag: Some(true),
                ..base.clone()
            })
            .as_deref(),
            Some("vm")
        );

        let dmi = |vendor: &str, product: &str| {
            name(&VirtInput {
                hypervisor_flag: Some(true),
                sys_vendor: Some(vendor.into()),
                product_name: Some(product.into()),
                ..base.clone()
            })
        };
        assert_eq!(dmi("Red Hat", "KVM").as_deref(), Some("kvm"));
        assert_eq!(
            dmi("VMware, Inc.", "VMware Virtual Platform").as_deref(),
            Some("vmware")
        );
        assert_eq!(dmi("innotek GmbH", "VirtualBox").as_deref(), Some("oracle"));
        assert_eq!(
            dmi("Microsoft Corporation", "Virtual Machine").as_deref(),
            Some("microsoft")
        );
        assert_eq!(dmi("Xen", "HVM domU").as_deref(), Some("xen"));
        assert_eq!(dmi("Amazon EC2", "m5.large").as_deref(), Some("amazon"));
        assert_eq!(
            dmi("Google", "Google Compute Engine").as_deref(),
            Some("google")
        );
        assert_eq!(
            dmi("Firecracker", "Firecracker").as_deref(),
            Some("firecracker")
        );

        // Bare-metal machines from cloud / hardware vendors.
        let metal = |vendor: &str, product: &str| {
            name(&VirtInput {
                sys_vendor: Some(vendor.into()),
                product_name: Some(product.into()),
                ..base.clone()
            })
        };
        assert_eq!(metal("Amazon EC2", "m5.metal").as_deref(), Some("none"));
        assert_eq!(
            metal("Microsoft Corporation", "Surface Laptop 5").as_deref(),
            Some("none")
        );
        assert_eq!(
            metal("Dell Inc.", "PowerEdge R740").as_deref(),
            Some("none")
        );

        assert_eq!(
            name(&VirtInput {
                hypervisor_flag: None,
                hypervisor_type: Some("xen".into()),
                ..base.clone()
            })
            .as_deref(),
            Some("xen")
        );

        // A hypervisor outranks a container marker; both stay in the evidence.
        let (n, evidence) = detect_virtualization(&VirtInput {
            hypervisor_flag: Some(true),
            dockerenv: true,
            clocksources: vec!["tsc".into(), "kvm-clock".into()],
            ..base.clone()
        });
        assert_eq!(n.as_deref(), Some("kvm"));
        assert!(evidence.contains(&"/.dockerenv exists".to_string()));
        assert!(evidence.contains(&"clocksource: kvm-clock".to_string()));
        assert_eq!(
            name(&VirtInput {
                dockerenv: true,
                ..base.clone()
            })
            .as_deref(),
            Some("docker")
        );
        assert_eq!(
            name(&VirtInput {
                containerenv: true,
                ..base.clone()
            })
            .as_deref(),
            Some("podman")
        );
    }

    #[test]
    fn container_markers_in_tree() {
        let dir = TempDir::new().unwrap();
        write(dir.path(), "/.dockerenv", "");
        let env = Environment::capture_from(dir.path(), Uname::default());
        assert_eq!(env.virtualization.as_deref(), Some("docker"));
    }

    #[test]
    fn read_trimmed_behaviour() {
        let dir = TempDir::new().unwrap();
        let p = dir.path().join("f");
        assert_eq!(read_trimmed(&p), None);
        fs::write(&p, "  \n").unwrap();
        assert_eq!(read_trimmed(&p), None);
        fs::write(&p, "Raspberry Pi 4\0").unwrap();
        assert_eq!(read_trimmed(&p).as_deref(), Some("Raspberry Pi 4"));
        // A directory is unreadable as a file.
        assert_eq!(read_trimmed(dir.path()), None);
    }

    #[test]
    fn nohz_full_null_is_none() {
        let dir = TempDir::new().unwrap();
        write(dir.path(), "/sys/devices/system/cpu/nohz_full", "(null)\n");
        write(dir.path(), "/sys/devices/system/cpu/isolated", "\n");
        let env = Environment::capture_from(dir.path(), Uname::default());
        assert_eq!(env.nohz_full, None);
        assert_eq!(env.isolated_cpus, None);
    }
}
