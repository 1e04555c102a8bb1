//! Helpers shared by the integration tests: test data paths and partition comparison.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use topoprobe_model::{ContextId, LatencyMatrix, Topology};

/// The folder of this crate's test data.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Reads a matrix of the test data.
pub fn matrix(id: &str) -> LatencyMatrix {
    topoprobe_model::format::csv::read_matrix(&data(&format!("latency/matrices/{id}.csv")))
        .expect("test matrix")
}

/// One row of a truth file.
#[derive(Debug, Clone)]
pub struct TruthRow {
    pub core: String,
    pub cluster: String,
    pub socket: String,
}

/// Reads a truth file (`cpu label core cluster die socket`), in cpu order.
pub fn truth(id: &str) -> Vec<TruthRow> {
    let text = std::fs::read_to_string(data(&format!("latency/truth/{id}.tsv"))).expect("truth");
    let mut rows: Vec<(usize, TruthRow)> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().expect("cpu"),
                TruthRow {
                    core: f[2].to_string(),
                    cluster: f[3].to_string(),
                    socket: f[5].to_string(),
                },
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|r| r.1).collect()
}

/// A partition as a sorted list of sorted sets (label-free).
pub fn canon<T: Ord + Clone>(labels: &[T]) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<T, Vec<usize>> = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        by.entry(l.clone()).or_default().push(i);
    }
    let mut v: Vec<Vec<usize>> = by.into_values().collect();
    v.sort();
    v
}

/// The partitions of a topology as the scorer sees them: core, cluster (the innermost group
/// holding more than one core, else the socket) and socket.
pub fn predicted(topo: &Topology) -> [Vec<Vec<usize>>; 3] {
    let n = topo.num_contexts();
    let core: Vec<usize> = (0..n).map(|i| topo.contexts()[i].core.0).collect();
    let socket: Vec<usize> = (0..n).map(|i| topo.contexts()[i].socket.0).collect();
    let cluster: Vec<(usize, usize)> = (0..n)
        .map(|i| {
            topo.groups_of(ContextId(i))
                .into_iter()
                .find(|g| topo.groups()[g.0].cores.len() > 1)
                .map_or((0, topo.contexts()[i].socket.0), |g| (1, g.0))
        })
        .collect();
    [canon(&core), canon(&cluster), canon(&socket)]
}

/// The truth's partitions (core, cluster, socket), qualified by socket as the scorer does.
pub fn expected(rows: &[TruthRow]) -> [Vec<Vec<usize>>; 3] {
    let core: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.socket.clone(), r.core.clone()))
        .collect();
    let cluster: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.socket.clone(), r.cluster.clone()))
        .collect();
    let socket: Vec<String> = rows.iter().map(|r| r.socket.clone()).collect();
    [canon(&core), canon(&cluster), canon(&socket)]
}

/// Levels whose truth is not identifiable from the latencies (the scorer's rules).
pub fn excluded(id: &str) -> &'static [usize] {
    match id {
        // 4-core nodes visible only as identical latency profiles; latency additive.
        "kc-loongson-3c5000" => &[1],
        _ => &[],
    }
}

/// Ids of all test matrices that have a truth file.
pub fn corpus_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(data("latency/truth"))
        .expect("truth folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.path()
                .file_stem()
                .and_then(|s| s.to_str())
                .map(ToString::to_string)
        })
        .collect();
    ids.sort();
    ids
}

/// Compares a topology with a truth; returns the names of the wrong levels.
pub fn wrong_levels(topo: &Topology, rows: &[TruthRow], excluded: &[usize]) -> Vec<&'static str> {
    let p = predicted(topo);
    let e = expected(rows);
    ["core", "cluster", "socket"]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !excluded.contains(i) && p[*i] != e[*i])
        .map(|(_, name)| name)
        .collect()
}
