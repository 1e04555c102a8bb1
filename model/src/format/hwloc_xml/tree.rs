//! The object tree of the export: Package → Group → Core → PU from the description, with
//! the cache instances inserted where their CPUs nest, as hwloc requires (an L3 shared by
//! a group's cores sits inside the group and holds the cores; an L2 private to a core
//! holds that core).
//!
//! A cache level's instances are its measured sharing (`shared_by`, or the OS's sharing
//! recorded there) when known; otherwise levels 1 and 2 are taken as private to each core
//! and higher levels as shared by each socket, the usual layout, said in the object's
//! `TopoprobeSharing` info. An instance that cannot nest — it crosses a core, a group or
//! another cache, lies inside one core, or spans several sockets — is left out, and the
//! machine's `TopoprobeCachesLeftOut` info counts them.

use std::collections::BTreeSet;

use crate::components::Member;
use crate::ids::{CoreId, GroupId, SocketId};
use crate::os_view::CacheType;
use crate::topology::Topology;

/// What an object of the tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The machine (the root).
    Machine,
    /// A socket.
    Package(SocketId),
    /// A group of the description.
    Group(GroupId),
    /// A cache instance: index into [`Tree::caches`].
    Cache(usize),
    /// A core.
    Core(CoreId),
    /// A hardware context, by OS number.
    Pu(u32),
}

/// An object and its children.
#[derive(Debug, Clone)]
pub(super) struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its CPUs (OS numbers).
    pub cpus: BTreeSet<u32>,
    /// Its children, in order.
    pub children: Vec<Self>,
}

/// What the export knows of one cache level.
#[derive(Debug, Clone)]
pub(super) struct CacheObject {
    /// Level (1 for L1).
    pub level: u32,
    /// What it holds, when known.
    pub kind: Option<CacheType>,
    /// Size in bytes: measured when measured, else the OS's.
    pub size_bytes: Option<u64>,
    /// `measured` or `os`: where the size comes from.
    pub size_from: &'static str,
    /// Line size in bytes.
    pub line_bytes: Option<u32>,
    /// Associativity, when the OS gave it.
    pub ways: Option<u32>,
    /// `measured`, `os` or `assumed`: where the sharing comes from.
    pub sharing: &'static str,
    /// Load-to-use latency in the description's unit.
    pub latency: Option<f64>,
}

impl CacheObject {
    /// Outer caches rank higher: by level, then a data or unified cache above the
    /// instruction cache of the same level (as hwloc nests L1d above L1i).
    fn rank(&self) -> (u32, u8) {
        (
            self.level,
            u8::from(self.kind != Some(CacheType::Instruction)),
        )
    }
}

/// The object tree and its caches.
#[derive(Debug, Clone)]
pub(super) struct Tree {
    /// The machine object.
    pub root: Item,
    /// The cache levels the [`Kind::Cache`] objects point into.
    pub caches: Vec<CacheObject>,
    /// Cache instances left out because they do not nest.
    pub left_out: usize,
}

fn os_cpus(topo: &Topology, contexts: &[crate::ids::ContextId]) -> BTreeSet<u32> {
    contexts
        .iter()
        .filter_map(|c| topo.contexts().get(c.0).map(|x| x.os_id))
        .collect()
}

fn members(topo: &Topology, members: &[Member]) -> Vec<Item> {
    members
        .iter()
        .map(|m| match *m {
            Member::Group(g) => {
                let group = &topo.groups()[g.0];
                Item {
                    kind: Kind::Group(g),
                    cpus: os_cpus(topo, &group.contexts),
                    children: self::members(topo, &group.members),
                }
            }
            Member::Core(c) => {
                let ctxs = topo.core_contexts(c);
                Item {
                    kind: Kind::Core(c),
                    cpus: os_cpus(topo, ctxs),
                    children: ctxs
                        .iter()
                        .map(|x| {
                            let os = topo.contexts()[x.0].os_id;
                            Item {
                                kind: Kind::Pu(os),
                                cpus: BTreeSet::from([os]),
                                children: Vec::new(),
                            }
                        })
                        .collect(),
                }
            }
        })
        .collect()
}

/// The instances of a level and where their sharing comes from.
fn instances(
    topo: &Topology,
    level: &crate::sections::CacheLevel,
) -> (Vec<BTreeSet<u32>>, &'static str) {
    if !level.shared_by.is_empty() {
        let from = match level.sharing.as_ref().and_then(|s| s.source) {
            Some(crate::meta::Origin::Os) => "os",
            _ => "measured",
        };
        let sets = level
            .shared_by
            .iter()
            .map(|s| os_cpus(topo, s))
            .filter(|s| !s.is_empty())
            .collect();
        return (sets, from);
    }
    let sets = if level.level <= 2 {
        topo.cores()
            .iter()
            .map(|c| os_cpus(topo, topo.core_contexts(c.id)))
            .collect()
    } else {
        topo.sockets()
            .iter()
            .map(|s| os_cpus(topo, &s.contexts))
            .collect()
    };
    (sets, "assumed")
}

/// Inserts a cache instance below `node`; false when it cannot nest there.
fn insert(node: &mut Item, set: &BTreeSet<u32>, cache: usize, caches: &[CacheObject]) -> bool {
    let rank = caches[cache].rank();
    if let Some(i) = node.children.iter().position(|c| set.is_subset(&c.cpus)) {
        let child = &node.children[i];
        match child.kind {
            Kind::Pu(_) => return false,
            // Equal to a core: the cache holds the core (below).
            Kind::Core(_) if child.cpus.len() == set.len() => {}
            Kind::Core(_) => return false,
            Kind::Cache(j) if caches[j].rank() <= rank => return false,
            _ => return insert(&mut node.children[i], set, cache, caches),
        }
    }
    if node.kind == Kind::Machine {
        return false;
    }
    let crosses = node
        .children
        .iter()
        .any(|c| !c.cpus.is_disjoint(set) && !c.cpus.is_subset(set));
    let covered: BTreeSet<u32> = node
        .children
        .iter()
        .filter(|c| c.cpus.is_subset(set))
        .flat_map(|c| c.cpus.iter().copied())
        .collect();
    if crosses || covered != *set {
        return false;
    }
    let Some(at) = node.children.iter().position(|c| c.cpus.is_subset(set)) else {
        return false;
    };
    let (inside, outside): (Vec<Item>, Vec<Item>) = std::mem::take(&mut node.children)
        .into_iter()
        .partition(|c| c.cpus.is_subset(set));
    let mut children = outside;
    children.insert(
        at.min(children.len()),
        Item {
            kind: Kind::Cache(cache),
            cpus: set.clone(),
            children: inside,
        },
    );
    node.children = children;
    true
}

/// The object tree of `topo` with its caches.
pub(super) fn build(topo: &Topology) -> Tree {
    let mut root = Item {
        kind: Kind::Machine,
        cpus: topo.contexts().iter().map(|c| c.os_id).collect(),
        children: topo
            .sockets()
            .iter()
            .map(|s| Item {
                kind: Kind::Package(s.id),
                cpus: os_cpus(topo, &s.contexts),
                children: members(topo, &s.members),
            })
            .collect(),
    };
    let mut caches = Vec::new();
    let mut placed: Vec<(usize, Vec<BTreeSet<u32>>)> = Vec::new();
    for level in topo
        .caches()
        .map(|c| c.levels.as_slice())
        .unwrap_or_default()
    {
        let (size_bytes, size_from) = match (level.measured_size_kib, level.os_size_kib) {
            (Some(m), _) => (Some(m.saturating_mul(1024)), "measured"),
            (None, Some(o)) => (Some(o.saturating_mul(1024)), "os"),
            (None, None) => (None, "os"),
        };
        let (sets, sharing) = instances(topo, level);
        caches.push(CacheObject {
            level: level.level,
            kind: level.kind,
            size_bytes,
            size_from,
            line_bytes: level.line_bytes,
            ways: level.ways,
            sharing,
            latency: level.latency,
        });
        placed.push((caches.len() - 1, sets));
    }
    // Outer caches first, so that inner ones find their parent in place.
    placed.sort_by(|a, b| caches[b.0].rank().cmp(&caches[a.0].rank()));
    let mut left_out = 0;
    for (cache, sets) in placed {
        for set in sets {
            if !insert(&mut root, &set, cache, &caches) {
                left_out += 1;
            }
        }
    }
    Tree {
        root,
        caches,
        left_out,
    }
}
