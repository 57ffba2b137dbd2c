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

mod hardware;
mod preempt;
mod sysfs;
mod uname;
mod virt;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use hardware::{meminfo_kb, parse_cpuinfo, read_governors};
use preempt::{build_config, preempt_model, BOOT_DEFAULT, REALTIME, SCHED_PREEMPT, UNKNOWN};
use sysfs::{bracketed, non_empty, Sys};
use virt::{detect_virtualization, VirtInput};

pub use sysfs::read_trimmed;
pub use uname::Uname;

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

#[cfg(test)]
mod tests {
    use super::preempt::PROC_CONFIG;
    use super::*;
    use std::fs;
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
    fn container_markers_in_tree() {
        let dir = TempDir::new().unwrap();
        write(dir.path(), "/.dockerenv", "");
        let env = Environment::capture_from(dir.path(), Uname::default());
        assert_eq!(env.virtualization.as_deref(), Some("docker"));
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
