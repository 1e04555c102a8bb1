//! The objects of a machine an expression can name, numbered as hwloc numbers them.
//!
//! hwloc's logical index of an object is its place in a depth-first walk of the
//! machine's tree, whose children are ordered by their first CPU. An [`Inventory`]
//! orders the hardware threads (PUs) that way — by the first CPU of their package, then
//! of their NUMA node, die, group and caches (the levels with fewer objects outermost),
//! then of their core, then by their own number — and numbers the objects of every type
//! by their first PU in that order. Memory nodes without CPUs come after the others, by
//! number.
//!
//! [`Inventory::from_topology`] and [`Inventory::from_os_view`] (in `sources`) fill it from a
//! description or from what the operating system says; a type the source does not know
//! (which contexts share an L3 cache, the NUMA nodes) is kept with the reason, which is
//! the error of a term that names it.

use std::collections::HashMap;

use topoprobe_model::format_cpu_list;

use super::error::{CpuSetError, ErrorKind};
use super::objects::{ObjectType, ALL_TYPES};

/// Objects as a source gives them: each with its OS number when known, and its members.
pub(crate) type Members<T> = Vec<(Option<u32>, Vec<T>)>;

/// The objects of one type, or why the source cannot give them.
pub(crate) type Given<T> = Result<Members<T>, String>;

/// No object (in an owner table).
const NONE: u32 = u32::MAX;

/// One object: its PUs (positions in the logical order, ascending) and its
/// operating-system number when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Object {
    /// Its PUs, ascending.
    pub(crate) pus: Vec<usize>,
    /// The OS's number (package id, node number, CPU number), when known.
    pub(crate) os_index: Option<u32>,
}

/// The objects of one type, or why the source does not know them.
#[derive(Debug, Clone)]
enum Level {
    /// The objects in logical order, and for each PU the object holding it.
    Known {
        objects: Vec<Object>,
        owner: Vec<u32>,
    },
    /// Why they are unknown.
    Unknown(String),
}

/// What a source gives: the PUs' OS numbers and, for each type, its objects (each an
/// optional OS number and the OS numbers of its CPUs) or why it cannot give them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    /// The OS numbers of the PUs.
    pub(crate) pus: Vec<u32>,
    /// Objects by type (machine and PU are made from `pus`).
    pub(crate) levels: Vec<(ObjectType, Given<u32>)>,
    /// The OS numbers of the NUMA nodes without CPUs of their own, whose members in
    /// `levels` are the CPUs they are near (their locality, as hwloc gives them): they
    /// take no part in the order of the PUs, and sit in the tree where their locality
    /// does.
    pub(crate) cpuless_nodes: Vec<u32>,
}

/// The objects of a machine, numbered as hwloc numbers them, that CPU-set expressions
/// are resolved against.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// OS number of each PU, in logical order.
    os: Vec<u32>,
    /// PU of each OS number (`None`: every number up to `os.len()` is its own PU).
    index: Option<HashMap<u32, usize>>,
    /// Each PU's rank in its core (0 for the first hardware thread).
    smt: Vec<u32>,
    /// Every type the source gives, and the machine and the PUs.
    levels: Vec<(ObjectType, Level)>,
}

impl Inventory {
    /// Builds the inventory from what a source gives.
    pub(crate) fn build(parts: Parts) -> Self {
        let mut cpus = parts.pus;
        cpus.sort_unstable();
        cpus.dedup();
        let known: HashMap<u32, usize> = cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        // Each level's objects as positions in `cpus`, empty ones dropped (but CPU-less
        // memory nodes, which hwloc numbers too).
        let mut raw: Vec<(ObjectType, Given<usize>)> = parts
            .levels
            .into_iter()
            .map(|(ty, objs)| {
                let objs = objs.map(|objs| {
                    objs.into_iter()
                        .map(|(os_index, members)| {
                            let mut m: Vec<usize> = members
                                .iter()
                                .filter_map(|c| known.get(c).copied())
                                .collect();
                            m.sort_unstable();
                            m.dedup();
                            (os_index, m)
                        })
                        .filter(|(_, m)| ty == ObjectType::NumaNode || !m.is_empty())
                        .collect()
                });
                (ty, objs)
            })
            .collect();
        raw.sort_by_key(|(ty, _)| *ty);
        let cpuless = |ty: ObjectType, os_index: Option<u32>| {
            ty == ObjectType::NumaNode && os_index.is_some_and(|i| parts.cpuless_nodes.contains(&i))
        };
        // CPU-less nodes overlap the nodes of their locality: the PUs' order comes from
        // the others.
        let with_cpus: Vec<(ObjectType, Given<usize>)> = raw
            .iter()
            .map(|(ty, objs)| {
                let objs = objs.as_ref().map_err(Clone::clone).map(|objs| {
                    objs.iter()
                        .filter(|(i, _)| !cpuless(*ty, *i))
                        .cloned()
                        .collect()
                });
                (*ty, objs)
            })
            .collect();
        let order = logical_order(&cpus, &with_cpus);
        let mut position = vec![0; cpus.len()];
        for (logical, &c) in order.iter().enumerate() {
            position[c] = logical;
        }
        let os: Vec<u32> = order.iter().map(|&c| cpus[c]).collect();
        let index = os.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let all: Vec<usize> = (0..os.len()).collect();
        let sets = containers(&raw, &position, cpuless);
        let mut levels = vec![
            (
                ObjectType::Machine,
                known_level(
                    vec![Object {
                        pus: all,
                        os_index: Some(0),
                    }],
                    os.len(),
                ),
            ),
            (
                ObjectType::Pu,
                known_level(
                    os.iter()
                        .enumerate()
                        .map(|(p, &c)| Object {
                            pus: vec![p],
                            os_index: Some(c),
                        })
                        .collect(),
                    os.len(),
                ),
            ),
        ];
        for (ty, objs) in raw
            .iter()
            .filter(|(ty, _)| !matches!(ty, ObjectType::Machine | ObjectType::Pu))
            .cloned()
        {
            let level = match objs {
                Ok(objs) => {
                    let objects = objs
                        .into_iter()
                        .map(|(os_index, m)| {
                            let mut pus: Vec<usize> = m.iter().map(|&c| position[c]).collect();
                            pus.sort_unstable();
                            Object { pus, os_index }
                        })
                        .collect();
                    if ty == ObjectType::NumaNode {
                        node_level(objects, os.len(), &sets, |i| cpuless(ty, i))
                    } else {
                        known_level(objects, os.len())
                    }
                }
                Err(why) => Level::Unknown(why),
            };
            levels.push((ty, level));
        }
        let mut inv = Self {
            smt: vec![0; os.len()],
            os,
            index: Some(index),
            levels,
        };
        inv.rank_threads();
        inv
    }

    /// A machine whose CPUs are `0..n`, with no objects: what an expression of CPU
    /// numbers and masks alone is resolved against.
    pub(crate) fn numbers(n: usize) -> Self {
        Self {
            os: (0..n)
                .map(|c| u32::try_from(c).unwrap_or(u32::MAX))
                .collect(),
            index: None,
            smt: vec![0; n],
            levels: Vec::new(),
        }
    }

    /// Each PU's rank among its core's PUs.
    fn rank_threads(&mut self) {
        let mut smt = vec![0; self.os.len()];
        if let Ok(cores) = self.objects(ObjectType::Core) {
            for core in cores {
                for (rank, &p) in core.pus.iter().enumerate() {
                    smt[p] = u32::try_from(rank).unwrap_or(u32::MAX);
                }
            }
        }
        self.smt = smt;
    }

    /// The number of PUs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.os.len()
    }

    /// Whether the machine has no PU.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.os.is_empty()
    }

    /// The OS numbers of the PUs, ascending.
    #[must_use]
    pub fn cpus(&self) -> Vec<u32> {
        let mut v = self.os.clone();
        v.sort_unstable();
        v
    }

    /// The OS numbers of the PUs in hwloc's logical order (`pu:0` first).
    #[must_use]
    pub fn logical_cpus(&self) -> &[u32] {
        &self.os
    }

    /// The OS number of PU `p`.
    pub(crate) fn os_of(&self, p: usize) -> u32 {
        self.os[p]
    }

    /// The PU with OS number `cpu`.
    pub(crate) fn pu_of(&self, cpu: u32) -> Option<usize> {
        match &self.index {
            Some(map) => map.get(&cpu).copied(),
            None => usize::try_from(cpu).ok().filter(|&c| c < self.os.len()),
        }
    }

    /// PU `p`'s rank in its core.
    pub(crate) fn smt_rank(&self, p: usize) -> u32 {
        self.smt[p]
    }

    /// The objects of a type, in logical order.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unknown`] when the source does not know them (the message says
    /// why), [`ErrorKind::NeedsTopology`] for an inventory of CPU numbers alone.
    pub(crate) fn objects(&self, ty: ObjectType) -> Result<&[Object], CpuSetError> {
        match self.level(ty)? {
            Level::Known { objects, .. } => Ok(objects),
            Level::Unknown(why) => Err(CpuSetError::new(ErrorKind::Unknown, "", why.clone())),
        }
    }

    /// The object of type `ty` holding PU `p`, if any.
    pub(crate) fn owner(&self, ty: ObjectType, p: usize) -> Option<usize> {
        match self.level(ty) {
            Ok(Level::Known { owner, .. }) => owner
                .get(p)
                .copied()
                .filter(|&o| o != NONE)
                .map(|o| o as usize),
            _ => None,
        }
    }

    fn level(&self, ty: ObjectType) -> Result<&Level, CpuSetError> {
        self.levels
            .iter()
            .find(|(t, _)| *t == ty)
            .map(|(_, l)| l)
            .ok_or_else(|| {
                CpuSetError::new(
                    ErrorKind::NeedsTopology,
                    "",
                    format!(
                        "{} needs a topology; CPU numbers and masks do not",
                        ty.name()
                    ),
                )
            })
    }

    /// How many objects of a type the machine has.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unknown`] when the source does not know the type (the message says
    /// why).
    pub fn count(&self, ty: ObjectType) -> Result<usize, CpuSetError> {
        Ok(self.objects(ty)?.len())
    }

    /// The logical indexes of the objects of type `ty` that hold at least one of `cpus`
    /// (OS numbers; those the machine lacks are ignored), ascending — hwloc-calc's
    /// `--intersect TYPE`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unknown`] when the source does not know the type (the message says
    /// why).
    pub fn intersecting(&self, ty: ObjectType, cpus: &[u32]) -> Result<Vec<usize>, CpuSetError> {
        let objects = self.objects(ty)?;
        let mut set = vec![false; self.os.len()];
        for p in cpus.iter().filter_map(|&c| self.pu_of(c)) {
            set[p] = true;
        }
        // Objects may overlap (a CPU-less node and the node of its locality): each is
        // tested on its own.
        Ok(objects
            .iter()
            .enumerate()
            .filter(|(_, o)| o.pus.iter().any(|&p| set[p]))
            .map(|(i, _)| i)
            .collect())
    }

    /// The machine's CPUs in list syntax, for messages.
    /// The largest OS number of a PU (0 when there is none).
    pub(crate) fn max_os(&self) -> u32 {
        self.os.iter().copied().max().unwrap_or(0)
    }

    pub(crate) fn cpus_text(&self) -> String {
        format_cpu_list(&self.os)
    }
}

/// A known level: its objects ordered by first PU (CPU-less ones last, by OS number),
/// and the owner of each PU (the first object holding it).
fn known_level(mut objects: Vec<Object>, pus: usize) -> Level {
    objects.sort_by_key(|o| (o.pus.first().copied().unwrap_or(usize::MAX), o.os_index));
    let mut owner = vec![NONE; pus];
    for (i, o) in objects.iter().enumerate() {
        for &p in &o.pus {
            if owner[p] == NONE {
                owner[p] = u32::try_from(i).unwrap_or(NONE);
            }
        }
    }
    Level::Known { objects, owner }
}

/// Every object set that can hold a memory node (logical PU positions, ascending): the
/// machine, the objects of every level, and the CPU sets of the nodes with CPUs (hwloc
/// makes a group of a node's CPUs where no object has them), not the localities of
/// CPU-less nodes.
fn containers(
    raw: &[(ObjectType, Given<usize>)],
    position: &[usize],
    cpuless: impl Fn(ObjectType, Option<u32>) -> bool,
) -> Vec<Vec<usize>> {
    let mut sets: Vec<Vec<usize>> = vec![(0..position.len()).collect()];
    for (ty, objs) in raw {
        for (_, m) in objs.iter().flatten().filter(|(i, _)| !cpuless(*ty, *i)) {
            let mut pus: Vec<usize> = m.iter().map(|&c| position[c]).collect();
            pus.sort_unstable();
            if !pus.is_empty() {
                sets.push(pus);
            }
        }
    }
    sets
}

/// The NUMA nodes in hwloc's logical order: each sits in the smallest object holding its
/// CPUs (its locality, for a CPU-less node), and a depth-first walk meets the memory of
/// an object before its children, so nodes are ordered by the first PU of that object,
/// bigger objects first, then by OS number. A PU's owner is the node with CPUs holding
/// it (a CPU-less node where none does).
fn node_level(
    mut objects: Vec<Object>,
    pus: usize,
    containers: &[Vec<usize>],
    cpuless: impl Fn(Option<u32>) -> bool,
) -> Level {
    let parent_key = |o: &Object| -> (usize, std::cmp::Reverse<usize>, Option<u32>) {
        let parent = containers
            .iter()
            .filter(|c| o.pus.iter().all(|p| c.binary_search(p).is_ok()))
            .min_by_key(|c| c.len());
        match (parent, o.pus.first()) {
            (Some(c), Some(_)) => (c[0], std::cmp::Reverse(c.len()), o.os_index),
            _ => (usize::MAX, std::cmp::Reverse(0), o.os_index),
        }
    };
    objects.sort_by_cached_key(parent_key);
    let mut owner = vec![NONE; pus];
    for pass_cpuless in [false, true] {
        for (i, o) in objects.iter().enumerate() {
            if cpuless(o.os_index) != pass_cpuless {
                continue;
            }
            for &p in &o.pus {
                if owner[p] == NONE {
                    owner[p] = u32::try_from(i).unwrap_or(NONE);
                }
            }
        }
    }
    Level::Known { objects, owner }
}

/// The logical order of the CPUs (positions in `cpus`): sorted by the first CPU of
/// their object at each level that nests them, outermost (fewest objects) first, then by
/// their own number.
///
/// Keys are built from the innermost level out (`first` inherits the inner value where a
/// level does not hold the CPU: a P-core outside the E-core group sorts by its own core).
fn logical_order(cpus: &[u32], levels: &[(ObjectType, Given<usize>)]) -> Vec<usize> {
    let mut tree: Vec<(usize, ObjectType, &Members<usize>)> = levels
        .iter()
        .filter(|(ty, _)| !matches!(ty, ObjectType::Machine | ObjectType::Pu))
        .filter_map(|(ty, objs)| objs.as_ref().ok().map(|o| (o.len(), *ty, o)))
        .collect();
    tree.sort_by_key(|&(n, ty, _)| (n, ALL_TYPES.iter().position(|t| *t == ty)));
    // Keys from the inside out: a CPU that no object of a level holds sits directly in
    // the next level out, placed there by the first CPU of its object one level in.
    let mut keys: Vec<Vec<u32>> = cpus.iter().map(|&c| vec![c]).collect();
    for (_, _, objs) in tree.iter().rev() {
        let mut first: Vec<u32> = keys.iter().map(|k| k[k.len() - 1]).collect();
        let mut held = vec![false; cpus.len()];
        for (_, members) in objs.iter() {
            let lowest = members.iter().map(|&c| cpus[c]).min().unwrap_or(u32::MAX);
            for &c in members {
                if !held[c] {
                    held[c] = true;
                    first[c] = lowest;
                }
            }
        }
        for (k, f) in keys.iter_mut().zip(first) {
            k.push(f);
        }
    }
    for k in &mut keys {
        k.reverse();
    }
    let mut order: Vec<usize> = (0..cpus.len()).collect();
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two packages numbered round robin (CPU n on package n % 2), two cores each with
    /// SMT siblings n and n + 4.
    fn round_robin() -> Inventory {
        Inventory::build(Parts {
            pus: (0..8).collect(),
            levels: vec![
                (
                    ObjectType::Package,
                    Ok(vec![
                        (Some(0), vec![0, 2, 4, 6]),
                        (Some(1), vec![1, 3, 5, 7]),
                    ]),
                ),
                (
                    ObjectType::Core,
                    Ok(vec![
                        (None, vec![0, 4]),
                        (None, vec![1, 5]),
                        (None, vec![2, 6]),
                        (None, vec![3, 7]),
                    ]),
                ),
                (ObjectType::L3Cache, Err("no caches".into())),
            ],
            cpuless_nodes: Vec::new(),
        })
    }

    #[test]
    fn logical_order_is_hwlocs() {
        let inv = round_robin();
        assert_eq!(inv.logical_cpus(), &[0, 4, 2, 6, 1, 5, 3, 7]);
        let cores: Vec<Vec<u32>> = inv
            .objects(ObjectType::Core)
            .unwrap()
            .iter()
            .map(|o| o.pus.iter().map(|&p| inv.os_of(p)).collect())
            .collect();
        assert_eq!(cores, vec![vec![0, 4], vec![2, 6], vec![1, 5], vec![3, 7]]);
        assert_eq!(inv.smt_rank(inv.pu_of(6).unwrap()), 1);
        assert_eq!(inv.smt_rank(inv.pu_of(2).unwrap()), 0);
        assert_eq!(
            inv.intersecting(ObjectType::Core, &[2, 7, 99]).unwrap(),
            vec![1, 3]
        );
        assert_eq!(inv.count(ObjectType::Package).unwrap(), 2);
        let e = inv.count(ObjectType::L3Cache).unwrap_err();
        assert_eq!(
            (e.kind, e.reason.as_str()),
            (ErrorKind::Unknown, "no caches")
        );
        assert_eq!(inv.cpus_text(), "0-7");
    }
}
