//! Machine identity from `/proc`: CPU model, kernel release, host name. All optional.

use std::path::Path;

use super::files::{clean, read_optional, Notes};

/// Names of the main aarch64 implementers (`CPU implementer` of `/proc/cpuinfo`).
fn implementer_name(code: &str) -> Option<&'static str> {
    Some(match code.to_ascii_lowercase().as_str() {
        "0x41" => "ARM",
        "0x42" => "Broadcom",
        "0x43" => "Cavium",
        "0x46" => "Fujitsu",
        "0x48" => "HiSilicon",
        "0x4e" => "NVIDIA",
        "0x50" => "APM",
        "0x51" => "Qualcomm",
        "0x61" => "Apple",
        "0xc0" => "Ampere",
        _ => return None,
    })
}

/// The value of the first `key : value` line of `cpuinfo` whose key is `key`.
fn field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key)
            .then(|| v.trim())
            .filter(|v| !v.is_empty())
    })
}

/// The CPU model named by `/proc/cpuinfo` content: `model name` (x86), `Processor` (32-bit
/// ARM), `cpu model` (MIPS), `cpu` (POWER), or implementer and part (aarch64).
pub(super) fn cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Processor", "cpu model", "cpu"] {
        if let Some(v) = field(cpuinfo, key) {
            return Some(v.to_string());
        }
    }
    let imp = field(cpuinfo, "CPU implementer")?;
    let part = field(cpuinfo, "CPU part")?;
    let who = implementer_name(imp).map_or_else(|| format!("implementer {imp}"), str::to_string);
    Some(format!("{who} CPU part {part}"))
}

/// Whether `/proc/cpuinfo` content lists the `hypervisor` CPU flag (x86: the OS runs in a
/// virtual machine).
pub(super) fn has_hypervisor_flag(cpuinfo: &str) -> bool {
    field(cpuinfo, "flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"))
}

/// Whether the machine under `root` is a virtual machine by its CPU flags; `None` when
/// `/proc/cpuinfo` cannot be read.
pub(super) fn hypervisor(root: &Path) -> Option<bool> {
    let s = read_optional(&root.join("proc/cpuinfo"), &mut Notes::default())?;
    Some(has_hypervisor_flag(&s))
}

/// Whether `/proc/cpuinfo` content names an AMD CPU of family 21 or 22 (15h, 16h:
/// Bulldozer to Jaguar), whose compute units older kernels list as hardware threads.
pub(super) fn is_amd_compute_unit_part(cpuinfo: &str) -> bool {
    field(cpuinfo, "vendor_id") == Some("AuthenticAMD")
        && matches!(field(cpuinfo, "cpu family"), Some("21" | "22"))
}

/// [`is_amd_compute_unit_part`] of the `/proc/cpuinfo` under `root`; `false` when it
/// cannot be read.
pub(super) fn amd_compute_units(root: &Path) -> bool {
    read_optional(&root.join("proc/cpuinfo"), &mut Notes::default())
        .is_some_and(|s| is_amd_compute_unit_part(&s))
}

/// The identity read under `root`: (CPU model, kernel release, host name).
pub(super) fn read_identity(
    root: &Path,
    notes: &mut Notes,
) -> (Option<String>, Option<String>, Option<String>) {
    let model = read_optional(&root.join("proc/cpuinfo"), notes).and_then(|s| cpu_model(&s));
    let nonempty = |s: String| Some(clean(&s).to_string()).filter(|s| !s.is_empty());
    let kernel = read_optional(&root.join("proc/sys/kernel/osrelease"), notes)
        .and_then(nonempty)
        .or_else(|| {
            // `Linux version 5.15.0-rc1 (builder) ...`
            let v = read_optional(&root.join("proc/version"), notes)?;
            let mut words = v.split_whitespace();
            (words.next() == Some("Linux") && words.next() == Some("version"))
                .then(|| words.next().map(str::to_string))
                .flatten()
        });
    let host = read_optional(&root.join("proc/sys/kernel/hostname"), notes).and_then(nonempty);
    (model, kernel, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t:    Intel(R) Xeon(TM) CPU 2.60GHz\n")
                .as_deref(),
            Some("Intel(R) Xeon(TM) CPU 2.60GHz")
        );
        assert_eq!(
            cpu_model("processor\t: 0\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n").as_deref(),
            Some("HiSilicon CPU part 0xd01")
        );
        assert_eq!(
            cpu_model("CPU implementer\t: 0x99\nCPU part\t: 0x1\n").as_deref(),
            Some("implementer 0x99 CPU part 0x1")
        );
        assert_eq!(cpu_model("cpu MHz : 100\ncpu family : 6\n"), None);
        assert_eq!(
            cpu_model("cpu\t\t: POWER9 (raw)\n").as_deref(),
            Some("POWER9 (raw)")
        );
        assert_eq!(cpu_model(""), None);
        assert!(is_amd_compute_unit_part(
            "vendor_id\t: AuthenticAMD\ncpu family\t: 21\n"
        ));
        assert!(!is_amd_compute_unit_part(
            "vendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
        ));
    }
}
