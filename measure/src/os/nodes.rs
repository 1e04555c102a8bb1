//! NUMA nodes (`/sys/devices/system/node/node*`).

use std::path::Path;

use topoprobe_model::{parse_cpu_list, parse_cpu_mask, OsMemoryCache, OsNode};

use super::files::{
    clean, excerpt, numbered_entries, optional_number, parse_error, read, read_optional, Notes,
};
use super::OsError;

/// The node's CPUs: `cpulist`, else `cpumap`, else its `cpuN` entries.
fn node_cpus(dir: &Path) -> Result<Vec<u32>, OsError> {
    let list = dir.join("cpulist");
    if let Some(s) = read(&list)? {
        return parse_cpu_list(&s).map_err(|e| parse_error(&list, &s, e.to_string()));
    }
    let map = dir.join("cpumap");
    if let Some(s) = read(&map)? {
        return parse_cpu_mask(&s).map_err(|e| parse_error(&map, &s, e.to_string()));
    }
    let mut cpus: Vec<u32> = std::fs::read_dir(dir)
        .map_err(|source| OsError::Read {
            path: dir.to_path_buf(),
            source,
        })?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let digits = name.to_str()?.strip_prefix("cpu")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        })
        .collect();
    cpus.sort_unstable();
    Ok(cpus)
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

/// The NUMA nodes under `<root>/sys/devices/system/node` and their memory-side caches;
/// no nodes (with a note) when the OS exposes none.
///
/// # Errors
///
/// [`OsError`] when a node's CPU list is malformed or a directory cannot be read.
pub(super) fn read_nodes(root: &Path, notes: &mut Notes) -> Result<Nodes, OsError> {
    let dir = root.join("sys/devices/system/node");
    let entries = numbered_entries(&dir, "node")?;
    if entries.is_empty() {
        notes.add(format!(
            "{}: no NUMA node found; NUMA layout unknown",
            dir.display()
        ));
        return Ok(Nodes::default());
    }
    let mut nodes = Vec::with_capacity(entries.len());
    let mut caches = Vec::new();
    for (id, path) in entries {
        nodes.push(OsNode {
            id,
            cpus: node_cpus(&path)?,
            distances: distances(&path, notes),
            memory_bytes: memory(&path, notes),
        });
        caches.extend(memory_side_caches(id, &path, notes));
    }
    Ok(Nodes {
        nodes: Some(nodes),
        memory_side_caches: caches,
    })
}

/// The NUMA nodes and their memory-side caches.
#[derive(Default)]
pub(super) struct Nodes {
    /// The nodes; `None` when the OS exposes none.
    pub(super) nodes: Option<Vec<OsNode>>,
    /// Their memory-side caches, ascending by node and level.
    pub(super) memory_side_caches: Vec<OsMemoryCache>,
}
