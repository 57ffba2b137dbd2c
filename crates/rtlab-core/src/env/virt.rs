//! Whether rtlab runs in a virtual machine or a container, and which.

#[derive(Debug, Clone)]
pub(super) struct VirtInput {
    pub(super) hypervisor_flag: Option<bool>,
    pub(super) sys_vendor: Option<String>,
    pub(super) product_name: Option<String>,
    pub(super) hypervisor_type: Option<String>,
    /// Available clocksources: paravirtual ones name the hypervisor even
    /// when DMI is absent (e.g. Firecracker, which has no DMI tables).
    pub(super) clocksources: Vec<String>,
    pub(super) containerenv: bool,
    pub(super) dockerenv: bool,
}

/// Decides the virtualization name and the evidence for it.
///
/// Unlike systemd-detect-virt, a hypervisor wins over a container marker:
/// for latency the hypervisor is what matters, and /.dockerenv is also left
/// behind in VM root filesystems built from Docker images. The evidence
/// keeps both.
pub(super) fn detect_virtualization(input: &VirtInput) -> (Option<String>, Vec<String>) {
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
}
