//! A description made from the operating system's view alone: packages become sockets,
//! the OS's cores become cores, dies, clusters and shared caches between core and package
//! become groups, and NUMA nodes become memory nodes. No latency is known: the latency
//! tables are empty and there are no latency levels.
//!
//! `place`, `run`, `report` and `heatmap` use it on a machine that has not been measured
//! yet, as lstopo and likwid-pin do: the structure is what the OS says, which
//! `topoprobe infer` then checks by measurement.

use std::collections::{BTreeMap, BTreeSet};

use super::OsView;
use crate::{
    ContextId, CoreId, Evidence, GroupId, LatencyUnit, Member, ModelError, Origin, Provenance,
    SocketId, Source, Topology, TopologyBuilder,
};

impl OsView {
    /// The description of this view's structure — no latency is known: the latency
    /// tables are empty and there are no latency levels. It holds every online CPU, its
    /// core and package, the dies, clusters and caches that several cores
    /// share inside a package as nested groups, and the NUMA nodes. Sets that cross each
    /// other (a cache shared across two dies) are left out, so that the groups nest.
    ///
    /// # Errors
    ///
    /// [`ModelError::Structure`] when the view has no online CPU or is inconsistent (a CPU
    /// listed twice).
    pub fn structure(&self) -> Result<Topology, ModelError> {
        let ids: Vec<u32> = self.online();
        if ids.is_empty() {
            return Err(ModelError::Structure(
                "the operating system lists no online CPU".into(),
            ));
        }
        let index: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        if index.len() != ids.len() {
            return Err(ModelError::Structure(
                "the operating system lists a CPU twice".into(),
            ));
        }
        let mut b = TopologyBuilder::new(ids.clone(), LatencyUnit::Ns);
        // Cores, and the core of each CPU.
        let mut core_of: BTreeMap<u32, CoreId> = BTreeMap::new();
        let mut core_cpus: Vec<Vec<u32>> = Vec::new();
        for cpus in self.cores() {
            let id = b.core(cpus.iter().map(|c| ContextId(index[c])).collect());
            for &c in &cpus {
                core_of.insert(c, id);
            }
            core_cpus.push(cpus);
        }
        // Per package: the sets between core and package, nested.
        let mut socket_of_cpu: BTreeMap<u32, SocketId> = BTreeMap::new();
        for cpus in self.packages().values() {
            let sets = self.nested_sets(cpus, &core_of);
            let members = add_groups(&mut b, &sets, cpus, &core_of);
            let socket = b.socket(members);
            for &c in cpus {
                socket_of_cpu.insert(c, socket);
            }
        }
        // A socket has one local node in the model: the node holding most of its CPUs
        // (the first on a tie). Other nodes of a package split into several (sub-NUMA
        // clustering) are groups of it, and memory-only nodes have no local socket.
        let mut local: BTreeMap<u32, SocketId> = BTreeMap::new();
        let mut best: BTreeMap<SocketId, (usize, u32)> = BTreeMap::new();
        for node in self.nodes.iter().flatten() {
            let mut count: BTreeMap<SocketId, usize> = BTreeMap::new();
            for c in &node.cpus {
                if let Some(&s) = socket_of_cpu.get(c) {
                    *count.entry(s).or_default() += 1;
                }
            }
            for (s, n) in count {
                let e = best.entry(s).or_insert((n, node.id));
                if n > e.0 {
                    *e = (n, node.id);
                }
            }
        }
        for (socket, (_, node)) in best {
            local.insert(node, socket);
        }
        for node in self.nodes.iter().flatten() {
            let sockets: Vec<SocketId> = local.get(&node.id).copied().into_iter().collect();
            b.node(Some(node.id), node.memory_bytes, sockets);
        }
        b.machine(self.machine());
        b.provenance(Provenance::new(Source::Os));
        b.origins(Origin::Os, Origin::Os);
        b.build()
    }

    /// The sets of CPUs of one package that several cores share and that are smaller than
    /// the package — dies, clusters, shared caches — without repeats, largest first, and
    /// only those that nest with the ones kept before them.
    fn nested_sets(&self, package: &[u32], core_of: &BTreeMap<u32, CoreId>) -> Vec<Vec<u32>> {
        let inside: BTreeSet<u32> = package.iter().copied().collect();
        let mut candidates: Vec<Vec<u32>> = Vec::new();
        candidates.extend(self.dies().into_values());
        candidates.extend(self.clusters().into_values());
        candidates.extend(self.node_cpus().into_values());
        let levels: BTreeSet<u8> = self.caches.iter().map(|c| c.level).collect();
        for level in levels {
            candidates.extend(self.cache_groups(level));
        }
        let mut seen = BTreeSet::new();
        let mut sets: Vec<Vec<u32>> = candidates
            .into_iter()
            .map(|s| {
                let mut s: Vec<u32> = s.into_iter().filter(|c| inside.contains(c)).collect();
                s.sort_unstable();
                s
            })
            .filter(|s| {
                let cores: BTreeSet<CoreId> =
                    s.iter().filter_map(|c| core_of.get(c).copied()).collect();
                cores.len() > 1 && s.len() < inside.len()
            })
            .filter(|s| seen.insert(s.clone()))
            .collect();
        sets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let mut kept: Vec<Vec<u32>> = Vec::new();
        for s in sets {
            let set: BTreeSet<u32> = s.iter().copied().collect();
            let nests = kept.iter().all(|k| {
                let common = k.iter().filter(|c| set.contains(c)).count();
                common == 0 || common == s.len()
            });
            // A set must also hold whole cores.
            let whole = s.iter().all(|c| {
                core_of.get(c).is_some_and(|core| {
                    s.iter().filter(|d| core_of.get(d) == Some(core)).count()
                        == package
                            .iter()
                            .filter(|d| core_of.get(d) == Some(core))
                            .count()
                })
            });
            if nests && whole {
                kept.push(s);
            }
        }
        kept
    }
}

/// Adds the groups of `sets` (largest first, nested) to `b` and returns the direct members
/// of the package: its outermost groups and the cores in no group.
fn add_groups(
    b: &mut TopologyBuilder,
    sets: &[Vec<u32>],
    package: &[u32],
    core_of: &BTreeMap<u32, CoreId>,
) -> Vec<Member> {
    // The parent of each set: the smallest earlier (larger) set holding it.
    let parent: Vec<Option<usize>> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (0..i)
                .rev()
                .find(|&j| sets[j].len() > s.len() && s.iter().all(|c| sets[j].contains(c)))
        })
        .collect();
    // The innermost set of each core.
    let mut home: BTreeMap<CoreId, usize> = BTreeMap::new();
    for (i, s) in sets.iter().enumerate() {
        for c in s {
            if let Some(&core) = core_of.get(c) {
                home.insert(core, i);
            }
        }
    }
    // Build from the innermost (smallest, last) outwards so that children exist first.
    let mut ids: Vec<Option<GroupId>> = vec![None; sets.len()];
    for i in (0..sets.len()).rev() {
        let mut members: Vec<Member> = (i + 1..sets.len())
            .filter(|&j| parent[j] == Some(i))
            .filter_map(|j| ids[j].map(Member::Group))
            .collect();
        let cores: BTreeSet<CoreId> = home
            .iter()
            .filter(|&(_, &h)| h == i)
            .map(|(&c, _)| c)
            .collect();
        members.extend(cores.into_iter().map(Member::Core));
        ids[i] = Some(b.group(members, Evidence::Given));
    }
    let mut members: Vec<Member> = (0..sets.len())
        .filter(|&j| parent[j].is_none())
        .filter_map(|j| ids[j].map(Member::Group))
        .collect();
    let loose: BTreeSet<CoreId> = package
        .iter()
        .filter_map(|c| core_of.get(c).copied())
        .filter(|core| !home.contains_key(core))
        .collect();
    members.extend(loose.into_iter().map(Member::Core));
    members
}

#[cfg(test)]
mod tests {
    use crate::{CacheType, OsCache, OsCpu, OsNode, OsView, Source};

    /// A CPU of the shared test helper, on the node numbered as its package.
    fn cpu(id: u32, package: i64, core: i64, siblings: Vec<u32>) -> OsCpu {
        OsCpu {
            node: Some(u32::try_from(package).unwrap_or(0)),
            ..crate::os_view::tests::cpu(id, package, core, siblings)
        }
    }

    fn l3(cpus: Vec<u32>) -> OsCache {
        OsCache {
            level: 3,
            kind: CacheType::Unified,
            size_bytes: Some(32 << 20),
            line_size: Some(64),
            ways: Some(16),
            cpus,
        }
    }

    /// Two packages of four SMT cores (siblings `i`, `i + 8`), each package with two L3
    /// caches of two cores, and a node per package.
    fn two_packages_two_l3() -> OsView {
        let mut cpus = Vec::new();
        for id in 0..16u32 {
            let base = id % 8;
            cpus.push(cpu(
                id,
                i64::from(base / 4),
                i64::from(base % 4),
                vec![base, base + 8],
            ));
        }
        OsView {
            cpus,
            nodes: Some(vec![
                OsNode {
                    id: 0,
                    cpus: vec![0, 1, 2, 3, 8, 9, 10, 11],
                    distances: vec![10, 21],
                    memory_bytes: Some(1 << 30),
                },
                OsNode {
                    id: 1,
                    cpus: vec![4, 5, 6, 7, 12, 13, 14, 15],
                    distances: vec![21, 10],
                    memory_bytes: Some(1 << 30),
                },
            ]),
            caches: vec![
                l3(vec![0, 1, 8, 9]),
                l3(vec![2, 3, 10, 11]),
                l3(vec![4, 5, 12, 13]),
                l3(vec![6, 7, 14, 15]),
            ],
            ..OsView::default()
        }
    }

    #[test]
    fn packages_cores_caches_and_nodes() {
        let t = two_packages_two_l3().structure().expect("builds");
        assert_eq!(t.contexts().len(), 16);
        assert_eq!(t.cores().len(), 8);
        assert_eq!(t.sockets().len(), 2);
        assert_eq!(t.groups().len(), 4, "one group per L3");
        assert_eq!(t.nodes().len(), 2);
        assert!(matches!(t.provenance().source, Source::Os));
        let first = &t.sockets()[0];
        let os: Vec<u32> = first
            .contexts
            .iter()
            .map(|c| t.contexts()[c.0].os_id)
            .collect();
        assert_eq!(os, vec![0, 1, 2, 3, 8, 9, 10, 11]);
        for g in t.groups() {
            assert_eq!(g.cores.len(), 2);
        }
    }

    #[test]
    fn a_cache_of_the_whole_package_is_no_group_and_crossing_sets_are_dropped() {
        let mut os = two_packages_two_l3();
        os.caches.push(OsCache {
            level: 2,
            ..l3(vec![1, 2, 9, 10])
        });
        os.caches.push(l3(vec![0, 1, 2, 3, 8, 9, 10, 11]));
        let t = os.structure().expect("builds");
        // The package-wide cache adds nothing; the L2 across two L3s crosses them.
        assert_eq!(t.groups().len(), 4);
    }

    #[test]
    fn no_cpu_is_an_error() {
        assert!(OsView::default().structure().is_err());
    }
}
