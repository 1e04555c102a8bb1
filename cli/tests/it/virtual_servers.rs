//! topoprobe on a virtual server of a shape this machine is not: one QEMU guest
//! (`scripts/vm/guest.sh`, software emulation) with 2 sockets × 4 cores × 2 threads, two NUMA
//! nodes per socket (sub-NUMA clusters), one memory-only node and ACPI HMAT, the checks
//! confined by a cgroup cpuset to CPUs 0-11, booted once for every test of this file. Inside it `scripts/vm/checks.sh` runs this build's binary (the
//! guest sees this machine's files read-only at the same paths), and `scripts/vm/compare.py`
//! judges the results against hwloc (lstopo, hwloc-calc), which reads the same sysfs:
//!
//! - `topoprobe os --json` equals lstopo: counts, the PU sets of packages, cores, nodes, L2
//!   and L3 caches, node memory, distances, memory-side caches;
//! - `topoprobe cpus NAME` equals `hwloc-calc --physical-output --intersect pu NAME`, before
//!   and after `infer` has saved a description;
//! - `infer` exits 0 and finds the OS's sockets, cores and SMT;
//! - `mem --json` names every node, the memory-only one included;
//! - `show --format hwloc-xml` of infer's description loads in `lstopo --input`;
//! - `place`, `run`, `autopin` and `balance` use only the CPUs the cpuset allows, and
//!   `run --pin package:0.core:1` runs the program where hwloc-calc says that core is.
//!
//! Every failure message names the shape, the check, and both answers (hwloc's first).
//!
//! Skipping: where QEMU, the kernel (linux-image-amd64) or busybox-static is missing, or the
//! guest's boot stalls twice, every test prints `skipped: <reason>` on standard error and
//! passes. Under CI (`CI=true`), where `scripts/setup.sh` installs these packages
//! (`scripts/debian-packages.txt`), a missing package fails instead, so that CI never
//! silently checks nothing; `TOPOPROBE_VM_TESTS=skip` skips on purpose (a CI runner that
//! cannot run QEMU), and says so. A stalled boot is skipped in CI too: it is the emulator's,
//! not topoprobe's. The guest is bounded: 60 s to boot (once retried) and 420 s for the
//! checks, all under an outer `timeout`. About 60-90 s on a 2-vCPU machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SHAPE: &str = "2s-4c-2t-snc2-memonly-hmat-cpuset";
const SHAPE_ARGS: &[&str] = &[
    "--sockets",
    "2",
    "--cores",
    "4",
    "--threads",
    "2",
    "--nodes-per-socket",
    "2",
    "--memory-only",
    "1",
    "--hmat",
    "on",
    "--mem-per-node",
    "256",
    // The checks run confined to CPUs 0-11 (of 16), as a Slurm job or a container is.
    "--cpuset",
    "0-11:0-4",
];

/// One judged check of compare.py.
#[derive(Debug, Clone)]
struct Check {
    check: String,
    ok: bool,
    reference: String,
    topoprobe: String,
    detail: String,
}

/// What the one guest gave: its checks, or why there are none.
enum Guest {
    Ran { dir: PathBuf, checks: Vec<Check> },
    Skipped(String),
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Boots the guest once (the first test to ask waits for it, the others reuse it).
fn guest() -> &'static Guest {
    static GUEST: OnceLock<Guest> = OnceLock::new();
    GUEST.get_or_init(boot)
}

fn skip_or_fail(reason: String, fail_in_ci: bool) -> Guest {
    if fail_in_ci && in_ci() {
        panic!(
            "{SHAPE}: {reason}; CI installs qemu-system-x86, linux-image-amd64 and \
             busybox-static (scripts/setup.sh), so this is a failure there \
             (TOPOPROBE_VM_TESTS=skip skips on purpose)"
        );
    }
    Guest::Skipped(reason)
}

fn boot() -> Guest {
    if std::env::var("TOPOPROBE_VM_TESTS").is_ok_and(|v| v == "skip") {
        return Guest::Skipped("TOPOPROBE_VM_TESTS=skip".into());
    }
    let repo = repo();
    let guest_sh = repo.join("scripts/vm/guest.sh");
    // Can guests run here? (exit 77: no, with the reason)
    let check = Command::new(&guest_sh)
        .arg("--check")
        .output()
        .expect("running scripts/vm/guest.sh --check");
    if !check.status.success() {
        let why = String::from_utf8_lossy(&check.stdout).into_owned()
            + &String::from_utf8_lossy(&check.stderr);
        let why = why
            .lines()
            .filter(|l| l.contains("missing") || l.contains("cannot"))
            .collect::<Vec<_>>()
            .join("; ");
        return skip_or_fail(format!("guests cannot run here: {why}"), true);
    }
    if Command::new("lstopo-no-graphics")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip_or_fail("lstopo-no-graphics (hwloc) is missing".into(), true);
    }
    let dir = tempfile::Builder::new()
        .prefix("topoprobe-vm-test.")
        .tempdir()
        .expect("a scratch directory")
        .keep();
    // The guest sees this machine's files, but not what lies under /tmp, /run or /var/tmp
    // (fresh tmpfs there): the binary and the checks are copied into the shared output
    // directory when they are there (a CARGO_TARGET_DIR or checkout under /tmp).
    let visible = |p: &Path, name: &str| -> PathBuf {
        let hidden = ["/tmp", "/run", "/var/tmp"]
            .iter()
            .any(|h| p.starts_with(h));
        if !hidden {
            return p.to_path_buf();
        }
        let copy = dir.join("bin").join(name);
        std::fs::create_dir_all(dir.join("bin")).expect("a folder for the copies");
        std::fs::copy(p, &copy).unwrap_or_else(|e| panic!("copying {}: {e}", p.display()));
        copy
    };
    let tp = visible(Path::new(env!("CARGO_BIN_EXE_topoprobe")), "topoprobe");
    let checks_sh = visible(&repo.join("scripts/vm/checks.sh"), "checks.sh");
    let out = Command::new("timeout")
        .args(["-k", "10", "600"])
        .arg(&guest_sh)
        .args(SHAPE_ARGS)
        .args(["--timeout", "420", "--boot-timeout", "60", "--out"])
        .arg(&dir)
        .args(["--env", &format!("TP={}", tp.display())])
        .arg("--")
        .arg(&checks_sh)
        .current_dir(&repo)
        .output()
        .expect("running scripts/vm/guest.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let times = std::fs::read_to_string(dir.join(".vm/times")).unwrap_or_default();
    eprintln!(
        "{SHAPE}: guest in {}: {}",
        dir.display(),
        times.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    match out.status.code() {
        Some(0) => {}
        Some(75) => {
            return skip_or_fail(
                format!("the guest's boot stalled twice: {}", stderr.trim()),
                false,
            )
        }
        Some(77) => {
            return skip_or_fail(format!("guests cannot run here: {}", stderr.trim()), true)
        }
        code => panic!(
            "{SHAPE}: scripts/vm/guest.sh ... -- scripts/vm/checks.sh ended with {code:?} \
             (124: timed out, 70: the guest crashed); stderr: {stderr}; guest's files in {}",
            dir.display()
        ),
    }
    let judged = Command::new("python3")
        .arg(repo.join("scripts/vm/compare.py"))
        .arg(&dir)
        .args(["--shape", SHAPE, "--json"])
        .output()
        .expect("running scripts/vm/compare.py");
    assert!(
        judged.status.success(),
        "{SHAPE}: compare.py failed: {}",
        String::from_utf8_lossy(&judged.stderr)
    );
    let rows: serde_json::Value =
        serde_json::from_slice(&judged.stdout).expect("compare.py --json prints JSON");
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let checks = rows
        .as_array()
        .expect("a JSON list")
        .iter()
        .map(|v| Check {
            check: text(v, "check"),
            ok: v["ok"].as_bool().unwrap_or(false),
            reference: text(v, "reference"),
            topoprobe: text(v, "topoprobe"),
            detail: text(v, "detail"),
        })
        .collect();
    Guest::Ran { dir, checks }
}

/// The checks whose name starts with one of `prefixes`, or `None` (after saying why) when
/// the guest was skipped.
fn checks(prefixes: &[&str]) -> Option<(&'static Path, Vec<Check>)> {
    match guest() {
        Guest::Skipped(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
        Guest::Ran { dir, checks } => Some((
            dir.as_path(),
            checks
                .iter()
                .filter(|c| prefixes.iter().any(|p| c.check.starts_with(p)))
                .cloned()
                .collect(),
        )),
    }
}

/// Asserts that every check agrees; the message lists each one that does not.
fn assert_all_agree(what: &str, dir: &Path, checks: &[Check]) {
    assert!(
        !checks.is_empty(),
        "{SHAPE}: no {what} checks were judged (files in {})",
        dir.display()
    );
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| {
            let detail = if c.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.detail)
            };
            format!(
                "  {SHAPE}: {}{detail}: OS/hwloc says {}, topoprobe says {}",
                c.check, c.reference, c.topoprobe
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} checks disagree (guest's files in {}):\n{}",
        bad.len(),
        checks.len(),
        dir.display(),
        bad.join("\n")
    );
}

#[test]
fn the_guest_has_the_shape_asked_for() {
    let Some((dir, _)) = checks(&[]) else { return };
    let os: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("os.out")).expect("os.out of the guest"),
    )
    .expect("os --json");
    let c = &os["counts"];
    let got = (
        c["packages"].as_u64(),
        c["cores"].as_u64(),
        c["pus"].as_u64(),
        c["numa_nodes"].as_u64(),
    );
    assert_eq!(
        got,
        (Some(2), Some(8), Some(16), Some(5)),
        "{SHAPE}: (packages, cores, PUs, NUMA nodes) of `topoprobe os --json`"
    );
}

#[test]
fn os_view_equals_lstopo() {
    let Some((dir, c)) = checks(&["os."]) else {
        return;
    };
    assert_all_agree("topoprobe os --json vs lstopo", dir, &c);
}

#[test]
fn cpus_equal_hwloc_calc() {
    let Some((dir, c)) = checks(&["cpus-os.", "cpus."]) else {
        return;
    };
    assert_all_agree("topoprobe cpus NAME vs hwloc-calc NAME", dir, &c);
}

#[test]
fn infer_finds_the_os_structure() {
    let Some((dir, c)) = checks(&["infer"]) else {
        return;
    };
    assert_all_agree("topoprobe infer vs the OS", dir, &c);
}

#[test]
fn mem_names_every_node() {
    let Some((dir, c)) = checks(&["mem"]) else {
        return;
    };
    assert_all_agree("topoprobe mem", dir, &c);
}

#[test]
fn placement_and_tuning_keep_to_the_cpuset() {
    let Some((dir, c)) = checks(&["place.", "run.", "autopin.", "balance."]) else {
        return;
    };
    assert_all_agree("place, run, autopin and balance in a cpuset", dir, &c);
}

#[test]
fn hwloc_xml_export_loads_in_lstopo() {
    let Some((dir, c)) = checks(&["export", "place"]) else {
        return;
    };
    assert_all_agree(
        "show --format hwloc-xml | lstopo --input, and place",
        dir,
        &c,
    );
}
