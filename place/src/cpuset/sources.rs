//! Where an [`Inventory`] comes from: a topology description, or the operating system's
//! view of a machine.

use topoprobe_model::{CacheType, OsView, Topology};

use super::inventory::{Given, Inventory, Parts};
use super::objects::ObjectType;

/// One type's objects: OS number and CPUs of each, or why the source lacks them.
type Objects = Given<u32>;

impl Inventory {
    /// The objects of a topology description: its sockets (`package`), cores, hardware
    /// contexts, outermost groups (`group`), memory nodes, and the caches whose sharing
    /// it records (measured by `topoprobe infer --plugins shared-caches`). A description
    /// has no dies.
    #[must_use]
    pub fn from_topology(topo: &Topology) -> Self {
        let os = |ctxs: &[topoprobe_model::ContextId]| -> Vec<u32> {
            ctxs.iter()
                .filter_map(|c| topo.contexts().get(c.index()).map(|h| h.os_id))
                .collect()
        };
        let packages = topo
            .sockets()
            .iter()
            .map(|s| (u32::try_from(s.id.index()).ok(), os(&s.contexts)))
            .collect();
        let cores = topo
            .cores()
            .iter()
            .map(|c| (None, os(&c.contexts)))
            .collect();
        let groups = topo
            .groups()
            .iter()
            .filter(|g| g.depth == 1)
            .map(|g| (None, os(&g.contexts)))
            .collect();
        let nodes: Objects = if topo.num_nodes() == 0 {
            Err("the description names no memory nodes".to_string())
        } else {
            Ok(topo
                .nodes()
                .iter()
                .map(|n| {
                    let cpus = n
                        .local_sockets
                        .iter()
                        .flat_map(|s| os(topo.socket_contexts(*s)))
                        .collect();
                    (n.os_id.or(u32::try_from(n.id.index()).ok()), cpus)
                })
                .collect())
        };
        let mut levels = vec![
            (ObjectType::Package, Ok(packages)),
            (ObjectType::Core, Ok(cores)),
            (ObjectType::Group, Ok(groups)),
            (ObjectType::NumaNode, nodes),
            (
                ObjectType::Die,
                Err(
                    "a description has no dies: its groups between core and socket are \
                     `group` (the operating system's view has dies)"
                        .to_string(),
                ),
            ),
        ];
        for ty in [
            ObjectType::L3Cache,
            ObjectType::L2Cache,
            ObjectType::L1Cache,
        ] {
            levels.push((ty, described_cache(topo, ty)));
        }
        Self::build(Parts {
            pus: topo.contexts().iter().map(|c| c.os_id).collect(),
            levels,
            cpuless_nodes: Vec::new(),
        })
    }

    /// The objects the operating system reports (what `topoprobe_measure::os` reads
    /// from sysfs) within the cgroup cpuset, as hwloc shows them by default: packages,
    /// dies, cores, online CPUs, NUMA nodes (CPU-less ones included), data caches, and as `group` the clusters of cores, or the NUMA nodes
    /// that divide a package, that are no other object (as hwloc groups them).
    #[must_use]
    pub fn from_os_view(view: &OsView) -> Self {
        // Nodes without CPUs of their own sit where their locality does; a node whose
        // CPUs the cpuset all disallows has none, as in hwloc.
        let cpuless_nodes: Vec<u32> = view
            .nodes
            .iter()
            .flatten()
            .filter(|n| n.cpus.is_empty())
            .map(|n| n.id)
            .collect();
        // hwloc's default view: only what the cgroup cpuset allows, numbered as such.
        let view = &view.allowed_only();
        let id = |v: i64| u32::try_from(v).ok();
        let packages = view
            .packages()
            .into_iter()
            .map(|(p, cpus)| (id(p), cpus))
            .collect();
        let dies = view.dies();
        let dies: Objects = if dies.is_empty() {
            Err("the operating system gives no die numbers".to_string())
        } else {
            Ok(dies
                .into_iter()
                .map(|((_, d), cpus)| (id(d), cpus))
                .collect())
        };
        let cores: Vec<Vec<u32>> = view.cores();
        let nodes: Objects = match &view.nodes {
            Some(nodes) => Ok(nodes
                .iter()
                .map(|n| {
                    let cpus = if cpuless_nodes.contains(&n.id) {
                        node_locality(view, n.id)
                    } else {
                        n.cpus.clone()
                    };
                    (Some(n.id), cpus)
                })
                .collect()),
            None => Err("the operating system gives no NUMA information".to_string()),
        };
        let groups = os_groups(view, &cores);
        let mut levels = vec![
            (ObjectType::Package, Ok(packages)),
            (ObjectType::Die, dies),
            (ObjectType::Group, Ok(groups)),
            (ObjectType::NumaNode, nodes),
            (
                ObjectType::Core,
                Ok(cores.iter().map(|c| (None, c.clone())).collect()),
            ),
        ];
        for (ty, level) in [
            (ObjectType::L3Cache, 3),
            (ObjectType::L2Cache, 2),
            (ObjectType::L1Cache, 1),
        ] {
            let groups = view.cache_groups(level);
            levels.push((
                ty,
                if groups.is_empty() {
                    Err(format!("the operating system lists no L{level} data cache"))
                } else {
                    Ok(groups.into_iter().map(|g| (None, g)).collect())
                },
            ));
        }
        Self::build(Parts {
            pus: view.online(),
            levels,
            cpuless_nodes,
        })
    }
}

/// The CPUs a CPU-less NUMA node is near, as hwloc places it
/// ([`OsView::node_locality`]: HMAT initiators, else the nearest nodes by distance), else
/// the whole machine.
fn node_locality(view: &OsView, id: u32) -> Vec<u32> {
    let near = view.node_locality(id);
    if near.is_empty() {
        view.online()
    } else {
        near
    }
}

/// The groups hwloc makes of what the operating system reports: clusters of cores, else
/// the CPUs of NUMA nodes that divide a package (sub-NUMA clustering), each unless it is
/// the same set of CPUs as a core, a cache, a die or a package (hwloc keeps one object
/// of a set).
fn os_groups(view: &OsView, cores: &[Vec<u32>]) -> Vec<(Option<u32>, Vec<u32>)> {
    let online = view.online();
    let mut same: Vec<Vec<u32>> = cores.to_vec();
    same.extend(view.packages().into_values());
    same.extend(view.dies().into_values());
    for level in 1..=3 {
        same.extend(view.cache_groups(level));
    }
    let mut candidates: Vec<(Option<u32>, Vec<u32>)> = view
        .clusters()
        .into_iter()
        .map(|((_, _, c), cpus)| (u32::try_from(c).ok(), cpus))
        .collect();
    if candidates.is_empty() {
        let packages = view.packages();
        candidates = view
            .node_cpus()
            .into_iter()
            .filter(|(_, cpus)| !cpus.is_empty())
            .filter(|(_, cpus)| {
                packages
                    .values()
                    .any(|p| p.len() > cpus.len() && cpus.iter().all(|c| p.contains(c)))
            })
            .map(|(n, cpus)| (Some(n), cpus))
            .collect();
    }
    candidates
        .into_iter()
        .map(|(i, mut cpus)| {
            cpus.retain(|c| online.binary_search(c).is_ok());
            cpus.sort_unstable();
            (i, cpus)
        })
        .filter(|(_, cpus)| !cpus.is_empty() && !same.contains(cpus))
        .collect()
}

/// The instances of a cache level a description records (which contexts share each),
/// or why it has none.
fn described_cache(topo: &Topology, ty: ObjectType) -> Objects {
    let level = u32::from(ty.cache_level().unwrap_or(0));
    let name = format!("L{level}");
    let lacks = |what: &str| {
        Err(format!(
            "the description {what}; `topoprobe infer --plugins shared-caches` measures \
             which contexts share each cache"
        ))
    };
    let Some(section) = topo.caches() else {
        return lacks("has no cache section");
    };
    let Some(found) = section
        .levels
        .iter()
        .find(|l| l.level == level && l.kind.is_none_or(CacheType::holds_data))
    else {
        return lacks(&format!("has no {name} cache"));
    };
    if found.shared_by.is_empty() {
        return lacks(&format!(
            "does not say which contexts share its {name} cache"
        ));
    }
    Ok(found
        .shared_by
        .iter()
        .map(|ctxs| {
            (
                None,
                ctxs.iter()
                    .filter_map(|c| topo.contexts().get(c.index()).map(|h| h.os_id))
                    .collect(),
            )
        })
        .collect())
}
