//! NUMA nodes (`/sys/devices/system/node/node*`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use topoprobe_model::format::plural;
use topoprobe_model::{format_cpu_list, parse_cpu_mask, OsHmatAccess, OsMemoryCache, OsNode};

use super::files::{
    clean, excerpt, numbered_entries, numbered_names, optional_number, read_optional, Notes,
    MAX_ENTRIES,
};
use super::{OsError, ReadOptions};

/// The node's CPUs: `cpulist`, else `cpumap`, else its `cpuN` entries; `None` (with a
/// note) when a list is malformed or the folder cannot be listed.
fn node_cpus(dir: &Path, notes: &mut Notes) -> Option<Vec<u32>> {
    for (name, list) in [("cpulist", true), ("cpumap", false)] {
        let path = dir.join(name);
        if let Some(s) = read_optional(&path, notes) {
            let parsed = super::files::parse_cpus(&s, list);
            return match parsed {
                Ok(v) => Some(v),
                Err(e) => {
                    notes.add(format!(
                        "{}: cannot parse {:?}: {e}; node left out",
                        path.display(),
                        excerpt(&s)
                    ));
                    None
                }
            };
        }
    }
    match numbered_names(dir, "cpu") {
        Ok(v) => Some(v),
        Err(e) => {
            notes.add(format!("{}: {e}; node left out", dir.display()));
            None
        }
    }
}

/// The `distance` row; empty (with a note) when absent or malformed.
fn distances(dir: &Path, notes: &mut Notes) -> Vec<u32> {
    let path = dir.join("distance");
    let Some(s) = read_optional(&path, notes) else {
        return Vec::new();
    };
    match clean(&s)
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()
    {
        Ok(v) => v,
        Err(_) => {
            notes.add(format!(
                "{}: cannot parse {:?}; distances unknown",
                path.display(),
                excerpt(&s)
            ));
            Vec::new()
        }
    }
}

/// `MemTotal` of the node's `meminfo` (`Node 0 MemTotal:  16772456 kB`), in bytes.
fn memory(dir: &Path, notes: &mut Notes) -> Option<u64> {
    meminfo_field(dir, "MemTotal:", notes)
}

/// A field of the node's `meminfo` (`Node 0 MemFree:  5916068 kB`), in bytes.
pub(super) fn meminfo_field(dir: &Path, field: &str, notes: &mut Notes) -> Option<u64> {
    let path = dir.join("meminfo");
    let s = read_optional(&path, notes)?;
    let line = s.lines().find(|l| l.contains(field))?;
    let value = line.split(field).nth(1)?;
    let mut parts = value.split_whitespace();
    let n: Option<u64> = parts.next().and_then(|v| v.parse().ok());
    let bytes = match (n, parts.next()) {
        (Some(n), Some("kB" | "KB")) => n.checked_mul(1024),
        (Some(n), None) => Some(n),
        _ => None,
    };
    if bytes.is_none() {
        notes.add(format!(
            "{}: cannot parse {:?}; {} unknown",
            path.display(),
            excerpt(line),
            field.trim_end_matches(':')
        ));
    }
    bytes
}

/// Free memory of node `id` now (`MemFree` of its `meminfo` under `root`), in bytes;
/// `None` when the file or the field is missing or malformed.
#[must_use]
pub fn free_bytes(root: &Path, id: u32) -> Option<u64> {
    let dir = root.join(format!("sys/devices/system/node/node{id}"));
    meminfo_field(&dir, "MemFree:", &mut Notes::default())
}

/// The memory-side caches of node `id` (`memory_side_cache/index<level>`: `size` in bytes,
/// `line_size`, `indexing` 0 for direct-mapped, `write_policy` 0 write-back, 1
/// write-through), ascending by level; unreadable entries are left out with a note.
fn memory_side_caches(id: u32, dir: &Path, notes: &mut Notes) -> Vec<OsMemoryCache> {
    let entries = match numbered_entries(&dir.join("memory_side_cache"), "index") {
        Ok(v) => v,
        Err(e) => {
            notes.add(e.to_string());
            return Vec::new();
        }
    };
    entries
        .into_iter()
        .filter_map(|(level, path)| {
            let Ok(level) = u8::try_from(level) else {
                notes.add(format!("{}: level too high; left out", path.display()));
                return None;
            };
            Some(OsMemoryCache {
                node: id,
                level,
                size_bytes: optional_number(&path.join("size"), notes),
                line_size: optional_number(&path.join("line_size"), notes),
                direct_mapped: optional_number::<u32>(&path.join("indexing"), notes)
                    .map(|v| v == 0),
                write_policy: optional_number::<u32>(&path.join("write_policy"), notes).map(|v| {
                    match v {
                        0 => "write-back",
                        1 => "write-through",
                        _ => "other",
                    }
                    .to_string()
                }),
            })
        })
        .collect()
}

/// The NUMA nodes under `<root>/sys/devices/system/node`, their memory-side caches and
/// the CPUs near the CPU-less ones, read as hwloc reads them:
///
/// - no node directory (small ARM, s390, kernels without NUMA): one node 0 holding every
///   online CPU (`online`) and all memory (`/proc/meminfo`), with a note;
/// - a node whose CPUs were listed by an earlier node (firmware that lists every CPU in
///   every node) is left out, with a note;
/// - a node holding an NVIDIA GPU's memory (`/proc/driver/nvidia/gpus/*/numa_status`) is
///   left out unless [`ReadOptions::keep_gpu_nodes`]; kept, its CPUs are those of the
///   GPU's `local_cpus`;
/// - a CPU-less node is near the CPUs of its HMAT initiators (`access1/initiators`, else
///   `access0`).
///
/// # Errors
///
/// [`OsError`] when the node directory exists but cannot be listed.
pub(super) fn read_nodes(
    root: &Path,
    online: &[u32],
    options: &ReadOptions,
    notes: &mut Notes,
) -> Result<Nodes, OsError> {
    let dir = root.join("sys/devices/system/node");
    let entries = numbered_entries(&dir, "node")?;
    if entries.is_empty() {
        notes.add(format!(
            "{}: no NUMA node directory; one node holding every CPU and all memory",
            dir.display()
        ));
        let memory = meminfo_field(&root.join("proc"), "MemTotal:", notes);
        return Ok(Nodes {
            nodes: Some(vec![OsNode {
                id: 0,
                cpus: online.to_vec(),
                distances: Vec::new(),
                memory_bytes: memory,
            }]),
            ..Nodes::default()
        });
    }
    let all: Vec<u32> = entries.iter().map(|(id, _)| *id).collect();
    let gpu = gpu_nodes(root, notes);
    let mut nodes = Vec::with_capacity(entries.len());
    let mut caches = Vec::new();
    let mut initiators = BTreeMap::new();
    let mut hmat = Vec::new();
    let mut seen: BTreeSet<u32> = BTreeSet::new();
    let mut dropped: Vec<u32> = Vec::new();
    for (id, path) in &entries {
        let id = *id;
        let Some(mut cpus) = node_cpus(path, notes) else {
            dropped.push(id);
            continue;
        };
        if let Some(pci) = gpu.get(&id) {
            if !options.keep_gpu_nodes {
                notes.add(format!(
                    "node {id} is the memory of NVIDIA GPU {pci}; left out (kept on request)"
                ));
                dropped.push(id);
                continue;
            }
            let local = root.join(format!("sys/bus/pci/devices/{pci}/local_cpus"));
            if let Some(near) = read_optional(&local, notes).and_then(|s| parse_cpu_mask(&s).ok()) {
                initiators.insert(id, near);
            }
            cpus.clear();
        }
        let overlap: Vec<u32> = cpus.iter().copied().filter(|c| seen.contains(c)).collect();
        if !overlap.is_empty() {
            notes.add(format!(
                "node {id} lists CPUs {} that an earlier node lists; node {id} left out",
                format_cpu_list(&overlap)
            ));
            dropped.push(id);
            continue;
        }
        seen.extend(cpus.iter().copied());
        nodes.push(OsNode {
            id,
            cpus,
            distances: distances(path, notes),
            memory_bytes: memory(path, notes),
        });
        caches.extend(memory_side_caches(id, path, notes));
        hmat.extend(super::hmat::read(id, path, notes));
    }
    // A row with more entries than there are nodes cannot say which entry is which node.
    for n in &mut nodes {
        if n.distances.len() > all.len() {
            notes.add(format!(
                "{}: {} distances for {}; this node's distances are not used",
                dir.join(format!("node{}/distance", n.id)).display(),
                n.distances.len(),
                plural(all.len(), "node")
            ));
            n.distances.clear();
        }
    }
    // Rows of the distance table keep the columns of the nodes kept.
    if !dropped.is_empty() {
        for n in &mut nodes {
            if n.distances.len() == all.len() {
                n.distances = n
                    .distances
                    .iter()
                    .zip(&all)
                    .filter(|(_, id)| !dropped.contains(id))
                    .map(|(d, _)| *d)
                    .collect();
            }
        }
    }
    for n in nodes.iter().filter(|n| n.cpus.is_empty()) {
        if initiators.contains_key(&n.id) {
            continue;
        }
        let near = initiator_cpus(&dir.join(format!("node{}", n.id)), &nodes);
        if !near.is_empty() {
            initiators.insert(n.id, near);
        }
    }
    Ok(Nodes {
        nodes: Some(nodes),
        memory_side_caches: caches,
        initiators,
        hmat,
    })
}

/// The CPUs of the nodes that HMAT names initiators of the node in `dir`
/// (`access1/initiators/node*`, else `access0`), ascending; empty when none.
fn initiator_cpus(dir: &Path, nodes: &[OsNode]) -> Vec<u32> {
    for access in ["access1", "access0"] {
        let Ok(names) = numbered_names(&dir.join(access).join("initiators"), "node") else {
            continue;
        };
        let mut out: BTreeSet<u32> = BTreeSet::new();
        for id in names {
            if let Some(n) = nodes.iter().find(|n| n.id == id) {
                out.extend(n.cpus.iter().copied());
            }
        }
        return out.into_iter().collect();
    }
    Vec::new()
}

/// The nodes that hold an NVIDIA GPU's memory, by node id, with the GPU's PCI address:
/// `Node: N` of `/proc/driver/nvidia/gpus/<pci>/numa_status`.
fn gpu_nodes(root: &Path, notes: &mut Notes) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(root.join("proc/driver/nvidia/gpus")) else {
        return out;
    };
    for e in rd.flatten().take(MAX_ENTRIES) {
        let Some(pci) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let Some(text) = read_optional(&e.path().join("numa_status"), notes) else {
            continue;
        };
        let node = text.lines().find_map(|l| {
            let v = l.strip_prefix("Node:")?.trim();
            v.parse::<u32>().ok()
        });
        if let Some(n) = node {
            out.insert(n, pci);
        }
    }
    out
}

/// The NUMA nodes, their memory-side caches and the CPUs near the CPU-less ones.
#[derive(Default)]
pub(super) struct Nodes {
    /// The nodes; `None` when the OS exposes none.
    pub(super) nodes: Option<Vec<OsNode>>,
    /// Their memory-side caches, ascending by node and level.
    pub(super) memory_side_caches: Vec<OsMemoryCache>,
    /// The CPUs near each CPU-less node, from HMAT initiators (or a GPU's `local_cpus`).
    pub(super) initiators: BTreeMap<u32, Vec<u32>>,
    /// What HMAT says of each node's performance, ascending by node and access class.
    pub(super) hmat: Vec<OsHmatAccess>,
}
