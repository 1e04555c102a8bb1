//! Which groups the measurements can tell from noise.
//!
//! A group is kept when it stands out from the rest of its parent:
//!
//! - its *contrast* — the log ratio of the latency between it and the rest of its parent
//!   to the latency inside it, negative for a group slower inside (E-core clusters) — must
//!   exceed the noise: [`CONTRAST_NOISE`] times the noise of a pair (for a directed matrix
//!   the disagreement of its two directions, for others the difference of each context's
//!   profile from its nearest twin), [`CONTRAST_TICKS`] timer steps, and
//!   [`MIN_CONTRAST`];
//! - it must not be only "the rest" beside one or two far cores: when the other parts of
//!   its parent are at most [`FAR_CORES`] cores no tighter among themselves than the group
//!   is, those cores are far (a core at the end of a ring, a weak pair), not a boundary;
//! - a profile group that the latency does not set apart from the rest of its parent must
//!   not be only "the rest" beside a few *odd* cores: fewer cores than the group, each set
//!   apart by its own view of the machine (a chiplet server's slow blocks, where a core
//!   reads one other CCD as slowly as the other socket), so that they share no profile
//!   among themselves;
//! - a pair of contexts with identical profiles and no latency gap is a core or nothing
//!   (two cores on one mesh stop).
//!
//! A set the operating system lists as sharing a cache is kept whatever its contrast: the
//! result says it comes from the OS.

use crate::roles::{Kind, Roles};
use crate::table::Table;
use crate::tree::{ComponentTree, DropReason, Dropped, OsSet};
use topoprobe_model::median_in_place;

/// A group's contrast must exceed this many times the noise of a pair.
pub(crate) const CONTRAST_NOISE: f64 = 3.0;
/// A group's contrast must exceed this many timer steps (relative to its inside).
pub(crate) const CONTRAST_TICKS: f64 = 2.5;
/// Smallest contrast of a group (log ratio, 1%).
pub(crate) const MIN_CONTRAST: f64 = 0.01;
/// Most cores the rest of a parent may have for a group beside them to be only the rest.
pub(crate) const FAR_CORES: usize = 2;

/// The noise a group's contrast is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Noise {
    /// Relative noise of one pair's latency (log), when known.
    pub(crate) pair: Option<f64>,
    /// The timer's step, when the latencies come in steps.
    pub(crate) tick: Option<f64>,
}

impl Noise {
    /// The contrast a group whose inside latency is `inside` needs (log ratio).
    pub(crate) fn floor(&self, inside: f64) -> f64 {
        let noise = self.pair.map_or(0.0, |s| CONTRAST_NOISE * s);
        let ticks = self
            .tick
            .filter(|_| inside > 0.0)
            .map_or(0.0, |q| (1.0 + CONTRAST_TICKS * q / inside).ln());
        noise.max(ticks).max(MIN_CONTRAST)
    }
}

/// The contrast of a group with the rest of its parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Contrast {
    /// Median latency between different parts of the group.
    pub(crate) inside: f64,
    /// Median latency between the group and the rest of its parent.
    pub(crate) outside: f64,
}

impl Contrast {
    /// Log ratio of outside to inside (negative when the group is slower inside).
    pub(crate) fn log(&self) -> f64 {
        (self.outside / self.inside).ln()
    }
}

/// The parts of a node: its children and its leaf contexts.
fn parts(tree: &ComponentTree, node: usize) -> Vec<Vec<usize>> {
    let n = &tree.nodes[node];
    let mut p: Vec<Vec<usize>> = n
        .children
        .iter()
        .map(|&c| tree.nodes[c].members.clone())
        .collect();
    p.extend(n.leaves.iter().map(|&x| vec![x]));
    p
}

/// Median latency between different sets of `sets`.
fn between_sets(t: &Table, sets: &[Vec<usize>]) -> f64 {
    let mut v = Vec::new();
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            v.extend(t.between(&sets[i], &sets[j]));
        }
    }
    median_in_place(&mut v).unwrap_or(f64::NAN)
}

/// The contrast of a tree node with the rest of its parent (`None` for the root or when a
/// side has no measured pair).
pub(crate) fn contrast(t: &Table, tree: &ComponentTree, node: usize) -> Option<Contrast> {
    let p = tree.nodes[node].parent?;
    let mine = &tree.nodes[node].members;
    let rest: Vec<usize> = tree.nodes[p]
        .members
        .iter()
        .copied()
        .filter(|x| mine.binary_search(x).is_err())
        .collect();
    let inside = between_sets(t, &parts(tree, node));
    let outside = median_in_place(&mut t.between(mine, &rest)).unwrap_or(f64::NAN);
    (inside.is_finite() && outside.is_finite() && inside > 0.0)
        .then_some(Contrast { inside, outside })
}

/// The cores (as context sets) among a set of contexts, given the roles.
fn cores_of(tree: &ComponentTree, roles: &Roles, members: &[usize]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut covered = vec![false; tree.nodes[0].members.len()];
    for (id, k) in roles.kind.iter().enumerate() {
        if *k == Kind::Core {
            let m = &tree.nodes[id].members;
            if m.iter().all(|x| members.binary_search(x).is_ok()) {
                for &x in m {
                    covered[x] = true;
                }
                out.push(m.clone());
            }
        }
    }
    out.extend(members.iter().filter(|&&x| !covered[x]).map(|&x| vec![x]));
    out
}

/// The largest profile discrepancy between two of `cores` (contexts of different cores):
/// how far they are from sharing a profile.
fn odd_cores(distance: &crate::profiles::Discrepancy, cores: &[Vec<usize>]) -> f64 {
    let mut most = 0.0_f64;
    for (i, a) in cores.iter().enumerate() {
        for b in &cores[i + 1..] {
            for &x in a {
                for &y in b {
                    most = most.max(distance.get(x, y));
                }
            }
        }
    }
    most
}

/// The groups of the tree that the measurements do not support, with the reason.
///
/// `profile_distance` is the first profile round's discrepancy of every pair of contexts
/// (row-major), when the table was small enough to compare every pair.
pub(crate) fn weak_groups(
    t: &Table,
    tree: &ComponentTree,
    roles: &Roles,
    noise: &Noise,
    profile_distance: Option<&crate::profiles::Discrepancy>,
) -> Vec<Dropped> {
    let mut out = Vec::new();
    for (id, node) in tree.nodes.iter().enumerate() {
        if roles.kind[id] != Kind::Group {
            continue;
        }
        if id == 0 || node.socket || matches!(node.os, Some(OsSet::Cache(_)) | Some(OsSet::Core)) {
            continue;
        }
        let drop = |reason| Dropped {
            members: node.members.clone(),
            reason,
            strong: false,
        };
        // A pair of twins that is not a core.
        if node.latency.is_none()
            && node.profile.is_some_and(|p| p.children < 3)
            && node.members.len() == 2
        {
            out.push(drop(DropReason::ProfilePair));
            continue;
        }
        let Some(c) = contrast(t, tree, id) else {
            continue;
        };
        let floor = noise.floor(c.inside.min(c.outside));
        let log = c.log();
        // Outsiders see a profile group's members alike and its neighbours otherwise: that
        // difference is its contrast when the latency inside does not set it apart.
        let profile = node.profile.map_or(0.0, |p| p.outside);
        #[cfg(feature = "trace")]
        if std::env::var_os("TOPOPROBE_TRACE").is_some() {
            eprintln!(
                "  contrast of [{}] {:?}..: inside {:.2} outside {:.2} log {:.4} profile {:.4} floor {:.4} (noise {:?})",
                node.members.len(),
                &node.members[..node.members.len().min(4)],
                c.inside,
                c.outside,
                log,
                node.profile.map_or(0.0, |p| p.outside),
                floor,
                noise
            );
        }
        if log.abs().max(profile) < floor || (log < 0.0 && node.profile.is_none()) {
            out.push(drop(DropReason::WeakContrast));
            continue;
        }
        // Only the rest beside one or two far cores.
        if let Some(p) = node.parent {
            let rest: Vec<usize> = tree.nodes[p]
                .members
                .iter()
                .copied()
                .filter(|x| node.members.binary_search(x).is_err())
                .collect();
            let rest_cores = cores_of(tree, roles, &rest);
            let mine = cores_of(tree, roles, &node.members);
            if !rest.is_empty()
                && rest_cores.len() <= FAR_CORES
                && mine.len() > 2 * rest_cores.len()
            {
                let rest_inside = between_sets(t, &rest_cores);
                // One far core, or far cores no tighter among themselves than the group.
                if rest_inside.is_nan() || rest_inside >= c.inside * (-floor).exp() {
                    out.push(drop(DropReason::FarCores));
                    continue;
                }
            }
            if node.latency.is_none()
                && log.abs() < floor
                && rest_cores.len() >= 2
                && rest_cores.len() < mine.len()
                && profile_distance.is_some_and(|d| odd_cores(d, &rest_cores) >= 0.5 * profile)
            {
                out.push(drop(DropReason::OddCores));
            }
        }
    }
    out
}
