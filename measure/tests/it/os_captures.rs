//! The sysfs reader against real captures, checked against what `lstopo -v` (hwloc 2.9)
//! printed for the same capture: hwloc's test suite (`tests/data/sysfs/*.tar.bz2`), and
//! captures made with `hwloc-gather-topology` on the machines topoprobe is worked on
//! (`data/sysfs/` at the top of the repository).
//!
//! Each tarball holds one folder named after it, a root with `sys/devices/system/{cpu,
//! node}` and parts of `proc`; the reader's own unpacker ([`unpack_capture`]) opens it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use topoprobe_measure::os::{current, read_os_view, unpack_capture, Unpacked};
use topoprobe_model::{parse_cpu_mask, CacheType, OsView};

const CAPTURES: [&str; 8] = [
    "128arm-2pa2n8cluster4co",
    "16em64t-4s2c2t",
    "20em64t-hybrid-1p6c2t+2ca4co1t",
    "amd-zen3-vm-2c",
    "memorysidecaches",
    "offline-cpu0-node0",
    "intel-xeon-6-207-vm-16c",
    "amd-zen4-vm-2c",
];

/// The folder holding capture `name` and its lstopo output: hwloc's captures beside the
/// tests, the ones made here at the top of the repository.
fn data_dir(name: &str) -> PathBuf {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs");
    if tests.join(format!("{name}.tar.bz2")).is_file() {
        tests
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/sysfs")
    }
}

/// Unpacks capture `name` (removed when the result is dropped).
fn unpack(name: &str) -> Unpacked {
    let tarball = data_dir(name).join(format!("{name}.tar.bz2"));
    let u = unpack_capture(&tarball).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        u.root().file_name().unwrap(),
        name,
        "the root is the one folder"
    );
    u
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
        std::fs::read_to_string(data_dir(name).join(format!("{name}.debian-hwloc2.9.console")))
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
    let unpacked = unpack(name);
    let view = read_os_view(unpacked.root()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (e, console) = expected(name);
    (view, e, console)
}

/// One object of lstopo's tree: its type, `P#` (when shown), `local=` memory in KiB (for
/// NUMA nodes), `size=` in KiB (for caches), and the `P#` of the PUs below it.
#[derive(Debug)]
struct Object {
    ty: String,
    os_index: Option<u32>,
    local_kib: Option<u64>,
    size_kib: Option<u64>,
    pus: BTreeSet<u32>,
    /// For a NUMA node or memory-side cache: the PUs of the nearest normal object above it
    /// (hwloc attaches memory to the object whose CPUs are local to it).
    local_pus: BTreeSet<u32>,
}

/// The value of `key=` in an object's attributes (`size=307200KB` gives `307200KB`).
fn attribute<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line
        .find(&format!(" {key}="))
        .or_else(|| line.find(&format!("({key}=")))?;
    let rest = &line[at + key.len() + 2..];
    Some(rest.split([' ', ')']).next().unwrap_or(""))
}

fn kib(v: &str) -> u64 {
    v.strip_suffix("KB").expect("sizes in KB").parse().unwrap()
}

/// The objects of lstopo's tree (the indented lines before the `depth` summary), with the
/// PUs below each.
fn tree(console: &str) -> Vec<Object> {
    let mut objects: Vec<(usize, Object)> = Vec::new();
    // For each memory object, the object it hangs from (`None`: the machine).
    let mut holders: Vec<Option<Option<usize>>> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for line in console.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim_start();
        let Some((ty, rest)) = text.split_once(" L#") else {
            continue;
        };
        if ty.contains(' ') || !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        while open.last().is_some_and(|&o| objects[o].0 >= indent) {
            open.pop();
        }
        let os_index = text
            .split_once("(P#")
            .and_then(|(_, r)| r.split([' ', ')']).next().and_then(|v| v.parse().ok()));
        if ty == "PU" {
            let p = os_index.expect("a PU has a P#");
            for &o in &open {
                objects[o].1.pus.insert(p);
            }
        }
        let memory = matches!(ty, "NUMANode" | "MemCache");
        let holder = open
            .iter()
            .rev()
            .find(|&&o| !matches!(objects[o].1.ty.as_str(), "NUMANode" | "MemCache"))
            .copied();
        holders.push(memory.then_some(holder));
        objects.push((
            indent,
            Object {
                ty: ty.to_string(),
                os_index,
                local_kib: attribute(text, "local").map(kib),
                size_kib: attribute(text, "size").map(kib),
                pus: BTreeSet::new(),
                local_pus: BTreeSet::new(),
            },
        ));
        open.push(objects.len() - 1);
    }
    // The PUs local to each memory object, now that every PU is known: those of the
    // object it hangs from, or all of them when it hangs from the machine.
    let pus: Vec<BTreeSet<u32>> = objects.iter().map(|(_, o)| o.pus.clone()).collect();
    let all: BTreeSet<u32> = pus.iter().flatten().copied().collect();
    objects
        .into_iter()
        .zip(holders)
        .map(|((_, mut o), holder)| {
            if let Some(holder) = holder {
                o.local_pus = holder.map_or_else(|| all.clone(), |h| pus[h].clone());
            }
            o
        })
        .collect()
}

/// lstopo's cache type name for a sysfs cache: `L2Cache` for data and unified caches,
/// `L1dCache`, `L1iCache`, `L2iCache`...
fn cache_name(level: u8, kind: CacheType) -> String {
    match (level, kind) {
        (1, CacheType::Data) => "L1dCache".to_string(),
        (_, CacheType::Instruction) => format!("L{level}iCache"),
        _ => format!("L{level}Cache"),
    }
}

/// Packages, cores, PUs, NUMA nodes and caches of capture `name` equal lstopo's, and so do
/// the PUs of every cache instance, the CPUs and memory of every node, and the
/// memory-side caches.
fn check_capture(name: &str) {
    let (v, e, console) = read(name);
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
    let objects = tree(&console);
    // Every cache instance, with the PUs sharing it (online ones: lstopo shows no other).
    let online: BTreeSet<u32> = v.online().into_iter().collect();
    let mut ours: Vec<(String, Vec<u32>, Option<u64>)> = v
        .caches
        .iter()
        .map(|c| {
            let cpus: Vec<u32> = c
                .cpus
                .iter()
                .copied()
                .filter(|x| online.contains(x))
                .collect();
            (
                cache_name(c.level, c.kind),
                cpus,
                c.size_bytes.map(|b| b >> 10),
            )
        })
        .filter(|(_, cpus, _)| !cpus.is_empty())
        .collect();
    ours.sort();
    let mut theirs: Vec<(String, Vec<u32>, Option<u64>)> = objects
        .iter()
        .filter(|o| o.ty.ends_with("Cache") && o.ty != "MemCache")
        .map(|o| (o.ty.clone(), o.pus.iter().copied().collect(), o.size_kib))
        .collect();
    theirs.sort();
    assert!(
        !theirs.is_empty() || v.caches.is_empty(),
        "{name}: caches parsed"
    );
    assert_eq!(
        ours, theirs,
        "{name}: cache instances (type, PUs, KiB) vs lstopo"
    );
    // NUMA nodes: their numbers, memory and local PUs.
    let ours: BTreeMap<u32, (Vec<u32>, Option<u64>)> = v
        .node_cpus()
        .into_iter()
        .map(|(id, cpus)| {
            let mem = v
                .nodes
                .iter()
                .flatten()
                .find(|n| n.id == id)
                .and_then(|n| n.memory_bytes)
                .map(|b| b >> 10);
            (id, (cpus, mem))
        })
        .collect();
    let theirs: BTreeMap<u32, (Vec<u32>, Option<u64>)> = objects
        .iter()
        .filter(|o| o.ty == "NUMANode")
        .map(|o| {
            (
                o.os_index.expect("a node has a P#"),
                (o.local_pus.iter().copied().collect(), o.local_kib),
            )
        })
        .collect();
    assert_eq!(ours, theirs, "{name}: nodes (CPUs, KiB) vs lstopo");
    // Memory-side caches: one per node that has one, of lstopo's size.
    let mut ours: Vec<(Vec<u32>, Option<u64>)> = v
        .memory_side_caches
        .iter()
        .map(|c| {
            (
                v.node_cpus()[&c.node].clone(),
                c.size_bytes.map(|b| b >> 10),
            )
        })
        .collect();
    ours.sort();
    let mut theirs: Vec<(Vec<u32>, Option<u64>)> = objects
        .iter()
        .filter(|o| o.ty == "MemCache")
        .map(|o| (o.local_pus.iter().copied().collect(), o.size_kib))
        .collect();
    theirs.sort();
    assert_eq!(
        ours, theirs,
        "{name}: memory-side caches (node CPUs, KiB) vs lstopo"
    );
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
    // The cgroup's cpuset allows every CPU lstopo shows.
    assert!(
        v.disallowed().is_empty(),
        "{name}: disallowed {:?}",
        v.disallowed()
    );
    check_structure(name, &v, &e);
}

/// One test per capture.
macro_rules! captures {
    ($($test:ident: $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_capture($name);
            }
        )*

        #[test]
        fn every_capture_has_its_test() {
            let tested = [$($name),*];
            assert_eq!(tested.len(), CAPTURES.len());
            for c in CAPTURES {
                assert!(tested.contains(&c), "{c} has no test");
            }
        }
    };
}

captures! {
    capture_128arm_2pa2n8cluster4co: "128arm-2pa2n8cluster4co",
    capture_16em64t_4s2c2t: "16em64t-4s2c2t",
    capture_20em64t_hybrid: "20em64t-hybrid-1p6c2t+2ca4co1t",
    capture_amd_zen3_vm_2c: "amd-zen3-vm-2c",
    capture_memorysidecaches: "memorysidecaches",
    capture_offline_cpu0_node0: "offline-cpu0-node0",
    capture_intel_xeon_6_207_vm_16c: "intel-xeon-6-207-vm-16c",
    capture_amd_zen4_vm_2c: "amd-zen4-vm-2c",
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
fn cgroup_cpusets_v1_v2_and_none() {
    // cgroup v2; the capture kept the parent's `cpuset.cpus.effective` only.
    let (v, _, _) = read("intel-xeon-6-207-vm-16c");
    assert_eq!(v.cpuset, Some((0..16).collect()));
    // cgroup v1 with `cpuset.cpus` only (no `cpuset.effective_cpus`): the online CPUs.
    let (v, _, _) = read("offline-cpu0-node0");
    assert_eq!(v.cpuset, Some((4..=20).collect()));
    // v1 beside an unused v2 hierarchy.
    let (v, _, _) = read("amd-zen4-vm-2c");
    assert_eq!(v.cpuset, Some(vec![0, 1]));
    // An old capture without proc/self.
    let (v, _, _) = read("16em64t-4s2c2t");
    assert_eq!(v.cpuset, None);
}

#[test]
fn memory_side_caches() {
    let (v, _, _) = read("memorysidecaches");
    assert_eq!(v.memory_side_caches.len(), 4);
    let c = &v.memory_side_caches[0];
    assert_eq!((c.node, c.level), (0, 1));
    assert_eq!(c.size_bytes, Some(103_079_215_104));
    assert_eq!(c.line_size, Some(64));
    assert_eq!(c.direct_mapped, Some(true));
    assert_eq!(c.write_policy.as_deref(), Some("write-back"));
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

/// x86 kernels write `cluster_id` 65535 where a CPU has no cluster (the AMD guest); that
/// is no cluster, where the Intel guest's ids (one per core's L2) are clusters.
#[test]
fn a_cluster_id_of_65535_is_no_cluster() {
    let (v, _, _) = read("amd-zen4-vm-2c");
    assert!(v.cpus.iter().all(|c| c.cluster.is_none()), "{:?}", v.cpus);
    assert!(v.clusters().is_empty());
    let (v, _, _) = read("intel-xeon-6-207-vm-16c");
    assert_eq!(v.clusters().len(), 16);
}
