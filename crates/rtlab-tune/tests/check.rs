//! `rtlab tune check`: the audit against fake /proc and /sys trees, and
//! once against the real machine.

use std::fs;
use std::path::Path;

use rtlab_core::env::Uname;
use rtlab_core::sched::Policy;
use rtlab_tune::check::{audit, AuditInput, Finding, Limits, Report, Severity};
use rtlab_tune::task::Task;
use tempfile::TempDir;

/// A fake root directory.
struct Tree {
    dir: TempDir,
}

impl Tree {
    fn empty() -> Tree {
        Tree {
            dir: TempDir::new().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, abs: &str, content: &str) -> &Tree {
        let path = self.dir.path().join(abs.trim_start_matches('/'));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        self
    }

    fn remove(&self, abs: &str) -> &Tree {
        let path = self.dir.path().join(abs.trim_start_matches('/'));
        if path.is_dir() {
            fs::remove_dir_all(path).unwrap();
        } else {
            let _ = fs::remove_file(path);
        }
        self
    }

    /// A well-tuned 2-CPU bare-metal machine with CPU 1 isolated.
    fn tuned() -> Tree {
        let t = Tree::empty();
        t.write("/sys/kernel/realtime", "1\n")
            .write(
                "/proc/cmdline",
                "BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0\n",
            )
            .write(
                "/proc/cpuinfo",
                "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu tsc\n\nprocessor\t: 1\nmodel name\t: Test CPU\nflags\t\t: fpu tsc\n",
            )
            .write("/sys/devices/system/cpu/online", "0-1\n")
            .write("/sys/devices/system/cpu/isolated", "1\n")
            .write("/sys/devices/system/cpu/nohz_full", "1\n")
            .write("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
            .write(
                "/sys/devices/system/clocksource/clocksource0/available_clocksource",
                "tsc hpet acpi_pm\n",
            )
            .write("/sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n")
            .write("/sys/devices/system/cpu/cpuidle/current_governor", "menu\n")
            .write("/proc/sys/kernel/sched_rt_runtime_us", "950000\n")
            .write("/proc/sys/kernel/sched_rt_period_us", "1000000\n")
            .write("/proc/sys/kernel/timer_migration", "0\n")
            .write("/proc/sys/kernel/nmi_watchdog", "0\n")
            .write("/proc/sys/kernel/soft_watchdog", "1\n")
            .write("/proc/sys/kernel/watchdog_cpumask", "0\n")
            .write("/proc/sys/vm/swappiness", "10\n")
            .write(
                "/sys/kernel/mm/transparent_hugepage/enabled",
                "always [madvise] never\n",
            )
            .write(
                "/sys/kernel/mm/transparent_hugepage/defrag",
                "always defer defer+madvise [madvise] never\n",
            )
            .write("/proc/meminfo", "MemTotal:  8000000 kB\nSwapTotal:  0 kB\n")
            .write(
                "/proc/swaps",
                "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
            )
            .write("/proc/irq/default_smp_affinity", "1\n")
            .write(
                "/proc/interrupts",
                "           CPU0       CPU1\n 24:        100          0  PCI-MSI  eth0-rx\n 25:         50          0  PCI-MSI  nvme0q0\nNMI:          0          0   Non-maskable interrupts\n",
            )
            .write("/proc/irq/24/smp_affinity_list", "0\n")
            .write("/proc/irq/24/effective_affinity_list", "0\n")
            .write("/proc/irq/25/smp_affinity_list", "0\n")
            .write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        for cpu in 0..2 {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}");
            t.write(&format!("{base}/cpufreq/scaling_governor"), "performance\n");
            for (i, (name, latency, disable)) in [("POLL", 0, 0), ("C1", 2, 0), ("C6", 133, 1)]
                .iter()
                .enumerate()
            {
                let state = format!("{base}/cpuidle/state{i}");
                t.write(&format!("{state}/name"), &format!("{name}\n"))
                    .write(&format!("{state}/latency"), &format!("{latency}\n"))
                    .write(&format!("{state}/disable"), &format!("{disable}\n"));
            }
        }
        t
    }
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

fn root_limits() -> Limits {
    Limits {
        memlock_soft: None,
        memlock_hard: None,
        rtprio_soft: Some(0),
        rtprio_hard: Some(0),
        euid: 0,
        cap_sys_nice: true,
        cap_ipc_lock: true,
    }
}

fn user_limits() -> Limits {
    Limits {
        memlock_soft: Some(8 << 20),
        memlock_hard: Some(8 << 20),
        rtprio_soft: Some(0),
        rtprio_hard: Some(0),
        euid: 1000,
        cap_sys_nice: false,
        cap_ipc_lock: false,
    }
}

/// A user thread (`pid`, `tid`, thread name, process name).
fn app(
    pid: i32,
    tid: i32,
    name: &str,
    process: &str,
    policy: Policy,
    priority: u32,
    affinity: &str,
) -> Task {
    Task {
        pid,
        tid,
        starttime: 100 + tid as u64,
        name: name.into(),
        process_name: process.into(),
        cmdline: format!("/usr/bin/{process}"),
        kernel_thread: false,
        policy,
        priority,
        nice: 0,
        affinity: affinity.into(),
        cpu: Some(0),
        voluntary_switches: None,
        involuntary_switches: None,
    }
}

/// A kernel thread: its own process, no command line.
fn kthread(pid: i32, name: &str, policy: Policy, priority: u32, affinity: &str) -> Task {
    Task {
        cmdline: String::new(),
        kernel_thread: true,
        ..app(pid, pid, name, name, policy, priority, affinity)
    }
}

/// A plain user process, so the thread list is not empty.
fn shell() -> Task {
    app(900, 900, "bash", "bash", Policy::Other, 0, "0-1")
}

fn run(tree: &Tree, version: &str, tasks: Vec<Task>, limits: Limits) -> Report {
    audit(&AuditInput {
        root: tree.path().to_path_buf(),
        uname: uname(version),
        tasks,
        limits,
    })
}

fn get<'a>(report: &'a Report, id: &str) -> &'a Finding {
    report
        .finding(id)
        .unwrap_or_else(|| panic!("no finding {id} in:\n{}", report.render_text()))
}

const RT_VERSION: &str = "#1 SMP PREEMPT_RT";
const DYNAMIC_VERSION: &str = "#1 SMP PREEMPT_DYNAMIC";

#[test]
fn empty_root_never_panics_and_says_unknown() {
    let tree = Tree::empty();
    let report = audit(&AuditInput {
        root: tree.path().to_path_buf(),
        uname: Uname::default(),
        tasks: Vec::new(),
        limits: root_limits(),
    });
    assert!(!report.findings.is_empty());
    for f in &report.findings {
        assert!(!f.id.is_empty());
        assert!(
            f.severity <= Severity::Info,
            "{} is {} on an empty root: {}",
            f.id,
            f.severity,
            f.summary
        );
    }
    for id in [
        "preempt-model",
        "rt-throttling",
        "rt-group-sched",
        "timer-migration",
        "clocksource",
        "soft-watchdog",
        "virtualization",
        "thp",
        "thp-defrag",
        "swap",
        "irqbalance",
        "irq-affinity",
        "cpu-isolation",
        "kthread-rank",
    ] {
        assert!(
            get(&report, id).summary.contains("unknown"),
            "{id}: {}",
            get(&report, id).summary
        );
    }
    assert_eq!(get(&report, "cpu-governor").severity, Severity::Info);
    assert_eq!(get(&report, "cpu-idle").severity, Severity::Info);
    let text = report.render_text();
    assert!(text.contains("INFO"));
    serde_json::to_string(&report).unwrap();

    // A root that does not exist at all behaves the same.
    let missing = audit(&AuditInput {
        root: tree.path().join("no/such/dir"),
        uname: Uname::default(),
        tasks: Vec::new(),
        limits: user_limits(),
    });
    assert_eq!(missing.findings.len(), report.findings.len());
}

#[test]
fn tuned_machine_has_no_warnings() {
    let tree = Tree::tuned();
    let tasks = vec![
        shell(),
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "1"),
        kthread(14, "ksoftirqd/0", Policy::Fifo, 51, "0"),
        kthread(22, "ksoftirqd/1", Policy::Fifo, 51, "1"),
        kthread(30, "ktimers/0", Policy::Fifo, 51, "0"),
        kthread(31, "ktimers/1", Policy::Fifo, 51, "1"),
    ];
    let report = run(&tree, RT_VERSION, tasks, root_limits());
    let bad: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .map(|f| format!("{}: {}", f.id, f.summary))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for id in [
        "preempt-model",
        "cpu-governor",
        "cpu-idle",
        "cpu-isolation",
        "thp",
        "thp-defrag",
        "swap",
        "timer-migration",
        "clocksource",
        "nmi-watchdog",
        "soft-watchdog",
        "irqbalance",
        "irq-affinity",
        "memlock-limit",
        "virtualization",
        "kthread-rank-ktimers",
        "kthread-rank-ksoftirqd",
    ] {
        assert_eq!(
            get(&report, id).severity,
            Severity::Ok,
            "{id}: {}",
            get(&report, id).summary
        );
    }
    assert_eq!(report.worst(), Severity::Info);
    assert!(!report.fails(Severity::Warning));
    assert!(report.fails(Severity::Info));
}

#[test]
fn every_id_is_unique_and_known() {
    let tree = Tree::tuned();
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "0-1"),
        kthread(14, "ksoftirqd/0", Policy::Other, 0, "0"),
        kthread(30, "ktimers/0", Policy::Fifo, 1, "0"),
        kthread(40, "rcuc/0", Policy::Fifo, 1, "0"),
        kthread(50, "irq/24-eth0-rx", Policy::Fifo, 50, "0"),
    ];
    let report = run(&tree, RT_VERSION, tasks, root_limits());
    let mut ids: Vec<&str> = report.findings.iter().map(|f| f.id.as_str()).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "duplicate ids");
    let known = [
        "preempt-model",
        "rt-throttling",
        "rt-group-sched",
        "timer-migration",
        "clocksource",
        "nmi-watchdog",
        "soft-watchdog",
        "virtualization",
        "cpu-governor",
        "cpu-idle",
        "cpu-isolation",
        "thp",
        "thp-defrag",
        "swap",
        "irqbalance",
        "irq-affinity",
        "rtprio-limit",
        "memlock-limit",
        "kthread-rank-ktimers",
        "kthread-rank-ksoftirqd",
        "kthread-rank-rcu",
        "kthread-rank-irq",
    ];
    let mut expected = known.to_vec();
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

#[test]
fn preemption_models() {
    let tree = Tree::tuned();
    let f = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&f, "preempt-model").severity, Severity::Ok);

    tree.remove("/sys/kernel/realtime");
    tree.write("/proc/cmdline", "root=/dev/sda1 preempt=voluntary\n");
    let r = run(&tree, DYNAMIC_VERSION, vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("dynamic-voluntary"), "{}", f.summary);
    assert!(f.fix.as_deref().unwrap().contains("preempt=full"));

    tree.write("/proc/cmdline", "root=/dev/sda1\n");
    let r = run(&tree, DYNAMIC_VERSION, vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("unknown"));

    // The boot default from the kernel config, when there is one.
    tree.write(
        "/boot/config-6.12.0-test",
        "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n",
    );
    let r = run(&tree, DYNAMIC_VERSION, vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.summary.contains("boot default voluntary"),
        "{}",
        f.summary
    );
    assert!(f
        .evidence
        .iter()
        .any(|e| e.contains("CONFIG_PREEMPT_VOLUNTARY=y")));
    tree.write(
        "/boot/config-6.12.0-test",
        "CONFIG_PREEMPT=y\nCONFIG_PREEMPT_DYNAMIC=y\n",
    );
    let r = run(&tree, DYNAMIC_VERSION, vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("boot default full"), "{}", f.summary);
    tree.remove("/boot");

    let r = run(&tree, "#1 SMP PREEMPT", vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("full"));

    tree.write(
        "/sys/kernel/debug/sched/preempt",
        "(none) voluntary full lazy\n",
    );
    let r = run(&tree, DYNAMIC_VERSION, vec![], root_limits());
    let f = get(&r, "preempt-model");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("dynamic-none"));
    assert!(f.evidence.iter().any(|e| e.contains("(none) voluntary")));
}

#[test]
fn rt_throttling_values() {
    let tree = Tree::tuned();
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-throttling");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.summary.contains("95%") && f.summary.contains("950000"),
        "{}",
        f.summary
    );

    tree.write("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-throttling");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("-1") && f.summary.contains("disabled"));
    assert!(
        f.summary.contains("runaway real-time thread"),
        "{}",
        f.summary
    );
    assert!(f.detail.as_deref().unwrap().contains("--runaway-limit"));

    tree.write("/proc/sys/kernel/sched_rt_runtime_us", "500000\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-throttling");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("50%"));
}

#[test]
fn rt_group_scheduling() {
    let tree = Tree::tuned();
    // cgroup v2 only, no kernel config: cannot tell.
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "rt-group-sched").severity, Severity::Info);
    assert!(get(&r, "rt-group-sched").summary.contains("unknown"));

    tree.write(
        "/boot/config-6.12.0-test",
        "CONFIG_CGROUP_SCHED=y\nCONFIG_RT_GROUP_SCHED=y\n",
    );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-group-sched");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("CONFIG_RT_GROUP_SCHED=y"));

    tree.write(
        "/boot/config-6.12.0-test",
        "# CONFIG_RT_GROUP_SCHED is not set\n",
    );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "rt-group-sched").severity, Severity::Ok);

    // cgroup v1 with RT group scheduling: the root group only.
    tree.remove("/boot");
    tree.write("/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us", "950000\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-group-sched");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("950000"));
    assert!(f.detail.as_deref().unwrap().contains("EPERM"));

    // A service group without RT time.
    tree.write(
        "/sys/fs/cgroup/cpu,cpuacct/system.slice/cpu.rt_runtime_us",
        "0\n",
    )
    .write(
        "/sys/fs/cgroup/cpu,cpuacct/system.slice/alarmd.service/cpu.rt_runtime_us",
        "0\n",
    )
    .write(
        "/sys/fs/cgroup/cpu,cpuacct/rt.slice/cpu.rt_runtime_us",
        "100000\n",
    );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rt-group-sched");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("/system.slice"), "{}", f.summary);
    assert!(f.summary.contains("/system.slice/alarmd.service"));
    assert!(!f.summary.contains("rt.slice"));
    assert!(f.fix.as_deref().unwrap().contains("rt_group_sched=0"));

    tree.write("/proc/cmdline", "root=/dev/sda1 rt_group_sched=0\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "rt-group-sched").severity, Severity::Ok);

    // v1 cpu controller without the RT files: the option is off.
    let tree = Tree::tuned();
    tree.write("/sys/fs/cgroup/cpu,cpuacct/cpu.shares", "1024\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "rt-group-sched").severity, Severity::Ok);
}

#[test]
fn governor_values_are_named() {
    let tree = Tree::tuned();
    for cpu in 0..2 {
        tree.write(
            &format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
            "powersave\n",
        );
    }
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-governor");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("cpu0-1: powersave"), "{}", f.summary);
    assert!(f.fix.as_deref().unwrap().contains("performance"));

    tree.write(
        "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
        "performance\n",
    );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-governor");
    assert!(f.summary.contains("cpu0: powersave") && f.summary.contains("cpu1: performance"));

    for cpu in 0..2 {
        tree.remove(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq"));
    }
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "cpu-governor").severity, Severity::Info);
}

#[test]
fn deep_idle_states_are_listed_with_latencies() {
    let tree = Tree::tuned();
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-idle");
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.summary.contains("C6 133 us (disabled)"), "{}", f.summary);

    tree.write("/sys/devices/system/cpu/cpu1/cpuidle/state2/disable", "0\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-idle");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("133 us"), "{}", f.summary);
    assert!(f.summary.contains("enabled on cpu1"), "{}", f.summary);
    assert!(f.summary.contains("intel_idle"));
    let fix = f.fix.as_deref().unwrap();
    assert!(fix.contains("cpupower idle-set -D 10") && fix.contains("max_cstate"));
    assert!(f
        .detail
        .as_deref()
        .unwrap()
        .contains("/dev/cpu_dma_latency"));

    // A moderately deep state only: a note, not a warning.
    for cpu in 0..2 {
        let state = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state2");
        tree.write(&format!("{state}/name"), "C1E\n")
            .write(&format!("{state}/latency"), "10\n")
            .write(&format!("{state}/disable"), "0\n");
    }
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-idle");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("C1E 10 us"));
}

#[test]
fn transparent_hugepages() {
    let tree = Tree::tuned();
    tree.write(
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    )
    .write(
        "/sys/kernel/mm/transparent_hugepage/defrag",
        "[always] defer defer+madvise madvise never\n",
    );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "thp");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("always"));
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"));
    assert!(f.detail.as_deref().unwrap().contains("khugepaged"));
    assert_eq!(get(&r, "thp-defrag").severity, Severity::Warning);

    let r = run(&Tree::tuned(), RT_VERSION, vec![], root_limits());
    assert!(get(&r, "thp").summary.contains("madvise"));
}

#[test]
fn active_swap() {
    let tree = Tree::tuned();
    tree.write(
        "/proc/meminfo",
        "MemTotal:  8000000 kB\nSwapTotal:  2097148 kB\n",
    )
    .write(
        "/proc/swaps",
        "Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition\t2097148\t0\t-2\n",
    )
    .write("/proc/sys/vm/swappiness", "60\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "swap");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.summary.contains("2047 MiB") && f.summary.contains("1 device"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("vm.swappiness = 60"));
    let fix = f.fix.as_deref().unwrap();
    assert!(fix.contains("mlockall") && fix.contains("swapoff"));

    let r = run(&Tree::tuned(), RT_VERSION, vec![], root_limits());
    let f = get(&r, "swap");
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.summary.contains("vm.swappiness = 10"));
}

#[test]
fn irqs_on_isolated_cpus_are_listed() {
    let tree = Tree::tuned();
    tree.write(
        "/proc/interrupts",
        "           CPU0       CPU1\n 24:        100          7  PCI-MSI  eth0-rx\n 25:         50          0  PCI-MSI  nvme0q0\n 26:          0          3  IO-APIC  ttyS0\n",
    )
    .write("/proc/irq/24/smp_affinity_list", "0-1\n")
    .write("/proc/irq/24/effective_affinity_list", "1\n")
    .write("/proc/irq/26/smp_affinity_list", "1\n")
    // Allocated but without a handler: not in /proc/interrupts, ignored.
    .write("/proc/irq/27/smp_affinity_list", "0-1\n")
    .write("/proc/irq/default_smp_affinity", "3\n");
    let tasks = vec![
        shell(),
        app(
            700,
            700,
            "irqbalance",
            "irqbalance",
            Policy::Other,
            0,
            "0-1",
        ),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());

    let f = get(&r, "irq-affinity");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("2 IRQs"), "{}", f.summary);
    assert!(
        f.summary.contains("24 eth0-rx") && f.summary.contains("26 ttyS0"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("nvme0q0"));
    assert!(!f.summary.contains("27"));
    let detail = f.detail.as_deref().unwrap();
    assert!(detail.contains("IRQ 24."), "{detail}");
    assert!(
        detail.contains("24 x7") && detail.contains("26 x3"),
        "{detail}"
    );
    let fix = f.fix.as_deref().unwrap();
    assert!(
        fix.contains("for irq in 24 26; do echo 0 > /proc/irq/$irq/smp_affinity_list; done"),
        "{fix}"
    );
    assert!(
        fix.contains("echo 1 > /proc/irq/default_smp_affinity"),
        "{fix}"
    );

    let f = get(&r, "irqbalance");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("pid 700"));
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("IRQBALANCE_BANNED_CPULIST=1"));

    // A ban in the configuration is reported.
    tree.write(
        "/etc/default/irqbalance",
        "# comment\nIRQBALANCE_BANNED_CPULIST=1\n",
    );
    let tasks = vec![app(
        700,
        700,
        "irqbalance",
        "irqbalance",
        Policy::Other,
        0,
        "0-1",
    )];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    assert!(get(&r, "irqbalance")
        .summary
        .contains("IRQBALANCE_BANNED_CPULIST=1"));
}

#[test]
fn irqs_without_isolation() {
    let tree = Tree::tuned();
    tree.write("/proc/cmdline", "root=/dev/sda1\n")
        .remove("/sys/devices/system/cpu/isolated")
        .remove("/sys/devices/system/cpu/nohz_full");
    let tasks = vec![
        shell(),
        app(
            700,
            700,
            "irqbalance",
            "irqbalance",
            Policy::Other,
            0,
            "0-1",
        ),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let f = get(&r, "irq-affinity");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("no isolated CPUs") && f.summary.contains("2 IRQs"));
    assert_eq!(get(&r, "irqbalance").severity, Severity::Info);

    let r = run(&tree, RT_VERSION, vec![shell()], root_limits());
    assert_eq!(get(&r, "irqbalance").severity, Severity::Ok);
}

#[test]
fn cpu_isolation_parameters() {
    let tree = Tree::tuned();
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-isolation");
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.summary.contains("isolcpus=domain,managed_irq,1"));

    tree.write("/proc/cmdline", "root=/dev/sda1\n")
        .remove("/sys/devices/system/cpu/isolated")
        .remove("/sys/devices/system/cpu/nohz_full");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-isolation");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("none") && f.summary.contains("2 CPUs"));
    assert!(f.detail.as_deref().unwrap().contains("trade-off"));
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"));

    tree.write("/proc/cmdline", "root=/dev/sda1 isolcpus=1\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-isolation");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.summary.contains("without nohz_full or rcu_nocbs"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("isolated 1"), "{}", f.summary);

    // Four CPUs: no trade-off note, the upper half suggested.
    tree.write("/proc/cmdline", "root=/dev/sda1\n")
        .write("/sys/devices/system/cpu/online", "0-3\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "cpu-isolation");
    assert!(!f.detail.as_deref().unwrap().contains("trade-off"));
    assert!(f.fix.as_deref().unwrap().contains("nohz_full=2-3"));
}

#[test]
fn sysctls_timer_migration_clocksource_watchdogs() {
    let tree = Tree::tuned();
    tree.write("/proc/sys/kernel/timer_migration", "1\n")
        .write(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "hpet\n",
        )
        .write("/proc/sys/kernel/nmi_watchdog", "1\n")
        .write("/proc/sys/kernel/watchdog_cpumask", "0-1\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());

    let f = get(&r, "timer-migration");
    assert_eq!(f.severity, Severity::Info);
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("kernel.timer_migration=0"));

    let f = get(&r, "clocksource");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("hpet") && f.summary.contains("tsc hpet acpi_pm"));
    assert!(f.fix.as_deref().unwrap().contains("echo tsc >"));

    let f = get(&r, "nmi-watchdog");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("isolated CPUs 1"), "{}", f.summary);
    assert!(f.fix.as_deref().unwrap().contains("kernel.nmi_watchdog=0"));

    let f = get(&r, "soft-watchdog");
    assert_eq!(f.severity, Severity::Info);
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("kernel.watchdog_cpumask=0"));

    // Without isolated CPUs the NMI watchdog is only a note.
    tree.write("/proc/cmdline", "root=/dev/sda1\n")
        .remove("/sys/devices/system/cpu/isolated")
        .remove("/sys/devices/system/cpu/nohz_full")
        .write(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "kvm-clock\n",
        );
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    assert_eq!(get(&r, "nmi-watchdog").severity, Severity::Info);
    assert_eq!(get(&r, "soft-watchdog").severity, Severity::Ok);
    assert_eq!(get(&r, "clocksource").severity, Severity::Info);
}

#[test]
fn limits_of_root_and_of_a_user() {
    let tree = Tree::tuned();
    let r = run(&tree, RT_VERSION, vec![], user_limits());
    let f = get(&r, "rtprio-limit");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("soft 0, hard 0"));
    assert!(f.fix.as_deref().unwrap().contains("LimitRTPRIO="));
    let f = get(&r, "memlock-limit");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("8 MiB"));
    assert!(f.fix.as_deref().unwrap().contains("LimitMEMLOCK=infinity"));

    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "rtprio-limit");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("CAP_SYS_NICE") && f.summary.contains("service"));
    assert_eq!(get(&r, "memlock-limit").severity, Severity::Ok);

    let r = run(
        &tree,
        RT_VERSION,
        vec![],
        Limits {
            rtprio_soft: Some(50),
            rtprio_hard: Some(98),
            ..user_limits()
        },
    );
    let f = get(&r, "rtprio-limit");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("up to 50"));
}

#[test]
fn virtual_machine_is_named_with_evidence() {
    let tree = Tree::tuned();
    tree.write(
        "/proc/cpuinfo",
        "processor\t: 0\nflags\t\t: fpu hypervisor\n\nprocessor\t: 1\nflags\t\t: fpu hypervisor\n",
    )
    .write("/sys/class/dmi/id/sys_vendor", "QEMU\n")
    .write("/sys/class/dmi/id/product_name", "KVM Virtual Machine\n");
    let r = run(&tree, RT_VERSION, vec![], root_limits());
    let f = get(&r, "virtualization");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("kvm") && f.summary.contains("cpuinfo flags: hypervisor"));
    assert_eq!(r.host.virtualization.as_deref(), Some("kvm"));
}

#[test]
fn softirq_threads_below_the_app_on_an_rt_kernel() {
    let tree = Tree::tuned();
    let tasks = vec![
        shell(),
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "0-1"),
        app(1200, 1201, "alarmd-io", "alarmd", Policy::Fifo, 40, "0-1"),
        kthread(14, "ksoftirqd/0", Policy::Other, 0, "0"),
        kthread(22, "ksoftirqd/1", Policy::Other, 0, "1"),
        kthread(30, "ktimers/0", Policy::Fifo, 1, "0"),
        kthread(31, "ktimers/1", Policy::Fifo, 1, "1"),
        kthread(15, "rcu_preempt", Policy::Fifo, 1, "0-1"),
        kthread(50, "irq/24-eth0-rx", Policy::Fifo, 50, "0"),
        kthread(51, "irq/25-nvme0q0", Policy::Fifo, 50, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());

    let f = get(&r, "kthread-rank-ksoftirqd");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.summary.contains("ksoftirqd/0-1 at other"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("alarmd (pid 1200)"), "{}", f.summary);
    assert!(
        f.summary.contains("fifo 50") && f.summary.contains("2 threads"),
        "{}",
        f.summary
    );
    let fix = f.fix.as_deref().unwrap();
    assert!(
        fix.contains("rtlab tune set 'ksoftirqd/.*' --kernel --policy fifo --priority 51"),
        "{fix}"
    );
    assert!(
        fix.contains("[[rule]]") && fix.contains("priority = 51") && fix.contains("kernel = true")
    );
    assert!(f.detail.as_deref().unwrap().contains("paper 000"));

    let f = get(&r, "kthread-rank-ktimers");
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.summary.contains("ktimers/0-1 at fifo 1"), "{}", f.summary);

    let f = get(&r, "kthread-rank-rcu");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("rcu_preempt at fifo 1"));

    // Equal priority is not above: FIFO threads of one level do not preempt
    // each other.
    let f = get(&r, "kthread-rank-irq");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("irq/24-25 at fifo 50"), "{}", f.summary);
    assert!(
        f.fix.as_deref().unwrap().contains("'irq/24-eth0-rx'"),
        "{:?}",
        f.fix
    );

    assert_eq!(r.worst(), Severity::Critical);
    assert!(r.fails(Severity::Critical));
    let text = r.render_text();
    let critical = text.find("CRITICAL").unwrap();
    let ok = text.find("\nOK").unwrap();
    assert!(critical < ok);
    assert!(text.contains("fix: rtlab tune set 'ksoftirqd/.*'"));
}

#[test]
fn kernel_threads_above_the_app_are_ok() {
    let tree = Tree::tuned();
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "0-1"),
        kthread(30, "ktimers/0", Policy::Fifo, 51, "0"),
        kthread(31, "ktimers/1", Policy::Fifo, 51, "1"),
        kthread(14, "ksoftirqd/0", Policy::Rr, 60, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let f = get(&r, "kthread-rank-ktimers");
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.summary.contains("ktimers/0-1 at fifo 51") && f.summary.contains("fifo/rr 50"));
    assert_eq!(get(&r, "kthread-rank-ksoftirqd").severity, Severity::Ok);
}

#[test]
fn only_kernel_threads_sharing_a_cpu_with_the_app_count() {
    let tree = Tree::tuned();
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "1"),
        kthread(14, "ksoftirqd/0", Policy::Other, 0, "0"),
        kthread(22, "ksoftirqd/1", Policy::Other, 0, "1"),
        kthread(40, "rcuop/1", Policy::Other, 0, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let f = get(&r, "kthread-rank-ksoftirqd");
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.summary.contains("ksoftirqd/1 at other"), "{}", f.summary);
    assert!(!f.summary.contains("ksoftirqd/0"), "{}", f.summary);
    // The offloaded RCU thread runs on the housekeeping CPU: no conflict.
    let f = get(&r, "kthread-rank-rcu");
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.summary.contains("share no CPU"));
}

#[test]
fn ranking_on_a_non_rt_kernel_is_a_note() {
    let tree = Tree::tuned();
    tree.remove("/sys/kernel/realtime");
    tree.write("/proc/cmdline", "root=/dev/sda1 preempt=full\n");
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Rr, 30, "0-1"),
        kthread(14, "ksoftirqd/0", Policy::Other, 0, "0"),
    ];
    let r = run(&tree, DYNAMIC_VERSION, tasks, root_limits());
    let f = get(&r, "kthread-rank-ksoftirqd");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("rr 30"), "{}", f.summary);
    assert!(f.detail.as_deref().unwrap().contains("dynamic-full"));
}

#[test]
fn no_promoted_application() {
    let tree = Tree::tuned();
    let tasks = vec![shell(), kthread(14, "ksoftirqd/0", Policy::Other, 0, "0")];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let f = get(&r, "kthread-rank");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("no application thread is real-time"));
    assert!(f.detail.as_deref().unwrap().contains("paper 000"));
    assert!(r.finding("kthread-rank-ksoftirqd").is_none());

    // Kernel threads at FIFO (migration/N at 99) are not applications.
    let tasks = vec![kthread(18, "migration/0", Policy::Fifo, 99, "0")];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    assert!(r.finding("kthread-rank").is_some());
}

#[test]
fn application_at_the_top_priorities() {
    let tree = Tree::tuned();
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 99, "0"),
        kthread(30, "ktimers/0", Policy::Fifo, 1, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let fix = get(&r, "kthread-rank-ktimers").fix.clone().unwrap();
    assert!(
        fix.contains("lower it first") && fix.contains("alarmd"),
        "{fix}"
    );

    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 98, "0"),
        kthread(30, "ktimers/0", Policy::Fifo, 1, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let fix = get(&r, "kthread-rank-ktimers").fix.clone().unwrap();
    assert!(
        fix.contains("--priority 99 --allow-99") && fix.contains("allow_99 = true"),
        "{fix}"
    );
}

#[test]
fn json_shape() {
    let tree = Tree::tuned();
    tree.write(
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    );
    let r = run(&tree, RT_VERSION, vec![shell()], user_limits());
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(json["schema"], "rtlab.tune-check/1");
    assert_eq!(json["worst"], "warning");
    assert_eq!(json["host"]["preempt_model"], "rt");
    assert_eq!(json["host"]["cpu_count"], 2);
    let counts = &json["counts"];
    let total: u64 = ["ok", "info", "warning", "critical"]
        .iter()
        .map(|k| counts[k].as_u64().unwrap())
        .sum();
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(total as usize, findings.len());
    let thp = findings.iter().find(|f| f["id"] == "thp").unwrap();
    assert_eq!(thp["severity"], "warning");
    assert_eq!(thp["area"], "memory");
    assert!(thp["fix"].as_str().unwrap().contains("madvise"));
    assert!(thp["evidence"][0].as_str().unwrap().contains("[always]"));
    // Ok findings carry no fix.
    let ok = findings.iter().find(|f| f["id"] == "swap").unwrap();
    assert_eq!(ok["severity"], "ok");
    assert!(ok.get("fix").is_none());

    let back: Vec<Finding> = serde_json::from_value(json["findings"].clone()).unwrap();
    assert_eq!(back, r.findings);
}

#[test]
fn severity_parsing_and_order() {
    assert_eq!("warning".parse::<Severity>().unwrap(), Severity::Warning);
    assert_eq!("CRITICAL".parse::<Severity>().unwrap(), Severity::Critical);
    assert!("severe"
        .parse::<Severity>()
        .unwrap_err()
        .contains("expected ok, info, warning or critical"));
    assert!(Severity::Ok < Severity::Info && Severity::Info < Severity::Warning);
    assert!(Severity::Warning < Severity::Critical);
    assert_eq!(
        serde_json::to_string(&Severity::Critical).unwrap(),
        "\"critical\""
    );
}

#[test]
fn this_machine() {
    let input = match AuditInput::from_system() {
        Ok(input) => input,
        Err(e) => {
            eprintln!("skipped: cannot scan /proc here: {e}");
            return;
        }
    };
    assert!(!input.tasks.is_empty());
    let report = audit(&input);
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert!(findings.len() >= 18);
    for f in findings {
        assert!(!f["id"].as_str().unwrap().is_empty());
        assert!(["ok", "info", "warning", "critical"].contains(&f["severity"].as_str().unwrap()));
        assert!(!f["summary"].as_str().unwrap().is_empty());
    }
    let text = report.render_text();
    assert!(text.starts_with("rtlab tune check: "));
    for f in &report.findings {
        assert!(text.contains(&f.id));
    }
    // Shown with --nocapture: the example in docs/tune-check.md.
    println!("{text}");
}

#[test]
fn garbage_values_never_panic() {
    let tree = Tree::tuned();
    tree.write("/proc/sys/kernel/sched_rt_runtime_us", "lots\n")
        .write("/proc/sys/kernel/nmi_watchdog", "\u{0}\u{ff}\n")
        .write("/sys/devices/system/cpu/online", "7-2\n")
        .write("/sys/devices/system/cpu/isolated", "x\n")
        .write("/proc/irq/default_smp_affinity", "zz\n")
        .write("/proc/irq/24/smp_affinity_list", "0-\n")
        .write("/proc/interrupts", "garbage\n 24: a b c\n:\n")
        .write(
            "/sys/devices/system/cpu/cpu0/cpuidle/state1/latency",
            "-5\n",
        )
        .write("/proc/swaps", "")
        .write("/sys/fs/cgroup/cpu/cpu.rt_runtime_us", "\n");
    let tasks = vec![
        app(1, 1, "x", "x", Policy::Fifo, 50, "not a list"),
        kthread(2, "ksoftirqd/", Policy::Other, 0, ""),
        kthread(3, "irq/-", Policy::Fifo, 50, "0-1"),
    ];
    let r = run(&tree, "", tasks, user_limits());
    assert!(!r.render_text().is_empty());
    serde_json::to_string(&r).unwrap();
    assert!(get(&r, "rt-throttling").summary.contains("unknown"));
    // Unknown affinity counts as sharing every CPU.
    assert_ne!(get(&r, "kthread-rank-ksoftirqd").severity, Severity::Ok);
}

#[test]
fn every_cpu_isolated_still_gives_a_housekeeping_cpu() {
    let tree = Tree::tuned();
    tree.write("/sys/devices/system/cpu/isolated", "0-1\n")
        .write("/proc/irq/24/smp_affinity_list", "0-1\n");
    let r = run(&tree, RT_VERSION, vec![shell()], root_limits());
    let fix = get(&r, "irq-affinity").fix.clone().unwrap();
    assert!(
        fix.contains("echo 0 > /proc/irq/$irq/smp_affinity_list"),
        "{fix}"
    );
}

/// The rules-file snippets in the fix hints are valid rules files, and each
/// rule selects the kernel threads the finding is about.
#[test]
fn fix_snippets_parse_as_rules_and_select_the_threads() {
    let tree = Tree::tuned();
    let kernel_threads = vec![
        kthread(14, "ksoftirqd/0", Policy::Other, 0, "0"),
        kthread(30, "ktimers/0", Policy::Fifo, 1, "0"),
        kthread(15, "rcu_preempt", Policy::Fifo, 1, "0-1"),
        kthread(40, "rcuc/0", Policy::Fifo, 1, "0"),
        kthread(50, "irq/24-ACPI:Ged", Policy::Fifo, 50, "0"),
    ];
    let mut tasks = kernel_threads.clone();
    tasks.push(app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "0-1"));
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let mut checked = 0;
    for f in r
        .findings
        .iter()
        .filter(|f| f.id.starts_with("kthread-rank-"))
    {
        let fix = f.fix.as_deref().unwrap();
        let snippet = &fix[fix.find("[[rule]]").unwrap()..];
        let rules = rtlab_tune::rules_file::parse(snippet, Path::new("fix-hint.toml"))
            .unwrap_or_else(|e| panic!("{}: {e}\n{snippet}", f.id));
        assert_eq!(rules.len(), 1);
        let rule = &rules[0];
        assert_eq!(rule.promotion.priority, 51);
        let selected: Vec<&str> = kernel_threads
            .iter()
            .filter(|t| rule.selector.matches(t))
            .map(|t| t.name.as_str())
            .collect();
        assert!(!selected.is_empty(), "{}: selects nothing", f.id);
        for name in &selected {
            assert!(f.summary.contains(name.split('/').next().unwrap()));
        }
        checked += 1;
    }
    assert_eq!(checked, 4);
}

#[test]
fn only_the_outranking_application_threads_are_named() {
    let tree = Tree::tuned();
    let tasks = vec![
        app(1200, 1200, "alarmd", "alarmd", Policy::Fifo, 50, "0-1"),
        app(1300, 1300, "logger", "logger", Policy::Fifo, 10, "0-1"),
        kthread(30, "ktimers/0", Policy::Fifo, 20, "0"),
    ];
    let r = run(&tree, RT_VERSION, tasks, root_limits());
    let f = get(&r, "kthread-rank-ktimers");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.summary.contains("alarmd (pid 1200) at fifo 50"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("logger"), "{}", f.summary);
    assert!(f.fix.as_deref().unwrap().contains("--priority 51"));
}
