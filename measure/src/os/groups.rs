//! Packages and cores decided by the kernel's documented rule (`Documentation/ABI/stable/
//! sysfs-devices-system-cpu`): a package is the PU set of `package_cpus` (`core_siblings`),
//! a core the PU set of `core_cpus` (`thread_siblings`). The ids (`physical_package_id`,
//! `core_id`) only name them: core ids repeat across the dies or nodes of a package, and
//! POWER and s390 write −1 as package id. The ids are used where a CPU has no mask.
//!
//! One exception, as hwloc makes it: on AMD compute-unit parts (Bulldozer family, where
//! older kernels list both cores of a unit in `thread_siblings`), siblings with different
//! core ids that do not share an L1 data cache are separate cores. Hardware threads of one
//! core always share it.
//!
//! Every group gets a unique id within its scope (the machine for packages, the package,
//! die and cluster for cores): the id its CPUs give when no other group of the scope has
//! it, else the smallest free number. Each disagreement and renumbering is a note.

use std::collections::{BTreeMap, BTreeSet};

use topoprobe_model::{format_cpu_list, OsCpu};

use super::files::Notes;

/// What sysfs says of one online CPU's place, before the packages and cores are decided.
#[derive(Debug, Clone, Default)]
pub(super) struct Raw {
    /// `physical_package_id`, when readable (may be −1).
    pub(super) package_id: Option<i64>,
    /// `core_id`, when readable.
    pub(super) core_id: Option<i64>,
    /// `core_cpus` or `thread_siblings`, when readable.
    pub(super) core_mask: Option<Vec<u32>>,
    /// `package_cpus` or `core_siblings`, when readable.
    pub(super) package_mask: Option<Vec<u32>>,
}

/// What else decides cores: the CPUs sharing each CPU's L1 data cache, and whether the
/// machine is an AMD compute-unit part (`/proc/cpuinfo`: AuthenticAMD, family 21 or 22).
#[derive(Debug, Default)]
pub(super) struct CoreEvidence {
    /// The CPUs sharing the L1 data cache of each CPU (from `shared_cpu_map`).
    pub(super) l1d: BTreeMap<u32, Vec<u32>>,
    /// Whether `/proc/cpuinfo` names an AMD family 15h or 16h CPU.
    pub(super) amd_compute_units: bool,
}

/// Splits `cpus` (ascending) into groups by the masks: each CPU not yet placed starts a
/// group of the CPUs of its mask that are in `cpus` and not yet placed; CPUs without a
/// mask are grouped by `id` (alone when they have none). Returns the groups ascending by
/// first CPU, and the CPUs whose own mask disagrees with the group they were put in.
fn partition(
    cpus: &[u32],
    mask: &dyn Fn(u32) -> Option<Vec<u32>>,
    id: &dyn Fn(u32) -> Option<i64>,
) -> (Vec<Vec<u32>>, Vec<u32>) {
    let within: BTreeSet<u32> = cpus.iter().copied().collect();
    let mut placed: BTreeSet<u32> = BTreeSet::new();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    let mut by_id: BTreeMap<i64, usize> = BTreeMap::new();
    for &c in cpus {
        if placed.contains(&c) {
            continue;
        }
        match mask(c) {
            Some(m) if m.contains(&c) => {
                let g: Vec<u32> = m
                    .into_iter()
                    .filter(|x| within.contains(x) && !placed.contains(x))
                    .collect();
                placed.extend(g.iter().copied());
                groups.push(g);
            }
            _ => {
                placed.insert(c);
                match id(c) {
                    Some(i) => match by_id.get(&i) {
                        Some(&g) => groups[g].push(c),
                        None => {
                            by_id.insert(i, groups.len());
                            groups.push(vec![c]);
                        }
                    },
                    None => groups.push(vec![c]),
                }
            }
        }
    }
    let mut disagree = Vec::new();
    for g in &groups {
        for &c in g {
            if let Some(m) = mask(c) {
                let own: Vec<u32> = m.into_iter().filter(|x| within.contains(x)).collect();
                if own != *g {
                    disagree.push(c);
                }
            }
        }
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort();
    disagree.sort_unstable();
    (groups, disagree)
}

/// Unique ids for `groups` of one scope: a group keeps the id its CPUs give (the first
/// CPU's) when it is valid and no earlier group has it; the others get the smallest free
/// numbers. Returns the ids and the groups renumbered.
fn name(groups: &[Vec<u32>], id: &dyn Fn(u32) -> Option<i64>) -> (Vec<i64>, Vec<usize>) {
    let wanted: Vec<Option<i64>> = groups
        .iter()
        .map(|g| g.first().and_then(|&c| id(c)).filter(|&v| v >= 0))
        .collect();
    let mut used: BTreeSet<i64> = BTreeSet::new();
    let mut ids: Vec<Option<i64>> = vec![None; groups.len()];
    for (i, w) in wanted.iter().enumerate() {
        if let Some(v) = w {
            if used.insert(*v) {
                ids[i] = Some(*v);
            }
        }
    }
    let mut next = 0i64;
    let mut renamed = Vec::new();
    let out = ids
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.unwrap_or_else(|| {
                while used.contains(&next) {
                    next += 1;
                }
                used.insert(next);
                renamed.push(i);
                next
            })
        })
        .collect();
    (out, renamed)
}

/// `cpus` of one core as the masks put them, split by core id where they are the cores
/// of an AMD compute unit rather than hardware threads of one core.
fn split_compute_unit(
    core: Vec<u32>,
    raw: &BTreeMap<u32, Raw>,
    ev: &CoreEvidence,
    notes: &mut Vec<String>,
) -> Vec<Vec<u32>> {
    let ids: BTreeSet<Option<i64>> = core
        .iter()
        .map(|c| raw.get(c).and_then(|r| r.core_id))
        .collect();
    if core.len() < 2 || ids.len() < 2 || ids.contains(&None) {
        return vec![core];
    }
    // Hardware threads share their core's L1 data cache; cores do not.
    let separate_l1d = core.iter().all(|c| {
        ev.l1d
            .get(c)
            .is_some_and(|l| core.iter().all(|o| o == c || !l.contains(o)))
    });
    if !(separate_l1d || ev.amd_compute_units) {
        notes.push(format!(
            "CPUs {}: thread_siblings names them one core though their core_id differ; \
             thread_siblings kept (no L1 data cache tells them apart)",
            format_cpu_list(&core)
        ));
        return vec![core];
    }
    let mut by: BTreeMap<Option<i64>, Vec<u32>> = BTreeMap::new();
    for &c in &core {
        by.entry(raw.get(&c).and_then(|r| r.core_id))
            .or_default()
            .push(c);
    }
    let why = if separate_l1d {
        "each has its own L1 data cache"
    } else {
        "an AMD compute unit"
    };
    notes.push(format!(
        "CPUs {}: thread_siblings names them one core, but their core_id differ and {why}; \
         one core per core_id kept",
        format_cpu_list(&core)
    ));
    by.into_values().collect()
}

/// Sets `package`, `core`, `thread_siblings` and `core_siblings` of every CPU of `cpus`
/// (ascending) from `raw` by the rules of this module.
pub(super) fn decide(
    cpus: &mut [OsCpu],
    raw: &BTreeMap<u32, Raw>,
    ev: &CoreEvidence,
    notes: &mut Notes,
) {
    let ids: Vec<u32> = cpus.iter().map(|c| c.id).collect();
    let mut said: Vec<String> = Vec::new();
    let get = |c: u32| raw.get(&c);
    // Packages.
    let (packages, disagree) = partition(
        &ids,
        &|c| get(c).and_then(|r| r.package_mask.clone()),
        &|c| get(c).and_then(|r| r.package_id),
    );
    if !disagree.is_empty() {
        said.push(format!(
            "package_cpus of CPUs {} disagree with the package of the CPUs they list; \
             the first CPU's list kept",
            format_cpu_list(&disagree)
        ));
    }
    let (package_ids, renamed) = name(&packages, &|c| get(c).and_then(|r| r.package_id));
    note_renamed(
        &packages,
        &renamed,
        &package_ids,
        "package",
        "physical_package_id",
        raw,
        &mut said,
        |r| r.package_id,
    );
    let mut package_of: BTreeMap<u32, (i64, Vec<u32>)> = BTreeMap::new();
    for (g, &pid) in packages.iter().zip(&package_ids) {
        for &c in g {
            package_of.insert(c, (pid, g.clone()));
        }
    }
    for c in cpus.iter_mut() {
        if let Some((pid, g)) = package_of.get(&c.id) {
            c.package = *pid;
            c.core_siblings.clone_from(g);
        }
    }
    // Cores, within each (package, die, cluster).
    let mut scopes: BTreeMap<(i64, Option<i64>, Option<i64>), Vec<u32>> = BTreeMap::new();
    for c in cpus.iter() {
        scopes
            .entry((c.package, c.die, c.cluster))
            .or_default()
            .push(c.id);
    }
    let mut core_of: BTreeMap<u32, (i64, Vec<u32>)> = BTreeMap::new();
    for members in scopes.values() {
        let (groups, disagree) = partition(
            members,
            &|c| get(c).and_then(|r| r.core_mask.clone()),
            &|c| get(c).and_then(|r| r.core_id),
        );
        if !disagree.is_empty() {
            said.push(format!(
                "core_cpus of CPUs {} disagree with the core of the CPUs they list; \
                 the first CPU's list kept",
                format_cpu_list(&disagree)
            ));
        }
        let groups: Vec<Vec<u32>> = groups
            .into_iter()
            .flat_map(|g| split_compute_unit(g, raw, ev, &mut said))
            .collect();
        let (core_ids, renamed) = name(&groups, &|c| get(c).and_then(|r| r.core_id));
        note_renamed(
            &groups,
            &renamed,
            &core_ids,
            "core",
            "core_id",
            raw,
            &mut said,
            |r| r.core_id,
        );
        for (g, &cid) in groups.iter().zip(&core_ids) {
            for &c in g {
                core_of.insert(c, (cid, g.clone()));
            }
        }
    }
    for c in cpus.iter_mut() {
        if let Some((cid, g)) = core_of.get(&c.id) {
            c.core = *cid;
            c.thread_siblings.clone_from(g);
        }
    }
    for s in said {
        notes.add(s);
    }
}

/// Notes the groups that did not keep the id their CPUs give.
#[allow(clippy::too_many_arguments)]
fn note_renamed(
    groups: &[Vec<u32>],
    renamed: &[usize],
    ids: &[i64],
    what: &str,
    file: &str,
    raw: &BTreeMap<u32, Raw>,
    said: &mut Vec<String>,
    id: fn(&Raw) -> Option<i64>,
) {
    if renamed.is_empty() {
        return;
    }
    let mut missing = Vec::new();
    let mut invalid = Vec::new();
    let mut repeated = Vec::new();
    for &i in renamed {
        let g = &groups[i];
        let first = g.first().copied().unwrap_or(0);
        match raw.get(&first).and_then(id) {
            None => missing.extend(g.iter().copied()),
            Some(v) if v < 0 => invalid.push(format!("{} ({v})", format_cpu_list(g))),
            Some(v) => repeated.push(format!("{} ({v}, now {})", format_cpu_list(g), ids[i])),
        }
    }
    if !missing.is_empty() {
        missing.sort_unstable();
        said.push(format!(
            "CPUs {}: no {file}; each {what} numbered by its place in the sibling lists",
            format_cpu_list(&missing)
        ));
    }
    if !invalid.is_empty() {
        said.push(format!(
            "{file} gives no {what} number for CPUs {}; the {what}s of the sibling lists \
             numbered in order",
            invalid.join(", ")
        ));
    }
    if !repeated.is_empty() {
        said.push(format!(
            "{file} repeats across {what}s that the sibling lists tell apart; \
             renumbered: CPUs {}",
            repeated.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_win_over_repeated_ids() {
        let m = |c: u32| Some(vec![c]);
        let id = |c: u32| Some(i64::from(c % 2));
        let (g, d) = partition(&[0, 1, 2, 3], &m, &id);
        assert_eq!(g, vec![vec![0], vec![1], vec![2], vec![3]]);
        assert!(d.is_empty());
        let (ids, renamed) = name(&g, &id);
        assert_eq!(ids, vec![0, 1, 2, 3]);
        assert_eq!(renamed, vec![2, 3]);
    }

    #[test]
    fn ids_group_cpus_without_masks() {
        let (g, _) = partition(&[0, 1, 2, 3], &|_| None, &|c| (c < 3).then_some(7));
        assert_eq!(g, vec![vec![0, 1, 2], vec![3]]);
        let (ids, _) = name(&g, &|c| (c < 3).then_some(7));
        assert_eq!(ids, vec![7, 0]);
    }
}
