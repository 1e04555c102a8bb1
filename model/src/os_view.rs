//! What the operating system says about the machine (its "OS view"): packages, dies,
//! clusters, cores, hardware threads, caches and NUMA nodes of the online CPUs, as Linux
//! exposes them in sysfs, plus the machine identity found in `/proc`.
//!
//! This is pure data: the `measure` crate reads it from a (possibly captured) sysfs tree, and
//! inference compares it with what the latencies say.

mod cpu_list;
mod restrict;
mod structure;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::meta::Machine;

pub use cpu_list::{format_cpu_list, parse_cpu_list, parse_cpu_mask, CpuListError, MAX_CPU};

/// The operating system's view of a machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OsView {
    /// Online CPUs, in ascending order of OS id.
    pub cpus: Vec<OsCpu>,
    /// CPUs the OS knows but that are offline, ascending.
    #[serde(default)]
    pub offline: Vec<u32>,
    /// NUMA nodes, ascending by id; `None` when the OS exposes no NUMA information (unknown,
    /// which is not the same as "one node").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<OsNode>>,
    /// Caches, one entry per physical cache (the per-CPU entries of sysfs merged by level,
    /// type and sharing CPUs), ascending by level.
    #[serde(default)]
    pub caches: Vec<OsCache>,
    /// CPU model name (`model name` of `/proc/cpuinfo`, or implementer and part on aarch64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Memory-side caches in front of NUMA nodes' memory (`node*/memory_side_cache/index*`,
    /// from ACPI HMAT), ascending by node and level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_side_caches: Vec<OsMemoryCache>,
    /// The CPUs the reading process's cgroup cpuset allows (`cpuset.cpus.effective` of
    /// cgroup v2, `cpuset.effective_cpus` or `cpuset.cpus` of v1), ascending; `None` when
    /// no cpuset was found (every online CPU is allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<Vec<u32>>,
    /// The NUMA nodes the reading process's cgroup cpuset allows (`cpuset.mems.effective`
    /// of cgroup v2, `cpuset.mems` of v1, `mems` of the legacy cpuset filesystem),
    /// ascending; `None` when no cpuset was found (every node is allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_nodes: Option<Vec<u32>>,
    /// The CPUs near each CPU-less NUMA node, by node id: the CPUs of the nodes that ACPI
    /// HMAT names its initiators (`node*/access1/initiators`, else `access0`). Nodes
    /// without such information are not listed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub initiators: BTreeMap<u32, Vec<u32>>,
    /// What ACPI HMAT says of each memory node's performance from its best initiators
    /// (`node*/access0/initiators/`, `access1`), ascending by node and access class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hmat: Vec<OsHmatAccess>,
    /// Optional information that could not be read, and why (one sentence each).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The performance the firmware (ACPI HMAT) gives for a memory node (the target) seen
/// from its best initiators, in one access class: `access0` counts every initiator (CPUs
/// and devices), `access1` CPUs only. The kernel's figures, in its units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsHmatAccess {
    /// The memory node.
    pub node: u32,
    /// The access class (0 or 1).
    pub class: u8,
    /// The nodes of the initiators (`initiators/node*`), ascending.
    pub initiators: Vec<u32>,
    /// Read latency, ns (`read_latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_latency_ns: Option<u64>,
    /// Write latency, ns (`write_latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_latency_ns: Option<u64>,
    /// Read bandwidth, MB/s (`read_bandwidth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bandwidth_mbps: Option<u64>,
    /// Write bandwidth, MB/s (`write_bandwidth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bandwidth_mbps: Option<u64>,
}

/// The CPUs of the nodes nearest node `i` by the distance table (hwloc's rule for a
/// CPU-less node without initiators); empty when its row is missing, every other node is
/// at one distance, or the nearest are no farther than the node itself.
fn nearest_by_distance(nodes: &[OsNode], i: usize) -> Vec<u32> {
    let row = &nodes[i].distances;
    if row.len() != nodes.len() || nodes.len() < 3 {
        return Vec::new();
    }
    let Some(min) = (0..nodes.len()).filter(|&j| j != i).map(|j| row[j]).min() else {
        return Vec::new();
    };
    let nearest: Vec<usize> = (0..nodes.len())
        .filter(|&j| j != i && row[j] == min)
        .collect();
    if min <= row[i] || nearest.len() == nodes.len() - 1 {
        return Vec::new();
    }
    let mut cpus: Vec<u32> = nearest
        .iter()
        .flat_map(|&j| nodes[j].cpus.iter().copied())
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// A memory-side cache: a cache in front of a NUMA node's memory (for instance DRAM caching
/// persistent memory, or high-bandwidth memory caching DRAM), as ACPI HMAT describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsMemoryCache {
    /// The node whose memory it caches.
    pub node: u32,
    /// Its level (`indexN`: 1 is the one nearest the CPUs).
    pub level: u8,
    /// Size in bytes, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Line size in bytes, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_size: Option<u32>,
    /// Whether it is direct-mapped (`indexing` 0) rather than indexed (non-zero), when
    /// given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_mapped: Option<bool>,
    /// Write policy (`write_policy`: 0 `write-back`, 1 `write-through`, else `other`),
    /// when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_policy: Option<String>,
}

/// One online CPU (hardware thread) as the OS describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsCpu {
    /// The OS CPU number.
    pub id: u32,
    /// Physical package (socket) id; may be large or negative (`physical_package_id`).
    pub package: i64,
    /// Die id within the package, when the OS gives one (`die_id`; negative ids mean unknown
    /// and are `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub die: Option<i64>,
    /// Core id (`core_id`): unique only together with package, die and cluster.
    pub core: i64,
    /// Cluster id (`cluster_id`), when the OS gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<i64>,
    /// CPUs of the same core (`thread_siblings`), including this one, ascending.
    pub thread_siblings: Vec<u32>,
    /// CPUs of the same package (`core_siblings`), including this one, ascending.
    pub core_siblings: Vec<u32>,
    /// NUMA node, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// Relative capacity (`cpu_capacity`, 1024 for the biggest CPUs), when exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// Base (guaranteed) frequency in kHz (`cpufreq/base_frequency`), when exposed: on
    /// hybrid Intel CPUs it tells P-cores from E-cores where the highest frequency does not
    /// (favored P-cores turbo higher than the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_freq_khz: Option<u64>,
    /// Highest frequency in kHz (`cpufreq/cpuinfo_max_freq`), when exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_freq_khz: Option<u64>,
    /// CPU kind on hybrid machines: the PMU that owns the CPU (`core` or `atom` on Intel,
    /// from `/sys/devices/cpu_core/cpus` and `/sys/devices/cpu_atom/cpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// What identifies a core: (package, die, cluster, core id). Core ids repeat across
/// packages, and on some machines across dies or clusters, so the core id alone does not.
pub type CoreKey = (i64, Option<i64>, Option<i64>, i64);

impl OsCpu {
    /// The key of this CPU's core ([`CoreKey`]).
    #[must_use]
    pub const fn core_key(&self) -> CoreKey {
        (self.package, self.die, self.cluster, self.core)
    }
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    /// Data only.
    Data,
    /// Instructions only.
    Instruction,
    /// Data and instructions.
    Unified,
}

impl CacheType {
    /// Lower-case name (`data`, `instruction`, `unified`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::Instruction => "instruction",
            Self::Unified => "unified",
        }
    }

    /// Whether the cache holds data (data or unified).
    #[must_use]
    pub const fn holds_data(self) -> bool {
        matches!(self, Self::Data | Self::Unified)
    }
}

impl fmt::Display for CacheType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cache as the OS describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsCache {
    /// Level (1 for L1).
    pub level: u8,
    /// What it holds.
    #[serde(rename = "type")]
    pub kind: CacheType,
    /// Size in bytes, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Line size in bytes, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_size: Option<u32>,
    /// Associativity, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ways: Option<u32>,
    /// CPUs sharing it (`shared_cpu_map`), ascending; may include offline CPUs.
    pub cpus: Vec<u32>,
}

/// One NUMA node as the OS describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsNode {
    /// The OS node number.
    pub id: u32,
    /// Its CPUs as the OS lists them (offline ones included), ascending; empty for a node
    /// without CPUs (memory only).
    pub cpus: Vec<u32>,
    /// Its row of the OS distance table (`distance`), in the order of the OS node numbers;
    /// empty when not given.
    #[serde(default)]
    pub distances: Vec<u32>,
    /// Memory size in bytes (`MemTotal` of the node's `meminfo`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

/// A set of CPUs of one kind on a heterogeneous machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuKind {
    /// How the kind is told apart (`core`, `atom`, `capacity 512`, `max 3900000 kHz`).
    pub label: String,
    /// Its CPUs, ascending.
    pub cpus: Vec<u32>,
}

impl OsView {
    /// The online CPU with OS number `id`.
    #[must_use]
    pub fn cpu(&self, id: u32) -> Option<&OsCpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .and_then(|i| self.cpus.get(i))
    }

    /// OS numbers of the online CPUs, ascending.
    #[must_use]
    pub fn online(&self) -> Vec<u32> {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// Number of online CPUs (processing units, hardware threads).
    #[must_use]
    pub fn num_pus(&self) -> usize {
        self.cpus.len()
    }

    /// Number of packages with an online CPU.
    #[must_use]
    pub fn num_packages(&self) -> usize {
        self.packages().len()
    }

    /// Number of cores with an online CPU (see [`OsView::cores`]).
    #[must_use]
    pub fn num_cores(&self) -> usize {
        self.cores().len()
    }

    /// Number of NUMA nodes (CPU-less ones included), or `None` when unknown.
    #[must_use]
    pub fn num_numa_nodes(&self) -> Option<usize> {
        self.nodes.as_ref().map(Vec::len)
    }

    /// Whether some core has more than one online hardware thread.
    #[must_use]
    pub fn smt(&self) -> bool {
        self.cores().iter().any(|c| c.len() > 1)
    }

    /// Online CPUs of each package, by package id.
    #[must_use]
    pub fn packages(&self) -> BTreeMap<i64, Vec<u32>> {
        let mut out: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        for c in &self.cpus {
            out.entry(c.package).or_default().push(c.id);
        }
        out
    }

    /// Online CPUs of each die, by (package, die); empty when the OS gives no die ids.
    #[must_use]
    pub fn dies(&self) -> BTreeMap<(i64, i64), Vec<u32>> {
        let mut out: BTreeMap<(i64, i64), Vec<u32>> = BTreeMap::new();
        for c in &self.cpus {
            if let Some(d) = c.die {
                out.entry((c.package, d)).or_default().push(c.id);
            }
        }
        out
    }

    /// Online CPUs of each cluster, by (package, die, cluster); empty when the OS gives no
    /// cluster ids.
    #[must_use]
    pub fn clusters(&self) -> BTreeMap<(i64, Option<i64>, i64), Vec<u32>> {
        let mut out: BTreeMap<(i64, Option<i64>, i64), Vec<u32>> = BTreeMap::new();
        for c in &self.cpus {
            if let Some(cl) = c.cluster {
                out.entry((c.package, c.die, cl)).or_default().push(c.id);
            }
        }
        out
    }

    /// The online CPUs of each core, ascending by first CPU.
    ///
    /// Core ids repeat across packages (and on some machines across dies or clusters), so a
    /// core is identified by its [`CoreKey`] (package, die, cluster, core id).
    #[must_use]
    pub fn cores(&self) -> Vec<Vec<u32>> {
        let mut by_key: BTreeMap<CoreKey, Vec<u32>> = BTreeMap::new();
        for c in &self.cpus {
            by_key.entry(c.core_key()).or_default().push(c.id);
        }
        let mut out: Vec<Vec<u32>> = by_key.into_values().collect();
        out.sort();
        out
    }

    /// Online CPUs of each NUMA node, by node id (nodes without online CPUs included, with
    /// an empty list); empty when NUMA information is unknown.
    #[must_use]
    pub fn node_cpus(&self) -> BTreeMap<u32, Vec<u32>> {
        let online: BTreeSet<u32> = self.cpus.iter().map(|c| c.id).collect();
        self.nodes
            .iter()
            .flatten()
            .map(|n| {
                let cpus = n
                    .cpus
                    .iter()
                    .copied()
                    .filter(|c| online.contains(c))
                    .collect();
                (n.id, cpus)
            })
            .collect()
    }

    /// The caches that `cpu` uses, ascending by level.
    #[must_use]
    pub fn caches_of(&self, cpu: u32) -> Vec<&OsCache> {
        self.caches
            .iter()
            .filter(|c| c.cpus.binary_search(&cpu).is_ok())
            .collect()
    }

    /// The sets of online CPUs sharing a data (or unified) cache of `level`, one per cache,
    /// ascending; caches with no online CPU are left out.
    #[must_use]
    pub fn cache_groups(&self, level: u8) -> Vec<Vec<u32>> {
        let online: BTreeSet<u32> = self.cpus.iter().map(|c| c.id).collect();
        let mut out: Vec<Vec<u32>> = self
            .caches
            .iter()
            .filter(|c| c.level == level && c.kind.holds_data())
            .map(|c| {
                c.cpus
                    .iter()
                    .copied()
                    .filter(|x| online.contains(x))
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The kinds of CPU on a heterogeneous machine: by the OS's CPU kind when given, else by
    /// capacity, else by base frequency, else by highest frequency; empty when all online
    /// CPUs look alike.
    #[must_use]
    pub fn cpu_kinds(&self) -> Vec<CpuKind> {
        let by = |f: &dyn Fn(&OsCpu) -> Option<String>| -> Vec<CpuKind> {
            let mut m: BTreeMap<String, Vec<u32>> = BTreeMap::new();
            for c in &self.cpus {
                if let Some(label) = f(c) {
                    m.entry(label).or_default().push(c.id);
                }
            }
            if m.len() < 2 {
                return Vec::new();
            }
            m.into_iter()
                .map(|(label, cpus)| CpuKind { label, cpus })
                .collect()
        };
        let kinds = by(&|c| c.kind.clone());
        if !kinds.is_empty() {
            return kinds;
        }
        let kinds = by(&|c| c.capacity.map(|v| format!("capacity {v}")));
        if !kinds.is_empty() {
            return kinds;
        }
        let kinds = by(&|c| c.base_freq_khz.map(|v| format!("base {v} kHz")));
        if !kinds.is_empty() {
            return kinds;
        }
        by(&|c| c.max_freq_khz.map(|v| format!("max {v} kHz")))
    }

    /// The online CPUs that the cgroup cpuset ([`OsView::cpuset`]) does not allow,
    /// ascending; empty when there is no cpuset.
    #[must_use]
    pub fn disallowed(&self) -> Vec<u32> {
        let Some(allowed) = &self.cpuset else {
            return Vec::new();
        };
        self.cpus
            .iter()
            .map(|c| c.id)
            .filter(|c| allowed.binary_search(c).is_err())
            .collect()
    }

    /// The NUMA nodes that the cgroup cpuset ([`OsView::allowed_nodes`]) does not allow,
    /// ascending; empty when there is no cpuset or the NUMA layout is unknown.
    #[must_use]
    pub fn disallowed_nodes(&self) -> Vec<u32> {
        let Some(allowed) = &self.allowed_nodes else {
            return Vec::new();
        };
        self.nodes
            .iter()
            .flatten()
            .map(|n| n.id)
            .filter(|n| allowed.binary_search(n).is_err())
            .collect()
    }

    /// The CPUs a NUMA node is near, as hwloc places it: its own CPUs; for a CPU-less node
    /// those of its HMAT initiators ([`OsView::initiators`]), else those of the nodes
    /// nearest it in the distance table when they are nearer than the rest (not every
    /// other node at one distance) and farther than the node itself; empty when the OS
    /// says none of these (hwloc then puts the node at the machine).
    #[must_use]
    pub fn node_locality(&self, id: u32) -> Vec<u32> {
        let nodes = self.nodes.as_deref().unwrap_or_default();
        let Some(i) = nodes.iter().position(|n| n.id == id) else {
            return Vec::new();
        };
        if !nodes[i].cpus.is_empty() {
            return nodes[i].cpus.clone();
        }
        if let Some(near) = self.initiators.get(&id).filter(|v| !v.is_empty()) {
            return near.clone();
        }
        nearest_by_distance(nodes, i)
    }

    /// The machine identity this view gives: CPU model, online CPU list, kernel, host name.
    #[must_use]
    pub fn machine(&self) -> Machine {
        Machine {
            hostname: self.hostname.clone(),
            cpu_model: self.cpu_model.clone(),
            online_cpus: Some(format_cpu_list(&self.online())),
            kernel: self.kernel.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An online CPU of `package` and `core` with these SMT siblings (no node).
    pub(super) fn cpu(id: u32, package: i64, core: i64, siblings: Vec<u32>) -> OsCpu {
        OsCpu {
            id,
            package,
            die: None,
            core,
            cluster: None,
            thread_siblings: siblings,
            core_siblings: Vec::new(),
            node: None,
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        }
    }

    /// Two packages with two cores each, core ids repeating across packages; SMT siblings
    /// are `i` and `i + 4`.
    fn two_packages() -> OsView {
        let mut cpus = Vec::new();
        for id in 0..8u32 {
            let c = id % 4;
            cpus.push(cpu(
                id,
                i64::from(c / 2) * 8442,
                i64::from(c % 2),
                vec![c, c + 4],
            ));
        }
        OsView {
            cpus,
            nodes: Some(vec![
                OsNode {
                    id: 0,
                    cpus: vec![0, 1, 4, 5],
                    distances: vec![10, 20, 20],
                    memory_bytes: Some(1 << 30),
                },
                OsNode {
                    id: 1,
                    cpus: vec![2, 3, 6, 7, 9],
                    distances: vec![20, 10, 20],
                    memory_bytes: None,
                },
                OsNode {
                    id: 2,
                    cpus: vec![],
                    distances: vec![20, 20, 10],
                    memory_bytes: Some(1 << 32),
                },
            ]),
            caches: vec![OsCache {
                level: 3,
                kind: CacheType::Unified,
                size_bytes: Some(1 << 20),
                line_size: Some(64),
                ways: None,
                cpus: vec![0, 1, 4, 5],
            }],
            ..OsView::default()
        }
    }

    #[test]
    fn counts() {
        let v = two_packages();
        assert_eq!(v.num_pus(), 8);
        assert_eq!(v.num_packages(), 2);
        assert_eq!(v.num_cores(), 4);
        assert_eq!(v.num_numa_nodes(), Some(3));
        assert!(v.smt());
        assert_eq!(v.cores()[0], vec![0, 4]);
        assert_eq!(v.packages()[&8442], vec![2, 3, 6, 7]);
        assert_eq!(v.node_cpus()[&1], vec![2, 3, 6, 7]);
        assert!(v.node_cpus()[&2].is_empty());
        assert_eq!(v.cache_groups(3), vec![vec![0, 1, 4, 5]]);
        assert_eq!(v.caches_of(4).len(), 1);
        assert!(v.caches_of(2).is_empty());
        assert_eq!(v.cpu(6).map(|c| c.package), Some(8442));
        assert!(v.cpu(9).is_none());
        assert_eq!(v.machine().online_cpus.as_deref(), Some("0-7"));
        assert!(v.cpu_kinds().is_empty());
        assert_eq!(OsView::default().num_numa_nodes(), None);
    }

    #[test]
    fn kinds() {
        let mut v = two_packages();
        for c in &mut v.cpus {
            c.capacity = Some(if c.id < 4 { 1024 } else { 512 });
        }
        let k = v.cpu_kinds();
        assert_eq!(k.len(), 2);
        assert_eq!(k[1].label, "capacity 512");
        assert_eq!(k[1].cpus, vec![4, 5, 6, 7]);
        v.cpus[0].kind = Some("core".into());
        v.cpus[1].kind = Some("atom".into());
        assert_eq!(v.cpu_kinds()[0].cpus, vec![1]);
    }

    #[test]
    fn disallowed_cpus_are_the_online_ones_outside_the_cpuset() {
        let mut v = two_packages();
        assert!(v.disallowed().is_empty(), "no cpuset: every CPU allowed");
        v.cpuset = Some(vec![0, 1, 2, 3, 9]);
        assert_eq!(v.disallowed(), vec![4, 5, 6, 7]);
        assert!(v.disallowed_nodes().is_empty());
        v.allowed_nodes = Some(vec![1]);
        assert_eq!(v.disallowed_nodes(), vec![0, 2]);
        assert!(v.node_locality(2).is_empty());
        v.initiators.insert(2, vec![0, 1]);
        assert_eq!(v.node_locality(2), vec![0, 1]);
        assert_eq!(v.node_locality(1), vec![2, 3, 6, 7, 9]);
    }

    #[test]
    fn serde_round_trip() {
        let mut v = two_packages();
        v.cpuset = Some(vec![0, 1]);
        v.allowed_nodes = Some(vec![0]);
        v.initiators.insert(2, vec![0, 1]);
        v.memory_side_caches.push(OsMemoryCache {
            node: 2,
            level: 1,
            size_bytes: Some(96 << 30),
            line_size: Some(64),
            direct_mapped: Some(true),
            write_policy: Some("write-back".into()),
        });
        let s = serde_json::to_string(&v).unwrap();
        let back: OsView = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }
}
