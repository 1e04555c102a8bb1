//! Comparison of an inferred topology with the operating system's view of the machine.
//!
//! The MCTOP paper (§3.6) uses the OS topology as a sanity check: when the two agree, the
//! inferred topology is right; when they differ, it says which experiment to re-run to find
//! out which view is right. [`compare_with_os`] does this per structural level:
//!
//! - **core**: inferred cores against the OS's SMT siblings (`thread_siblings`);
//! - **group**: inferred multi-core groups against the OS's clusters, dies and shared caches
//!   (only meaningful differences: OS groups that latency found no trace of, and latency
//!   groups that match nothing the OS describes);
//! - **socket**: inferred sockets against the OS's packages;
//! - **node**: inferred memory nodes (when the topology has any) against the OS's NUMA nodes,
//!   and measured contention between contexts of different OS nodes (when the topology has
//!   a contention section);
//! - **cache**: the measured sharing of each cache level (when the topology has a cache
//!   section with `shared_by` measured) against the OS's shared caches.
//!
//! Only CPUs present in both are compared (a topology may cover a subset of the machine);
//! CPUs of the topology that the OS does not list as online are reported once.
//!
//! ```
//! use topoprobe_infer::compare::compare_with_os;
//! use topoprobe_infer::{infer, sim::platforms};
//! use topoprobe_model::OsView;
//!
//! let spec = platforms::cmt_modules();
//! let topo = infer(&spec.matrix(), &spec.infer_options()).unwrap();
//! // An OS view without any CPU: nothing to compare, one difference saying so.
//! let diffs = compare_with_os(&topo, &OsView::default());
//! assert_eq!(diffs.len(), 1);
//! ```

mod caches;
mod contention;
mod sets;

use std::collections::{BTreeMap, BTreeSet};

use topoprobe_model::{format_cpu_list, OsDifference, OsView, StructureLevel, Topology};

use sets::{blocks, cut_list, cuts, pair_across, restrict, sets, CpuSet};

/// Repetitions to suggest when a re-run with more repetitions is advised.
const MORE_REPS: u32 = 100;

/// Compares `topo` with the operating system's view `os`, level by level, and returns the
/// differences, each with what to re-run to find out which view is right (empty when they
/// agree on every CPU present in both).
#[must_use]
pub fn compare_with_os(topo: &Topology, os: &OsView) -> Vec<OsDifference> {
    let mut out = Vec::new();
    let online: BTreeSet<u32> = os.cpus.iter().map(|c| c.id).collect();
    let mine: BTreeSet<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    let absent: Vec<u32> = mine.difference(&online).copied().collect();
    if !absent.is_empty() {
        out.push(OsDifference {
            level: StructureLevel::Core,
            message: format!(
                "CPUs {} of the topology are not online in the OS view; the description may \
                 be stale or come from another machine",
                format_cpu_list(&absent)
            ),
            rerun: "re-run `topoprobe infer` on this machine (with `--cpus LIST` to measure \
                    part of it)"
                .into(),
        });
    }
    let common: BTreeSet<u32> = mine.intersection(&online).copied().collect();
    if common.is_empty() {
        return out;
    }
    let mut measured = caches::differences(topo, os, &common);
    measured.extend(contention::differences(topo, os, &common));
    let c = Common::new(topo, os, common);
    c.cores(&mut out);
    c.groups(&mut out);
    c.sockets(&mut out);
    c.nodes(&mut out);
    out.extend(measured);
    out
}

/// The differences between the measured sections of `topo` and the OS's view: each cache
/// level's measured sharing against the OS's shared caches, and contention between
/// contexts of different OS NUMA nodes (part of [`compare_with_os`]; empty without those
/// sections).
#[must_use]
pub fn section_differences(topo: &Topology, os: &OsView) -> Vec<OsDifference> {
    let online: BTreeSet<u32> = os.cpus.iter().map(|c| c.id).collect();
    let common: BTreeSet<u32> = topo
        .contexts()
        .iter()
        .map(|c| c.os_id)
        .filter(|c| online.contains(c))
        .collect();
    let mut out = caches::differences(topo, os, &common);
    out.extend(contention::differences(topo, os, &common));
    out
}

/// Compares `topo` with `os` ([`compare_with_os`]) and records the differences in the
/// topology's validation record, replacing earlier ones; returns how many there are.
pub fn record_os_differences(topo: &mut Topology, os: &OsView) -> usize {
    let diffs = compare_with_os(topo, os);
    let n = diffs.len();
    topo.set_os_differences(diffs);
    n
}

/// The two views restricted to the CPUs they have in common.
struct Common<'a> {
    topo: &'a Topology,
    os: &'a OsView,
    cpus: BTreeSet<u32>,
    /// Inferred core of each common CPU.
    core: BTreeMap<u32, usize>,
    /// Inferred socket of each common CPU.
    socket: BTreeMap<u32, usize>,
    /// OS core of each common CPU: its SMT siblings among the common CPUs.
    os_core: BTreeMap<u32, CpuSet>,
    /// OS package of each common CPU.
    package: BTreeMap<u32, i64>,
}

impl<'a> Common<'a> {
    fn new(topo: &'a Topology, os: &'a OsView, cpus: BTreeSet<u32>) -> Self {
        let mut core = BTreeMap::new();
        let mut socket = BTreeMap::new();
        for ctx in topo.contexts() {
            if cpus.contains(&ctx.os_id) {
                core.insert(ctx.os_id, ctx.core.0);
                socket.insert(ctx.os_id, ctx.socket.0);
            }
        }
        let mut os_core = BTreeMap::new();
        let mut package = BTreeMap::new();
        for c in os.cpus.iter().filter(|c| cpus.contains(&c.id)) {
            let mut siblings: CpuSet = c
                .thread_siblings
                .iter()
                .copied()
                .filter(|s| cpus.contains(s))
                .collect();
            if let Err(i) = siblings.binary_search(&c.id) {
                siblings.insert(i, c.id);
            }
            os_core.insert(c.id, siblings);
            package.insert(c.id, c.package);
        }
        Self {
            topo,
            os,
            cpus,
            core,
            socket,
            os_core,
            package,
        }
    }

    /// Number of distinct OS cores among `cpus`.
    fn os_cores_in(&self, cpus: &[u32]) -> usize {
        cpus.iter()
            .filter_map(|c| self.os_core.get(c))
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Number of distinct inferred cores among `cpus`.
    fn cores_in(&self, cpus: &[u32]) -> usize {
        cpus.iter()
            .filter_map(|c| self.core.get(c))
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Two CPUs of `block` in different cores (OS cores, else inferred cores), for
    /// `topoprobe latency A B`.
    fn pair_inside(&self, block: &[u32]) -> Option<(u32, u32)> {
        let a = *block.first()?;
        let b = block
            .iter()
            .copied()
            .find(|b| self.os_core.get(b) != self.os_core.get(&a))
            .or_else(|| {
                block
                    .iter()
                    .copied()
                    .find(|b| self.core.get(b) != self.core.get(&a))
            })?;
        Some((a, b))
    }

    /// A CPU of the same OS package as `block`'s first CPU but outside `block`.
    fn outside(&self, block: &[u32]) -> Option<u32> {
        let a = block.first()?;
        let p = self.package.get(a)?;
        self.package
            .iter()
            .find(|(c, q)| *q == p && block.binary_search(c).is_err())
            .map(|(c, _)| *c)
    }

    /// `compare `topoprobe latency A B` (inside the group) with `topoprobe latency A C`
    /// (across)`, with CPUs of `block` when it has them.
    fn inside_vs_across(&self, block: Option<&CpuSet>) -> String {
        let inside = block.and_then(|b| self.pair_inside(b));
        let across = block.and_then(|b| self.outside(b));
        match (inside, across) {
            (Some((a, b)), Some(c)) => format!(
                "compare `topoprobe latency {a} {b}` (inside the group) with `topoprobe \
                 latency {a} {c}` (across)"
            ),
            (Some((a, b)), None) => {
                format!("compare `topoprobe latency {a} {b}` (inside the group) with a pair across")
            }
            _ => "compare `topoprobe latency A B` for a pair inside the group with a pair \
                  across"
                .into(),
        }
    }

    fn cores(&self, out: &mut Vec<OsDifference>) {
        let merged = cuts(&self.core, &self.os_core);
        let split = cuts(&self.os_core, &self.core);
        let rerun = |pair: Option<(u32, u32)>| {
            let (a, b) = pair.map_or(("A".into(), "B".into()), |(a, b)| {
                (a.to_string(), b.to_string())
            });
            format!(
                "measure the pair with `topoprobe latency {a} {b} --smt` (SMT siblings share a \
                 pipeline: a low latency and a slowdown when both compute); if it stays \
                 unclear, re-run `topoprobe infer --reps {MORE_REPS}` with more repetitions, \
                 or pass `--smt yes|no` when you know the answer"
            )
        };
        if !merged.is_empty() {
            out.push(OsDifference {
                level: StructureLevel::Core,
                message: format!(
                    "latency puts {} set(s) of CPUs in one core that the OS (thread_siblings) \
                     places in different cores: {}",
                    merged.len(),
                    cut_list(&merged)
                ),
                rerun: rerun(pair_across(&merged)),
            });
        }
        if !split.is_empty() {
            out.push(OsDifference {
                level: StructureLevel::Core,
                message: format!(
                    "the OS (thread_siblings) puts {} set(s) of CPUs in one core that latency \
                     places in different cores: {}",
                    split.len(),
                    cut_list(&split)
                ),
                rerun: rerun(pair_across(&split)),
            });
        }
    }

    fn sockets(&self, out: &mut Vec<OsDifference>) {
        let joined = cuts(&self.socket, &self.package);
        let divided = cuts(&self.package, &self.socket);
        if joined.is_empty() && divided.is_empty() {
            return;
        }
        let n_sockets = blocks(&self.socket).len();
        let n_packages = blocks(&self.package).len();
        let mut parts = vec![format!(
            "latency finds {n_sockets} socket(s), the OS {n_packages} package(s) for CPUs {}",
            format_cpu_list(&self.cpus.iter().copied().collect::<Vec<_>>())
        )];
        if !divided.is_empty() {
            parts.push(format!(
                "latency divides OS packages: {}",
                cut_list(&divided)
            ));
        }
        if !joined.is_empty() {
            parts.push(format!(
                "latency joins OS packages into one socket: {}",
                cut_list(&joined)
            ));
        }
        let pair = pair_across(&divided)
            .or_else(|| pair_across(&joined))
            .map_or_else(|| "A B".to_string(), |(a, b)| format!("{a} {b}"));
        out.push(OsDifference {
            level: StructureLevel::Socket,
            message: parts.join("; "),
            rerun: format!(
                "if the OS is right, pass `--sockets {n_packages}` to `topoprobe infer`; \
                 otherwise re-run `topoprobe infer --reps {MORE_REPS}` with more repetitions \
                 and measure a pair across with `topoprobe latency {pair}` (the far die of a \
                 chiplet CPU can look like another socket)"
            ),
        });
    }

    /// The OS's groupings strictly between core and package, by kind (kinds with the same
    /// sets are merged: `cluster / L2 cache`), and whether the OS describes any grouping.
    fn os_groupings(&self) -> (Vec<(String, Vec<CpuSet>)>, Vec<CpuSet>) {
        let packages = restrict(blocks(&self.package), &self.cpus);
        let mut raw: Vec<(String, Vec<CpuSet>)> = vec![
            (
                "cluster".into(),
                restrict(self.os.clusters().into_values(), &self.cpus),
            ),
            (
                "die".into(),
                restrict(self.os.dies().into_values(), &self.cpus),
            ),
        ];
        let levels: BTreeSet<u8> = self
            .os
            .caches
            .iter()
            .filter(|c| c.level >= 2)
            .map(|c| c.level)
            .collect();
        for l in levels {
            raw.push((
                format!("L{l} cache"),
                restrict(self.os.cache_groups(l), &self.cpus),
            ));
        }
        let all: Vec<CpuSet> = raw.iter().flat_map(|(_, s)| s.iter().cloned()).collect();
        let mut kinds: Vec<(String, Vec<CpuSet>)> = Vec::new();
        for (name, list) in raw {
            let between: Vec<CpuSet> = list
                .into_iter()
                .filter(|s| self.os_cores_in(s) > 1 && !packages.contains(s))
                .collect();
            if between.is_empty() {
                continue;
            }
            match kinds.iter_mut().find(|(_, l)| *l == between) {
                Some((n, _)) => {
                    n.push_str(" / ");
                    n.push_str(&name);
                }
                None => kinds.push((name, between)),
            }
        }
        (kinds, all)
    }

    fn groups(&self, out: &mut Vec<OsDifference>) {
        let sockets = restrict(blocks(&self.socket), &self.cpus);
        let inferred: Vec<CpuSet> = restrict(
            self.topo.groups().iter().map(|g| {
                g.contexts
                    .iter()
                    .filter_map(|c| self.topo.contexts().get(c.0).map(|x| x.os_id))
                    .collect::<CpuSet>()
            }),
            &self.cpus,
        )
        .into_iter()
        .filter(|s| self.cores_in(s) > 1 && !sockets.contains(s))
        .collect();
        let (kinds, all_os) = self.os_groupings();
        for (name, list) in &kinds {
            let missing: Vec<CpuSet> = list
                .iter()
                .filter(|s| !inferred.contains(s) && !sockets.contains(s))
                .cloned()
                .collect();
            if missing.is_empty() {
                continue;
            }
            let found = list.len() - missing.len();
            let message = if found == 0 {
                format!(
                    "the OS shows {} {name} group(s) of several cores that latency found no \
                     trace of: {}",
                    list.len(),
                    sets(&missing)
                )
            } else {
                format!(
                    "latency finds only {found} of the OS's {} {name} groups; not found: {}",
                    list.len(),
                    sets(&missing)
                )
            };
            out.push(OsDifference {
                level: StructureLevel::Group,
                message,
                rerun: format!(
                    "re-run `topoprobe infer --reps {MORE_REPS}` with more repetitions, and {}; \
                     cores that share a cache without a latency gap are common and do not \
                     change placement by latency",
                    self.inside_vs_across(missing.first())
                ),
            });
        }
        if all_os.is_empty() {
            // The OS describes no grouping at all (no clusters, dies or shared caches):
            // nothing to hold latency groups against.
            return;
        }
        let mut known: BTreeSet<CpuSet> = all_os.into_iter().collect();
        known.extend(restrict(blocks(&self.package), &self.cpus));
        known.extend(restrict(self.os.node_cpus().into_values(), &self.cpus));
        known.extend(restrict(
            self.os.cpu_kinds().into_iter().map(|k| k.cpus),
            &self.cpus,
        ));
        let unknown: Vec<CpuSet> = inferred
            .iter()
            .filter(|s| !known.contains(*s))
            .cloned()
            .collect();
        if unknown.is_empty() {
            return;
        }
        out.push(OsDifference {
            level: StructureLevel::Group,
            message: format!(
                "latency finds {} group(s) that match no OS cluster, die, shared cache, NUMA \
                 node or CPU kind: {}",
                unknown.len(),
                sets(&unknown)
            ),
            rerun: format!(
                "re-run `topoprobe infer --reps {MORE_REPS}` with more repetitions; if the \
                 group stays, it is structure the OS does not describe (a ring stop, a mesh \
                 region, a pair of chiplets): {}",
                self.inside_vs_across(unknown.first())
            ),
        });
    }

    fn nodes(&self, out: &mut Vec<OsDifference>) {
        if self.topo.nodes().is_empty() || self.os.nodes.is_none() {
            return;
        }
        let mut inferred = BTreeMap::new();
        let mut os = BTreeMap::new();
        for ctx in self.topo.contexts() {
            if !self.cpus.contains(&ctx.os_id) {
                continue;
            }
            let mine = self.topo.local_node(ctx.id);
            let theirs = self.os.cpu(ctx.os_id).and_then(|c| c.node);
            if let (Some(m), Some(t)) = (mine, theirs) {
                inferred.insert(ctx.os_id, m.0);
                os.insert(ctx.os_id, t);
            }
        }
        let joined = cuts(&inferred, &os);
        let divided = cuts(&os, &inferred);
        if joined.is_empty() && divided.is_empty() {
            return;
        }
        let n_os = blocks(&os).len();
        let mut parts = vec![format!(
            "the topology has {} memory node(s), the OS {n_os} NUMA node(s) for these CPUs",
            blocks(&inferred).len()
        )];
        if !joined.is_empty() {
            parts.push(format!(
                "one inferred node spans several OS nodes: {}",
                cut_list(&joined)
            ));
        }
        if !divided.is_empty() {
            parts.push(format!(
                "one OS node spans several inferred nodes: {}",
                cut_list(&divided)
            ));
        }
        let example: Vec<CpuSet> = blocks(&os);
        out.push(OsDifference {
            level: StructureLevel::Node,
            message: format!("{} (OS nodes: {})", parts.join("; "), sets(&example)),
            rerun: format!(
                "if the OS's NUMA nodes are the sockets, pass `--sockets {n_os}` to `topoprobe infer`; \
                 otherwise the local node of each socket is for a memory-latency measurement to settle"
            ),
        });
    }
}
