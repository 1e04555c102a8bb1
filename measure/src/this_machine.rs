//! The shape of this machine: a plan's [`Shape`] read from the OS's view or from a
//! measured topology, with the facts of this machine that neither holds (free memory,
//! whether lines can be flushed, huge pages asked for and power measured).
//!
//! The facts are read from the probes that know them ([`crate::memory::thp_available`],
//! [`crate::power::check_available`]), which plan their own work from a [`Shape`]: reading
//! them here, above both, keeps [`crate::plan`] below the probes.

use topoprobe_model::{OsView, SocketId, Topology};

use std::sync::OnceLock;

use crate::plan::{cache_sizes, last_level_bytes, NodeShape, Shape, SocketShape, Speed};

/// This machine's speed, measured once in a process by the first plan that needs it.
static SPEED: OnceLock<Speed> = OnceLock::new();

/// Contexts the calibration's parallelism test uses at most.
const CALIBRATION_CPUS: usize = 64;

/// This machine's speed ([`crate::memory::pace::calibrate`] on `cpus`, or on the CPUs this
/// process may use when `cpus` is empty; about 0.1 s), measured once in a process: every
/// plan of a run is made at the same speed.
#[must_use]
pub fn this_machine_speed(cpus: &[u32]) -> Speed {
    *SPEED.get_or_init(|| {
        let allowed: Vec<u32>;
        let cpus = if cpus.is_empty() {
            allowed = topoprobe_sys::affinity::allowed_cpus()
                .map(|s| s.iter().take(CALIBRATION_CPUS).collect())
                .unwrap_or_default();
            &allowed
        } else {
            cpus
        };
        crate::memory::pace::calibrate(cpus)
    })
}

/// The OS's nodes as a plan sees them.
fn nodes_of(os: &OsView) -> Vec<NodeShape> {
    os.nodes
        .iter()
        .flatten()
        .map(|n| NodeShape {
            id: n.id,
            distances: n.distances.clone(),
            memory_bytes: n.memory_bytes,
            cpus: n.cpus.clone(),
        })
        .collect()
}

/// The node holding most of `cpus` (the lowest number on a tie).
fn local_node(os: &OsView, cpus: &[u32]) -> Option<u32> {
    let mut best: Option<(usize, u32)> = None;
    for n in os.nodes.iter().flatten() {
        let k = n.cpus.iter().filter(|c| cpus.contains(c)).count();
        if k > 0 && best.is_none_or(|(b, _)| k > b) {
            best = Some((k, n.id));
        }
    }
    best.map(|(_, id)| id)
}

/// `cores` (each a list of contexts) flattened with one context of every core first.
fn spread(cores: &[Vec<u32>]) -> Vec<u32> {
    let deepest = cores.iter().map(Vec::len).max().unwrap_or(0);
    (0..deepest)
        .flat_map(|k| cores.iter().filter_map(move |c| c.get(k).copied()))
        .collect()
}

impl Shape {
    /// The shape of the machine the OS describes, restricted to `cpus` (every online CPU
    /// when empty) and to the CPUs and memory nodes the cgroup cpuset allows: sockets are
    /// its packages. The machine facts that are not in the OS view
    /// (free memory, flushing, huge pages) are those of this machine; set them for another.
    #[must_use]
    pub fn from_os(os: &OsView, cpus: &[u32]) -> Self {
        // A measurement runs and binds memory only where the cgroup cpuset lets it.
        let os = &os.allowed_only();
        let keep = |c: u32| (cpus.is_empty() || cpus.contains(&c)) && os.cpu(c).is_some();
        let sockets = os
            .packages()
            .values()
            .filter_map(|members| {
                let mine: Vec<u32> = members.iter().copied().filter(|&c| keep(c)).collect();
                if mine.is_empty() {
                    return None;
                }
                let cores: Vec<Vec<u32>> = os
                    .cores()
                    .into_iter()
                    .map(|core| core.into_iter().filter(|c| mine.contains(c)).collect())
                    .filter(|core: &Vec<u32>| !core.is_empty())
                    .collect();
                Some(SocketShape {
                    cpus: spread(&cores),
                    cores: cores.len(),
                    llc_bytes: last_level_bytes(os, &mine),
                    local_node: local_node(os, &mine),
                })
            })
            .collect::<Vec<_>>();
        let first = sockets.first().and_then(|s| s.cpus.first().copied());
        Self {
            cache_levels: first.map_or_else(Vec::new, |c| cache_sizes(os, c)),
            nodes: nodes_of(os),
            sockets,
            ..Self::this_machine_facts()
        }
    }

    /// The shape of a measured topology: its sockets, cores and contexts, with the caches
    /// and nodes the OS lists (`os`; none when `None`), restricted to the CPUs and nodes
    /// the OS's cgroup cpuset allows (sockets left without a CPU are left out).
    #[must_use]
    pub fn from_topology(topo: &Topology, os: Option<&OsView>) -> Self {
        let allowed = os.map(OsView::allowed_only);
        let os = allowed.as_ref();
        let sockets: Vec<SocketShape> = (0..topo.num_sockets())
            .map(|s| {
                let cores: Vec<Vec<u32>> = topo
                    .socket_cores(SocketId(s))
                    .iter()
                    .map(|&core| {
                        topo.core_contexts(core)
                            .iter()
                            .map(|c| topo.contexts()[c.0].os_id)
                            .filter(|&c| os.is_none_or(|os| os.cpu(c).is_some()))
                            .collect::<Vec<u32>>()
                    })
                    .filter(|core| !core.is_empty())
                    .collect();
                let cpus = spread(&cores);
                SocketShape {
                    llc_bytes: os.and_then(|os| last_level_bytes(os, &cpus)),
                    local_node: os.and_then(|os| local_node(os, &cpus)),
                    cores: cores.len(),
                    cpus,
                }
            })
            .filter(|s: &SocketShape| !s.cpus.is_empty())
            .collect();
        let first = sockets.first().and_then(|s| s.cpus.first().copied());
        Self {
            cache_levels: match (os, first) {
                (Some(os), Some(c)) => cache_sizes(os, c),
                _ => Vec::new(),
            },
            nodes: os.map_or_else(Vec::new, nodes_of),
            sockets,
            ..Self::this_machine_facts()
        }
    }

    /// This shape at this machine's speed ([`this_machine_speed`] on its first socket's
    /// contexts): the shape of the machine that runs the plan.
    #[must_use]
    pub fn at_this_machines_speed(mut self) -> Self {
        let cpus: Vec<u32> = self
            .sockets
            .first()
            .map(|s| s.cpus.iter().copied().take(CALIBRATION_CPUS).collect())
            .unwrap_or_default();
        self.speed = this_machine_speed(&cpus);
        self
    }

    /// A shape with no socket and this machine's facts: its free memory now, whether lines
    /// can be flushed, huge pages asked for and power measured.
    #[must_use]
    pub fn this_machine_facts() -> Self {
        Self {
            sockets: Vec::new(),
            nodes: Vec::new(),
            cache_levels: Vec::new(),
            free_bytes: crate::os::least_free_bytes(),
            can_flush: topoprobe_sys::counter::can_flush(),
            huge_pages: crate::memory::thp_available(),
            power_unavailable:
                crate::power::check_available(&crate::power::PowerOptions::default())
                    .err()
                    .map(|e| e.to_string()),
            speed: Speed::assumed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{GIB, MIB};
    use topoprobe_model::{CacheType, OsCache, OsCpu, OsNode};

    /// A cache of `size` bytes shared by `cpus`.
    fn cache(level: u8, kind: CacheType, size: u64, cpus: &[u32]) -> OsCache {
        OsCache {
            level,
            kind,
            size_bytes: Some(size),
            line_size: Some(64),
            ways: None,
            cpus: cpus.to_vec(),
        }
    }

    /// Two packages of two cores with two contexts each (context i's sibling is i + 4),
    /// one node each, an L3 per package.
    fn two_sockets() -> OsView {
        let cpu = |id: u32| OsCpu {
            id,
            package: i64::from(id % 4 / 2),
            die: None,
            core: i64::from(id % 2),
            cluster: None,
            thread_siblings: vec![id % 4, id % 4 + 4],
            core_siblings: vec![],
            node: Some(id % 4 / 2),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        };
        OsView {
            cpus: (0..8).map(cpu).collect(),
            nodes: Some(vec![
                OsNode {
                    id: 0,
                    cpus: vec![0, 1, 4, 5],
                    distances: vec![10, 21],
                    memory_bytes: Some(GIB),
                },
                OsNode {
                    id: 1,
                    cpus: vec![2, 3, 6, 7],
                    distances: vec![21, 10],
                    memory_bytes: Some(GIB),
                },
            ]),
            caches: vec![
                cache(1, CacheType::Data, 32 << 10, &[0, 4]),
                cache(3, CacheType::Unified, 32 * MIB, &[0, 1, 4, 5]),
                cache(3, CacheType::Unified, 32 * MIB, &[2, 3, 6, 7]),
            ],
            ..OsView::default()
        }
    }

    #[test]
    fn an_os_view_gives_sockets_with_one_context_per_core_first() {
        let s = Shape::from_os(&two_sockets(), &[]);
        assert_eq!(s.sockets.len(), 2);
        assert_eq!(s.sockets[0].cpus, [0, 1, 4, 5]);
        assert_eq!(s.sockets[1].cpus, [2, 3, 6, 7]);
        assert_eq!(s.sockets[1].cores, 2);
        assert_eq!(s.sockets[1].local_node, Some(1));
        assert_eq!(s.sockets[0].llc_bytes, Some(32 * MIB));
        assert_eq!(s.cache_levels, [32 << 10, 32 * MIB]);
        assert_eq!(s.contexts(), 8);
        assert_eq!(
            (s.distance(0, 0), s.distance(0, 1), s.distance(1, 0)),
            (10, 21, 21)
        );
        let only = Shape::from_os(&two_sockets(), &[2, 6]);
        assert_eq!(only.sockets.len(), 1);
        assert_eq!(only.sockets[0].cpus, [2, 6]);
        assert_eq!(only.sockets[0].cores, 1);
    }

    /// A job confined by a cpuset (Slurm, a container) to package 0's CPUs but node 1's
    /// memory: the plan measures those CPUs and binds to node 1 only.
    #[test]
    fn a_cpuset_confines_the_plan() {
        let mut os = two_sockets();
        os.cpuset = Some(vec![0, 1, 4]);
        os.allowed_nodes = Some(vec![1]);
        let s = Shape::from_os(&os, &[]);
        assert_eq!(s.sockets.len(), 1);
        assert_eq!(s.sockets[0].cpus, [0, 1, 4]);
        assert_eq!(s.sockets[0].local_node, None, "node 0 is not allowed");
        let nodes: Vec<u32> = s.nodes.iter().map(|n| n.id).collect();
        assert_eq!(nodes, [1]);
        assert_eq!(s.nodes[0].distances, [10], "node 1's own column");
        let topo = os.structure().expect("a structure");
        let t = Shape::from_topology(&topo, Some(&os));
        assert_eq!(t.sockets.len(), 1);
        assert_eq!(t.sockets[0].cpus, [0, 1, 4]);
        assert_eq!(t.nodes.len(), 1);
    }
}
