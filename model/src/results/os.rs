//! `topoprobe os`: what the operating system says about a machine (this one, a sysfs
//! root, or a `hwloc-gather-topology` capture) — packages, dies, clusters, cores, CPUs, CPU
//! kinds, caches and who shares them, NUMA nodes with memory, distances and memory-side
//! caches, offline and disallowed CPUs and the cgroup's cpuset — as [`OsReport`], made
//! from the [`OsView`] the reader returns. Its text is drawn by `topoprobe-view`.
//!
//! The JSON lists, per OS CPU, its package, die, cluster, core, NUMA node and every cache it
//! uses; per node its CPUs, memory and distances.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{CacheType, CpuKind, OsCache, OsHmatAccess, OsMemoryCache, OsView};

/// How many of each object the OS shows.
#[derive(Debug, Clone, Serialize)]
pub struct OsCounts {
    /// Packages with an online CPU.
    pub packages: usize,
    /// Dies (0 when the OS gives no die ids).
    pub dies: usize,
    /// Clusters (0 when the OS gives no cluster ids).
    pub clusters: usize,
    /// Cores with an online CPU.
    pub cores: usize,
    /// Online CPUs (processing units, hardware threads).
    pub pus: usize,
    /// NUMA nodes (`None`: the OS says nothing of NUMA).
    pub numa_nodes: Option<usize>,
    /// Cache instances with an online CPU.
    pub caches: usize,
}

/// One cache as a CPU sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CacheUse {
    /// Level (1 for L1).
    pub level: u8,
    /// What it holds.
    #[serde(rename = "type")]
    pub kind: CacheType,
    /// Size in bytes, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Line size in bytes, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_size: Option<u32>,
    /// Associativity, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ways: Option<u32>,
    /// The online CPUs sharing it, ascending.
    pub cpus: Vec<u32>,
}

/// One online CPU.
#[derive(Debug, Clone, Serialize)]
pub struct CpuEntry {
    /// OS CPU number.
    pub cpu: u32,
    /// Package id.
    pub package: i64,
    /// Die id, when the OS gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub die: Option<i64>,
    /// Cluster id, when the OS gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<i64>,
    /// Core id (unique within the package, die and cluster).
    pub core: i64,
    /// The online CPUs of its core, ascending.
    pub core_cpus: Vec<u32>,
    /// NUMA node, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// CPU kind on a hybrid machine (`core`, `atom`, `capacity 512`, `base 1400000 kHz`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Every cache it uses, ascending by level.
    pub caches: Vec<CacheUse>,
}

/// One NUMA node.
#[derive(Debug, Clone, Serialize)]
pub struct NodeEntry {
    /// OS node number.
    pub node: u32,
    /// Its online CPUs, ascending (empty for a memory-only node).
    pub cpus: Vec<u32>,
    /// Memory in bytes, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Its row of the OS distance table, by node number order; empty when not given.
    pub distances: Vec<u32>,
    /// Memory-side caches in front of its memory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_side_caches: Vec<OsMemoryCache>,
    /// For a node without CPUs, the CPUs it is near (HMAT initiators, else the nearest
    /// nodes by distance), as hwloc places it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub near_cpus: Option<Vec<u32>>,
    /// What ACPI HMAT says of its performance, per access class.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hmat: Vec<OsHmatAccess>,
}

/// The OS's view of a machine, ready to print.
#[derive(Debug, Clone, Serialize)]
pub struct OsReport {
    /// Where it was read (`/`, a directory, or an archive).
    pub source: String,
    /// CPU model, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Kernel release, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Host name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// How many of each object.
    pub counts: OsCounts,
    /// Whether some core has several online hardware threads.
    pub smt: bool,
    /// The online CPUs, ascending.
    pub cpus: Vec<CpuEntry>,
    /// The NUMA nodes, ascending (`None`: the OS says nothing of NUMA).
    pub nodes: Option<Vec<NodeEntry>>,
    /// Every cache instance with an online CPU, ascending by level, type and CPUs.
    pub caches: Vec<CacheUse>,
    /// The kinds of CPU of a hybrid machine; empty when all CPUs look alike.
    pub cpu_kinds: Vec<CpuKind>,
    /// CPUs present but offline, ascending.
    pub offline: Vec<u32>,
    /// The CPUs the cgroup's cpuset allows (`None`: no cpuset found).
    pub cpuset: Option<Vec<u32>>,
    /// Online CPUs outside the cpuset, ascending.
    pub disallowed: Vec<u32>,
    /// The NUMA nodes the cgroup cpuset allows; `None` without a cpuset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_nodes: Option<Vec<u32>>,
    /// The NUMA nodes it does not allow, ascending.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disallowed_nodes: Vec<u32>,
    /// What could not be read, and why.
    pub notes: Vec<String>,
}

/// `cache` seen from the online CPUs.
fn cache_use(c: &OsCache, online: &[u32]) -> CacheUse {
    CacheUse {
        level: c.level,
        kind: c.kind,
        size_bytes: c.size_bytes,
        line_size: c.line_size,
        ways: c.ways,
        cpus: c
            .cpus
            .iter()
            .copied()
            .filter(|x| online.binary_search(x).is_ok())
            .collect(),
    }
}

impl OsReport {
    /// The report of `view`, read from `source`.
    #[must_use]
    pub fn new(view: &OsView, source: &str) -> Self {
        let online = view.online();
        let cores = view.cores();
        let core_of: BTreeMap<u32, &Vec<u32>> = cores
            .iter()
            .flat_map(|core| core.iter().map(move |&c| (c, core)))
            .collect();
        let kinds = view.cpu_kinds();
        let kind_of: BTreeMap<u32, &str> = kinds
            .iter()
            .flat_map(|k| k.cpus.iter().map(move |&c| (c, k.label.as_str())))
            .collect();
        let caches: Vec<CacheUse> = view
            .caches
            .iter()
            .map(|c| cache_use(c, &online))
            .filter(|c| !c.cpus.is_empty())
            .collect();
        let cpus = view
            .cpus
            .iter()
            .map(|c| CpuEntry {
                cpu: c.id,
                package: c.package,
                die: c.die,
                cluster: c.cluster,
                core: c.core,
                core_cpus: core_of.get(&c.id).map_or_else(Vec::new, |v| (*v).clone()),
                node: c.node,
                kind: kind_of.get(&c.id).map(|s| (*s).to_string()),
                caches: caches
                    .iter()
                    .filter(|x| x.cpus.binary_search(&c.id).is_ok())
                    .cloned()
                    .collect(),
            })
            .collect();
        let node_cpus = view.node_cpus();
        let nodes = view.nodes.as_ref().map(|nodes| {
            nodes
                .iter()
                .map(|n| NodeEntry {
                    node: n.id,
                    cpus: node_cpus.get(&n.id).cloned().unwrap_or_default(),
                    memory_bytes: n.memory_bytes,
                    distances: n.distances.clone(),
                    memory_side_caches: view
                        .memory_side_caches
                        .iter()
                        .filter(|m| m.node == n.id)
                        .cloned()
                        .collect(),
                    near_cpus: n.cpus.is_empty().then(|| view.node_locality(n.id)),
                    hmat: view
                        .hmat
                        .iter()
                        .filter(|h| h.node == n.id)
                        .cloned()
                        .collect(),
                })
                .collect()
        });
        Self {
            source: source.to_string(),
            cpu_model: view.cpu_model.clone(),
            kernel: view.kernel.clone(),
            hostname: view.hostname.clone(),
            counts: OsCounts {
                packages: view.num_packages(),
                dies: view.dies().len(),
                clusters: view.clusters().len(),
                cores: cores.len(),
                pus: view.num_pus(),
                numa_nodes: view.num_numa_nodes(),
                caches: caches.len(),
            },
            smt: view.smt(),
            cpus,
            nodes,
            caches,
            cpu_kinds: kinds,
            offline: view.offline.clone(),
            cpuset: view.cpuset.clone(),
            disallowed: view.disallowed(),
            allowed_nodes: view.allowed_nodes.clone(),
            disallowed_nodes: view.disallowed_nodes(),
            notes: view.notes.clone(),
        }
    }
}
