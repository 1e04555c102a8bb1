//! Compares the OS view with what hwloc says of the same sysfs tree. Usable from any
//! crate's tests: `#[path = "../../../measure/tests/it/support/hwloc.rs"] mod hwloc;` (needs
//! `topoprobe_model` only).
//!
//! [`lstopo_xml`] runs `lstopo-no-graphics --of xml` on a directory holding `sys/` and
//! `proc/` (hwloc's Linux backend with `HWLOC_FSROOT`, as hwloc's own tests run it);
//! [`differences`] compares an [`OsView`] with that XML as hwloc shows it by default,
//! restricted to the allowed CPUs and nodes: packages, dies, cores and their PUs, PUs,
//! NUMA nodes and their PUs, the PU sets of the L2 and L3 caches, and the allowed CPUs.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use topoprobe_model::OsView;

/// The lstopo program this module runs.
pub const LSTOPO: &str = "lstopo-no-graphics";

/// The XML that `lstopo-no-graphics` writes for the sysfs tree under `dir` (a directory
/// holding `sys/` and `proc/`); `None`, saying `skipped: lstopo-no-graphics not found`
/// on stderr, when hwloc is not installed.
///
/// # Panics
///
/// When lstopo runs but fails: a tree hwloc cannot read is a broken test.
#[must_use]
pub fn lstopo_xml(dir: &Path) -> Option<String> {
    let out = Command::new(LSTOPO)
        .args(["--of", "xml", "-"])
        .env("HWLOC_COMPONENTS", "linux,stop")
        .env("HWLOC_FSROOT", dir)
        .env("HWLOC_DUMPED_HWDATA_DIR", "/nonexistent")
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => panic!(
            "{LSTOPO} failed on {}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => {
            eprintln!("skipped: {LSTOPO} not found");
            None
        }
    }
}

/// What both sides say, comparable.
#[derive(Debug, Default, PartialEq, Eq)]
struct Facts {
    packages: usize,
    dies: usize,
    cores: BTreeSet<Vec<u32>>,
    pus: Vec<u32>,
    nodes: BTreeMap<u32, Vec<u32>>,
    l2: BTreeSet<Vec<u32>>,
    l3: BTreeSet<Vec<u32>>,
    allowed: Vec<u32>,
}

/// The attributes of each `<object ...>` tag of hwloc's XML, in order.
fn objects(xml: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find("<object ") {
        rest = &rest[i + 8..];
        let end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..end];
        let mut attrs = BTreeMap::new();
        let mut t = tag;
        while let Some(eq) = t.find("=\"") {
            let name = t[..eq].trim().to_string();
            let after = &t[eq + 2..];
            let close = after.find('"').unwrap_or(after.len());
            attrs.insert(name, after[..close].to_string());
            t = after.get(close + 1..).unwrap_or("");
        }
        out.push(attrs);
        rest = &rest[end..];
    }
    out
}

/// hwloc's `0x000000ff,0xffffffff` as CPU numbers, ascending.
fn bits(mask: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let words: Vec<&str> = mask.split(',').collect();
    for (i, w) in words.iter().rev().enumerate() {
        let v = u32::from_str_radix(w.trim().trim_start_matches("0x"), 16).unwrap_or(0);
        for b in 0..32 {
            if v & (1 << b) != 0 {
                out.push(u32::try_from(i).unwrap_or(u32::MAX / 64) * 32 + b);
            }
        }
    }
    out.sort_unstable();
    out
}

/// The facts of hwloc's XML.
fn hwloc_facts(xml: &str) -> Facts {
    let objs = objects(xml);
    let mut f = Facts::default();
    let set = |o: &BTreeMap<String, String>| bits(o.get("cpuset").map_or("", String::as_str));
    for o in &objs {
        let index = || o.get("os_index").and_then(|v| v.parse::<u32>().ok());
        match o.get("type").map(String::as_str) {
            Some("Machine") => f.allowed = set(o),
            Some("Package") => f.packages += 1,
            Some("Die") => f.dies += 1,
            // Objects left with no allowed PU (a cache of disallowed CPUs) are not counted.
            Some("Core") if !set(o).is_empty() => {
                f.cores.insert(set(o));
            }
            Some("PU") => f.pus.extend(index()),
            Some("NUMANode") => {
                f.nodes.insert(index().unwrap_or(u32::MAX), set(o));
            }
            Some("L2Cache") if !set(o).is_empty() => {
                f.l2.insert(set(o));
            }
            Some("L3Cache") if !set(o).is_empty() => {
                f.l3.insert(set(o));
            }
            _ => {}
        }
    }
    f.pus.sort_unstable();
    f
}

/// The facts of `view`, restricted to the allowed CPUs and nodes as hwloc shows them.
fn view_facts(view: &OsView) -> Facts {
    let online: BTreeSet<u32> = view.online().into_iter().collect();
    let allowed: BTreeSet<u32> = match &view.cpuset {
        Some(c) => c.iter().copied().filter(|x| online.contains(x)).collect(),
        None => online,
    };
    let keep = |cpus: &[u32]| -> Vec<u32> {
        cpus.iter()
            .copied()
            .filter(|c| allowed.contains(c))
            .collect()
    };
    let node_allowed = |id: u32| view.allowed_nodes.as_ref().is_none_or(|a| a.contains(&id));
    let nodes: BTreeMap<u32, Vec<u32>> = view
        .nodes
        .iter()
        .flatten()
        .filter(|n| node_allowed(n.id))
        .map(|n| (n.id, keep(&view.node_locality(n.id))))
        .collect();
    // hwloc keeps a package that has an allowed CPU or holds an allowed node.
    let mut packages: BTreeSet<i64> = BTreeSet::new();
    for c in &view.cpus {
        let node_here = c.node.is_some_and(|n| nodes.contains_key(&n));
        if allowed.contains(&c.id) || node_here {
            packages.insert(c.package);
        }
    }
    let dies: BTreeSet<(i64, i64)> = view
        .dies()
        .into_iter()
        .filter(|(_, cpus)| cpus.len() > 1 && !keep(cpus).is_empty())
        .map(|(k, _)| k)
        .collect();
    let sets = |groups: Vec<Vec<u32>>| -> BTreeSet<Vec<u32>> {
        groups
            .iter()
            .map(|g| keep(g))
            .filter(|g| !g.is_empty())
            .collect()
    };
    Facts {
        packages: packages.len(),
        dies: dies.len(),
        cores: sets(view.cores()),
        pus: allowed.iter().copied().collect(),
        nodes,
        l2: sets(view.cache_groups(2)),
        l3: sets(view.cache_groups(3)),
        allowed: allowed.into_iter().collect(),
    }
}

/// The differences between `view` and what hwloc's `xml` (of `lstopo --of xml`) says of
/// the same machine, one sentence each; empty when they agree. Dies are compared only
/// when hwloc shows some (it hides dies of one PU).
#[must_use]
pub fn differences(view: &OsView, xml: &str) -> Vec<String> {
    let ours = view_facts(view);
    let theirs = hwloc_facts(xml);
    let mut out = Vec::new();
    let mut cmp = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: topoprobe {a}, hwloc {b}"));
        }
    };
    cmp(
        "packages",
        ours.packages.to_string(),
        theirs.packages.to_string(),
    );
    if theirs.dies > 0 {
        cmp("dies", ours.dies.to_string(), theirs.dies.to_string());
    }
    cmp(
        "cores",
        format!("{:?}", ours.cores),
        format!("{:?}", theirs.cores),
    );
    cmp(
        "PUs",
        format!("{:?}", ours.pus),
        format!("{:?}", theirs.pus),
    );
    cmp(
        "NUMA nodes",
        format!("{:?}", ours.nodes),
        format!("{:?}", theirs.nodes),
    );
    cmp(
        "L2 PU sets",
        format!("{:?}", ours.l2),
        format!("{:?}", theirs.l2),
    );
    cmp(
        "L3 PU sets",
        format!("{:?}", ours.l3),
        format!("{:?}", theirs.l3),
    );
    cmp(
        "allowed CPUs",
        format!("{:?}", ours.allowed),
        format!("{:?}", theirs.allowed),
    );
    out
}

/// Runs lstopo on `dir` and asserts that `view` (read from `dir`) agrees with it; when
/// hwloc is not installed, says so on stderr and checks nothing.
///
/// # Panics
///
/// When they differ, listing the differences.
pub fn assert_agrees(view: &OsView, dir: &Path) {
    if let Some(xml) = lstopo_xml(dir) {
        let d = differences(view, &xml);
        assert!(d.is_empty(), "differs from hwloc:\n  {}", d.join("\n  "));
    }
}
