//! The sysfs reader against real captures (hwloc's test suite: `tests/data/sysfs/*.tar.bz2`),
//! checked against what `lstopo -v` (hwloc 2.9) printed for the same capture.
//!
//! Each tarball unpacks to a directory named after it, a root with `sys/devices/system/{cpu,
//! node}` and parts of `proc`. Unpacking needs `tar` with `bzip2`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use topoprobe_measure::os::{current, read_os_view};
use topoprobe_model::{parse_cpu_mask, OsView};

const CAPTURES: [&str; 6] = [
    "128arm-2pa2n8cluster4co",
    "16em64t-4s2c2t",
    "20em64t-hybrid-1p6c2t+2ca4co1t",
    "amd-zen3-vm-2c",
    "memorysidecaches",
    "offline-cpu0-node0",
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs")
}

/// Unpacks capture `name` into `dir` and returns its root.
fn unpack(name: &str, dir: &Path) -> PathBuf {
    let tarball = data_dir().join(format!("{name}.tar.bz2"));
    let out = Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tar (needs tar and bzip2): {e}"));
    assert!(
        out.status.success(),
        "tar xjf {} failed (is bzip2 installed?): {}",
        tarball.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(name)
}

/// The distinct logical indexes `L#n` of objects of type `ty` in lstopo's output
/// (`Package L#0`, `NUMANode L#3`, ...).
fn logical_indexes(console: &str, ty: &str) -> BTreeSet<u32> {
    let pat = format!("{ty} L#");
    let mut out = BTreeSet::new();
    for line in console.lines() {
        let mut rest = line;
        while let Some(i) = rest.find(&pat) {
            let before = &rest[..i];
            rest = &rest[i + pat.len()..];
            // `PU L#` must not match inside another name, e.g. a hypothetical `XPU L#`.
            if before.chars().last().is_some_and(char::is_alphanumeric) {
                continue;
            }
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            out.insert(digits.parse().expect("L# is followed by a number"));
        }
    }
    out
}

/// The count lstopo's summary gives for `ty` (`depth 1:  4 Package (type #1)`).
fn summary_count(console: &str, ty: &str) -> Option<usize> {
    console.lines().find_map(|l| {
        let (_, rest) = l.split_once(':')?;
        let mut words = rest.split_whitespace();
        let n = words.next()?.parse().ok()?;
        (words.next()? == ty).then_some(n)
    })
}

/// The number of `ty` objects lstopo shows, checked against its own summary.
fn count(console: &str, ty: &str) -> usize {
    let ids = logical_indexes(console, ty);
    if let Some(n) = summary_count(console, ty) {
        assert_eq!(ids.len(), n, "{ty}: L# objects vs summary");
    }
    // Logical indexes are 0..n.
    assert_eq!(
        ids.iter().copied().max().map_or(0, |m| m as usize + 1),
        ids.len()
    );
    ids.len()
}

struct Expected {
    packages: usize,
    numa_nodes: usize,
    cores: usize,
    pus: usize,
    l2: usize,
    l3: usize,
}

fn expected(name: &str) -> (Expected, String) {
    let console =
        std::fs::read_to_string(data_dir().join(format!("{name}.debian-hwloc2.9.console")))
            .unwrap();
    let e = Expected {
        packages: count(&console, "Package"),
        numa_nodes: count(&console, "NUMANode"),
        cores: count(&console, "Core"),
        pus: count(&console, "PU"),
        l2: count(&console, "L2Cache"),
        l3: count(&console, "L3Cache"),
    };
    (e, console)
}

fn read(name: &str) -> (OsView, Expected, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = unpack(name, dir.path());
    let view = read_os_view(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (e, console) = expected(name);
    (view, e, console)
}

#[test]
fn counts_match_lstopo() {
    for name in CAPTURES {
        let (v, e, _) = read(name);
        let got = (
            v.num_packages(),
            v.num_numa_nodes().unwrap_or(0),
            v.num_cores(),
            v.num_pus(),
        );
        assert_eq!(
            got,
            (e.packages, e.numa_nodes, e.cores, e.pus),
            "{name}: (packages, NUMA nodes, cores, PUs) vs lstopo; notes: {:?}",
            v.notes
        );
        assert_eq!(v.cache_groups(2).len(), e.l2, "{name}: L2 caches");
        assert_eq!(v.cache_groups(3).len(), e.l3, "{name}: L3 caches");
        // Every online CPU is in exactly one core, and the cores match the sibling masks.
        for core in v.cores() {
            for &c in &core {
                let siblings = &v.cpu(c).unwrap().thread_siblings;
                let online_siblings: Vec<u32> = siblings
                    .iter()
                    .copied()
                    .filter(|s| v.cpu(*s).is_some())
                    .collect();
                assert_eq!(online_siblings, core, "{name}: CPU {c}");
            }
        }
        check_structure(name, &v, &e);
    }
}

#[test]
fn parsing_of_lstopo_output_can_fail() {
    let console = "Package L#0 (P#0)\n  Core L#0\n    PU L#0 (P#0)\n    PU L#1 (P#1)\n";
    assert_eq!(count(console, "Package"), 1);
    assert_eq!(count(console, "PU"), 2);
    assert_eq!(count(console, "NUMANode"), 0);
}

#[test]
fn offline_cpus_and_missing_node() {
    let (v, _, console) = read("offline-cpu0-node0");
    // lstopo: "7 processors not represented in topology: 0x00e0000f".
    let mask = console
        .lines()
        .find_map(|l| l.strip_prefix("7 processors not represented in topology: 0x"))
        .unwrap();
    assert_eq!(v.offline, parse_cpu_mask(mask).unwrap());
    assert_eq!(v.online(), (4..=20).collect::<Vec<_>>());
    // Only node 1 is there; the even CPUs' node is unknown.
    assert_eq!(v.node_cpus().keys().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(v.cpu(5).unwrap().node, Some(1));
    assert_eq!(v.cpu(4).unwrap().node, None);
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("4,6,8,10,12,14,16,18,20")),
        "{:?}",
        v.notes
    );
    assert!(!v.smt());
    assert_eq!(
        v.nodes.as_ref().unwrap()[0].memory_bytes,
        Some(67_108_864 << 10)
    );
    assert_eq!(
        v.cpu_model.as_deref(),
        Some("Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz")
    );
}

#[test]
fn kunpeng_ids_clusters_and_nul_bytes() {
    let (v, _, console) = read("128arm-2pa2n8cluster4co");
    assert_eq!(
        v.packages().keys().copied().collect::<Vec<_>>(),
        vec![36, 8442]
    );
    assert_eq!(v.clusters().len(), count(&console, "Group0(Cluster)"));
    assert!(v.clusters().values().all(|c| c.len() == 4));
    assert_eq!(v.cpu(0).unwrap().die, None);
    assert_eq!(v.cpu(0).unwrap().capacity, Some(1024));
    assert_eq!(v.nodes.as_ref().unwrap()[3].distances, vec![33, 32, 16, 10]);
    assert_eq!(v.cpu_model.as_deref(), Some("HiSilicon CPU part 0xd01"));
    assert_eq!(
        v.kernel.as_deref(),
        Some("5.15.0-rc1-00005-g4c1b4a4d90b6-dirty")
    );
    assert!(v.cpu_kinds().is_empty());
}

#[test]
fn hybrid_kinds() {
    let (v, _, _) = read("20em64t-hybrid-1p6c2t+2ca4co1t");
    assert!(v.smt());
    let kinds = v.cpu_kinds();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    // E-cores 12-19 have a base frequency of 1.4 GHz, P-cores 0-11 1.9 GHz (their highest
    // frequencies are 3.9, and 5.0 or 5.2 GHz for the favored cores).
    assert_eq!(kinds[0].cpus, (12..20).collect::<Vec<_>>());
    assert_eq!(kinds[1].cpus, (0..12).collect::<Vec<_>>());
    let l2 = v.cache_groups(2);
    assert!(l2.contains(&vec![12, 13, 14, 15]), "{l2:?}");
}

#[test]
fn sub_numa_nodes_interleaved() {
    let (v, _, _) = read("memorysidecaches");
    assert_eq!(v.node_cpus()[&2], (2..80).step_by(4).collect::<Vec<_>>());
    assert_eq!(v.cores()[0], vec![0, 40]);
    assert!(v.notes.is_empty() || v.notes.iter().all(|n| !n.contains("core_id")));
}

#[test]
fn old_kernel_without_online_files() {
    let (v, _, _) = read("16em64t-4s2c2t");
    assert_eq!(v.cpu(4).unwrap().thread_siblings, vec![4, 12]);
    assert_eq!(v.packages()[&1], vec![1, 5, 9, 13]);
    assert_eq!(v.caches_of(0).len(), 3);
}

#[test]
fn this_machine() {
    let v = current().unwrap_or_else(|e| panic!("reading this machine's sysfs: {e}"));
    assert!(v.num_pus() >= 1);
    assert!(v.num_cores() >= 1 && v.num_cores() <= v.num_pus());
    assert!(v.num_packages() >= 1);
}

/// The description made from a capture's OS view (what `place` uses on a machine with no
/// saved description) has lstopo's packages, cores, PUs and NUMA nodes, no latency, and
/// groups of several cores only.
fn check_structure(name: &str, v: &OsView, e: &Expected) {
    let t = v
        .structure()
        .unwrap_or_else(|err| panic!("{name}: no description from the OS view: {err}"));
    assert_eq!(
        (
            t.sockets().len(),
            t.cores().len(),
            t.contexts().len(),
            t.nodes().len()
        ),
        (e.packages, e.cores, e.pus, e.numa_nodes),
        "{name}: (sockets, cores, contexts, nodes) vs lstopo"
    );
    assert!(t.levels().is_empty(), "{name}: no latency is known");
    for g in t.groups() {
        assert!(g.cores.len() > 1, "{name}: a group of one core");
    }
    if name.starts_with("128arm") {
        assert!(
            t.groups().iter().any(|g| g.cores.len() == 4),
            "{name}: the clusters of 4 cores are groups"
        );
    }
}
