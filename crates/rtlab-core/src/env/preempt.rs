//! The kernel's preemption model: PREEMPT_RT, the live PREEMPT_DYNAMIC
//! model in debugfs, `preempt=` on the command line, the build
//! configuration's default, or the version string.

use std::fs;

use super::sysfs::Sys;

pub(super) const UNKNOWN: &str = "unknown";
pub(super) const REALTIME: &str = "/sys/kernel/realtime";
pub(super) const SCHED_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";
/// The preemption models a PREEMPT_DYNAMIC kernel can switch between.
const DYNAMIC_MODELS: &[&str] = &["none", "voluntary", "full", "lazy"];

/// How a source of the preemption model says it is a PREEMPT_DYNAMIC
/// kernel's boot default read from its build configuration.
pub(super) const BOOT_DEFAULT: &str = "the boot default of CONFIG_PREEMPT_DYNAMIC";

/// The running kernel's build configuration is kept here (gzipped) with
/// CONFIG_IKCONFIG_PROC.
pub(super) const PROC_CONFIG: &str = "/proc/config.gz";
/// More than any kernel's configuration (about 300 KiB): a bigger file,
/// or one that inflates to more, is not read.
const CONFIG_MAX_BYTES: u64 = 4 << 20;

/// The running kernel's build configuration and where it was read:
/// /boot/config-RELEASE (as distributions install it), else
/// /proc/config.gz. None when neither is readable.
pub(super) fn build_config(sys: &Sys, release: &str) -> Option<(String, String)> {
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
pub(super) fn preempt_model(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
