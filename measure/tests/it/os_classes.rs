//! The OS view of sysfs trees that break the usual rules, one test per kind of machine,
//! each checked by its expected counts and, when hwloc is installed, against
//! `lstopo-no-graphics` on the same tree.

use crate::hwloc;
use crate::tree;

use topoprobe_measure::os::{read_os_view, read_os_view_with, OsView, ReadOptions};
use tree::Tree;

/// Reads the tree and compares it with hwloc.
fn read(t: &Tree) -> OsView {
    let v = read_os_view(t.root()).expect("readable");
    hwloc::assert_agrees(&v, t.root());
    v
}

/// Whether a note contains every one of `words`.
fn noted(v: &OsView, words: &[&str]) -> bool {
    v.notes.iter().any(|n| words.iter().all(|w| n.contains(w)))
}

/// Per-CPU L1d and L2 caches, and an L3 per `l3` list.
fn private_caches(t: &Tree, cpus: u32, l3: &[&str]) {
    for c in 0..cpus {
        t.cache(c, 0, 1, "Data", 32, Some(&c.to_string()));
        t.cache(c, 2, 2, "Unified", 512, Some(&c.to_string()));
        if let Some(s) = l3.iter().find(|s| tree_contains(s, c)) {
            t.cache(c, 3, 3, "Unified", 8192, Some(s));
        }
    }
}

/// Whether the list `s` (`a-b`) holds `c`.
fn tree_contains(s: &str, c: u32) -> bool {
    s.split(',').any(|p| match p.split_once('-') {
        Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).contains(&c),
        None => p.parse::<u32>().unwrap() == c,
    })
}

#[test]
fn class1_core_ids_repeat_across_the_nodes_of_a_package() {
    // AMD Magny-Cours: one package of two nodes of 6 cores, core ids 0-5 in each.
    let t = Tree::x86(12, "AuthenticAMD", 16);
    t.online("0-11");
    for c in 0..12 {
        t.cpu(c, Some(0), Some(i64::from(c % 6)), &c.to_string(), "0-11");
    }
    private_caches(&t, 12, &["0-5", "6-11"]);
    t.node(0, "0-5", 1 << 20).node(1, "6-11", 1 << 20);
    t.distances(&["10 16", "16 10"]);
    let v = read(&t);
    assert_eq!((v.num_packages(), v.num_cores(), v.num_pus()), (1, 12, 12));
    assert!(!v.smt());
    assert!(noted(&v, &["core_id repeats"]), "{:?}", v.notes);
}

#[test]
fn class1_amd_compute_units_are_two_cores() {
    // Bulldozer: thread_siblings name the two cores of a compute unit (shared L2, own L1d).
    let t = Tree::x86(8, "AuthenticAMD", 21);
    t.online("0-7");
    for c in 0..8 {
        let pair = format!("{}-{}", c & !1, c | 1);
        t.cpu(c, Some(0), Some(i64::from(c)), &pair, "0-7");
        t.cache(c, 0, 1, "Data", 16, Some(&c.to_string()));
        t.cache(c, 2, 2, "Unified", 2048, Some(&pair));
        t.cache(c, 3, 3, "Unified", 8192, Some("0-7"));
    }
    t.node(0, "0-7", 1 << 20);
    let v = read(&t);
    assert_eq!((v.num_packages(), v.num_cores(), v.num_pus()), (1, 8, 8));
    assert!(!v.smt());
    assert!(noted(&v, &["0-1", "core_id differ"]), "{:?}", v.notes);
}

#[test]
fn class1_hardware_threads_stay_one_core() {
    let t = Tree::x86(8, "GenuineIntel", 6);
    t.online("0-7");
    for c in 0..8 {
        let pair = format!("{},{}", c % 4, c % 4 + 4);
        t.cpu(c, Some(0), Some(i64::from(c % 4)), &pair, "0-7");
        t.cache(c, 0, 1, "Data", 32, Some(&pair));
        t.cache(c, 2, 2, "Unified", 1024, Some(&pair));
        t.cache(c, 3, 3, "Unified", 8192, Some("0-7"));
    }
    t.node(0, "0-7", 1 << 20);
    let v = read(&t);
    assert_eq!((v.num_cores(), v.num_pus()), (4, 8));
    assert!(v.smt());
}

/// Four CPUs of one package and two nodes (0-1, 2-3).
fn two_nodes() -> Tree {
    let t = Tree::x86(4, "GenuineIntel", 6);
    t.online("0-3");
    for c in 0..4 {
        t.cpu(c, Some(0), Some(i64::from(c)), &c.to_string(), "0-3");
    }
    private_caches(&t, 4, &["0-3"]);
    t.node(0, "0-1", 1 << 20).node(1, "2-3", 1 << 20);
    t.distances(&["10 20", "20 10"]);
    t
}

#[test]
fn class2_legacy_cpuset_filesystem() {
    let t = two_nodes();
    t.file("proc/mounts", "none /dev/cpuset cpuset rw 0 0\n")
        .file("proc/self/cpuset", "/job\n")
        .file("dev/cpuset/cpus", "0-3\n")
        .file("dev/cpuset/mems", "0-1\n")
        .file("dev/cpuset/job/cpus", "0-1\n")
        .file("dev/cpuset/job/mems", "0\n");
    let v = read(&t);
    assert_eq!(v.cpuset, Some(vec![0, 1]));
    assert_eq!(v.allowed_nodes, Some(vec![0]));
    assert_eq!(v.disallowed(), vec![2, 3]);
    assert_eq!(v.disallowed_nodes(), vec![1]);
}

#[test]
fn class2_cgroup_v2_cpus_and_mems() {
    let t = two_nodes();
    t.file("proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
        .file("proc/self/cgroup", "0::/a\n")
        .file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n")
        .file("sys/fs/cgroup/cpuset.cpus.effective", "0-3\n")
        .file("sys/fs/cgroup/cpuset.mems.effective", "0-1\n")
        .file("sys/fs/cgroup/a/cpuset.cpus.effective", "2-3\n")
        .file("sys/fs/cgroup/a/cpuset.mems.effective", "1\n");
    let v = read(&t);
    assert_eq!(v.cpuset, Some(vec![2, 3]));
    assert_eq!(v.allowed_nodes, Some(vec![1]));
}

#[test]
fn class3_missing_ids_and_empty_online_files() {
    let t = Tree::x86(4, "GenuineIntel", 6);
    // No `online` list, and an empty `online` file (as on Itanium): online, with a note.
    t.file("sys/devices/system/cpu/cpu1/online", "");
    for c in 0..4 {
        t.cpu(c, None, None, &c.to_string(), "0-3");
    }
    private_caches(&t, 4, &["0-3"]);
    t.node(0, "0-3", 1 << 20);
    let v = read(&t);
    assert_eq!((v.num_packages(), v.num_cores(), v.num_pus()), (1, 4, 4));
    assert!(noted(&v, &["physical_package_id", "0-3"]), "{:?}", v.notes);
    assert!(noted(&v, &["core_id", "0-3"]), "{:?}", v.notes);
    assert!(noted(&v, &["cpu1/online", "not 0 or 1"]), "{:?}", v.notes);
}

#[test]
fn class3_no_masks_each_cpu_stands_alone() {
    let t = Tree::x86(2, "GenuineIntel", 6);
    t.online("0-1");
    for c in 0..2 {
        t.file(
            &format!("sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"),
            "\n",
        );
    }
    let v = read_os_view(t.root()).expect("readable");
    assert_eq!((v.num_packages(), v.num_cores(), v.num_pus()), (2, 2, 2));
}

#[test]
fn class4_no_node_directory_is_one_node() {
    let t = Tree::x86(2, "GenuineIntel", 6);
    t.online("0-1");
    t.file("proc/meminfo", "MemTotal:        2048 kB\n");
    for c in 0..2 {
        t.cpu(c, Some(0), Some(i64::from(c)), &c.to_string(), "0-1");
    }
    let v = read(&t);
    assert_eq!(v.num_numa_nodes(), Some(1));
    assert_eq!(v.node_cpus()[&0], vec![0, 1]);
    assert_eq!(v.nodes.as_ref().unwrap()[0].memory_bytes, Some(2048 << 10));
}

#[test]
fn class4_nodes_listing_the_same_cpus_are_one() {
    let t = Tree::x86(4, "GenuineIntel", 6);
    t.online("0-3");
    for c in 0..4 {
        t.cpu(c, Some(0), Some(i64::from(c)), &c.to_string(), "0-3");
    }
    for n in 0..3 {
        t.node(n, "0-3", 1 << 20);
    }
    let v = read(&t);
    assert_eq!(v.num_numa_nodes(), Some(1));
    assert!(noted(&v, &["node 1", "left out"]), "{:?}", v.notes);
}

#[test]
fn class4_gpu_memory_nodes_are_hidden_unless_kept() {
    let t = two_nodes();
    t.node(2, "", 1 << 20);
    t.file(
        "proc/driver/nvidia/gpus/0000:01:00.0/numa_status",
        "Node:      2\nStatus:    online\n",
    );
    t.file(
        "sys/bus/pci/devices/0000:01:00.0/local_cpus",
        &tree::mask("2-3"),
    );
    let v = read_os_view(t.root()).expect("readable");
    assert_eq!(v.num_numa_nodes(), Some(2));
    assert!(noted(&v, &["node 2", "NVIDIA"]), "{:?}", v.notes);
    let kept = read_os_view_with(
        t.root(),
        &ReadOptions {
            keep_gpu_nodes: true,
        },
    )
    .expect("readable");
    assert_eq!(kept.num_numa_nodes(), Some(3));
    assert_eq!(kept.node_locality(2), vec![2, 3]);
    if let Some(xml) = hwloc::lstopo_xml(t.root()) {
        // hwloc 2.9 hides them too (HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES keeps them).
        let d = hwloc::differences(&v, &xml);
        assert!(d.is_empty(), "{d:?}");
    }
}

#[test]
fn class4_memory_only_nodes_sit_with_their_initiators() {
    let t = two_nodes();
    t.node(2, "", 4 << 20);
    t.distances(&["10 20 17", "20 10 28", "17 28 10"]);
    t.file("sys/devices/system/node/node2/access1/initiators/node1", "");
    let v = read(&t);
    assert_eq!(v.num_numa_nodes(), Some(3));
    assert_eq!(v.node_locality(2), vec![2, 3]);
    assert!(v.node_cpus()[&2].is_empty());
}

#[test]
fn class5_power_package_minus_one_uses_the_sibling_lists() {
    let t = Tree::x86(8, "IBM", 0);
    t.online("0-7");
    for c in 0..8 {
        let core = if c < 4 { "0-3" } else { "4-7" };
        t.cpu(c, Some(-1), Some(i64::from(c & !3)), core, core);
    }
    t.node(0, "0-7", 1 << 20);
    let v = read(&t);
    assert_eq!((v.num_packages(), v.num_cores(), v.num_pus()), (2, 2, 8));
    assert!(noted(&v, &["physical_package_id", "(-1)"]), "{:?}", v.notes);
}

#[test]
fn class5_repeated_package_ids_with_other_sibling_lists() {
    // Itanium: CPUs 0 and 1 both say package 0, but each is its own package.
    let t = Tree::x86(4, "GenuineIntel", 32);
    t.online("0-3");
    for c in 0..4 {
        t.cpu(
            c,
            Some(i64::from(c / 2) * 512),
            Some(0),
            &c.to_string(),
            &c.to_string(),
        );
        t.file(
            &format!("sys/devices/system/cpu/cpu{c}/topology/book_id"),
            "0\n",
        );
    }
    t.node(0, "0-3", 1 << 20);
    let v = read(&t);
    assert_eq!((v.num_packages(), v.num_cores()), (4, 4));
}

#[test]
fn class6_caches_without_a_map_or_across_packages_are_left_out() {
    let t = Tree::x86(4, "GenuineIntel", 6);
    t.online("0-3");
    for c in 0..4 {
        let pkg = if c < 2 { "0-1" } else { "2-3" };
        t.cpu(
            c,
            Some(i64::from(c / 2)),
            Some(i64::from(c % 2)),
            &c.to_string(),
            pkg,
        );
        t.cache(c, 0, 1, "Data", 32, Some(&c.to_string()));
        // L2 of CPU 0 has no map; the others are private.
        t.cache(
            c,
            2,
            2,
            "Unified",
            512,
            (c != 0).then(|| c.to_string()).as_deref(),
        );
        t.cache(c, 3, 3, "Unified", 8192, Some(pkg));
    }
    // An L4 that crosses the packages without holding them whole.
    t.cache(1, 4, 4, "Unified", 65536, Some("1-2"));
    t.node(0, "0-3", 1 << 20);
    let v = read(&t);
    assert_eq!(v.cache_groups(2), vec![vec![1], vec![2], vec![3]]);
    assert_eq!(v.cache_groups(3), vec![vec![0, 1], vec![2, 3]]);
    assert!(v.cache_groups(4).is_empty());
    assert!(noted(&v, &["no shared_cpu_map"]), "{:?}", v.notes);
    assert!(noted(&v, &["crosses packages"]), "{:?}", v.notes);
}
