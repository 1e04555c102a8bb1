//! The measured sharing of each cache level against the OS's `shared_cpu_list`.
//!
//! A level whose `shared_by` was measured (by the shared-cache test, or recorded by an
//! older description) is set beside the OS's caches of the same level: every instance the
//! OS splits and every OS instance the measurement splits is a difference, with the pairs
//! whose walks show it. A level whose `shared_by` is the OS's (the walks did not decide)
//! or that was not tested is not compared.

use std::collections::{BTreeMap, BTreeSet};

use topoprobe_model::{
    CacheLevel, ContextId, Origin, OsDifference, OsView, PairVerdict, StructureLevel, Topology,
};

use super::sets::{cut_list, cuts, pair_across};

/// The differences between the measured sharing of every cache level of `topo` and the
/// OS's, on the CPUs of `common` (empty without a cache section).
pub(super) fn differences(
    topo: &Topology,
    os: &OsView,
    common: &BTreeSet<u32>,
) -> Vec<OsDifference> {
    let Some(section) = topo.caches() else {
        return Vec::new();
    };
    section
        .levels
        .iter()
        .filter_map(|l| level_difference(topo, os, common, l))
        .collect()
}

/// Whether `level`'s `shared_by` is a measurement.
fn measured(level: &CacheLevel) -> bool {
    !level.shared_by.is_empty()
        && level
            .sharing
            .as_ref()
            .is_none_or(|s| s.source == Some(Origin::Measured))
}

/// `cpu → instance` of a partition, restricted to `common`; CPUs of `common` in no
/// instance get one of their own.
fn labels(sets: &[Vec<u32>], common: &BTreeSet<u32>) -> BTreeMap<u32, usize> {
    let mut out = BTreeMap::new();
    for (i, s) in sets.iter().enumerate() {
        for c in s.iter().filter(|c| common.contains(c)) {
            out.entry(*c).or_insert(i);
        }
    }
    let mut next = sets.len();
    for c in common {
        out.entry(*c).or_insert_with(|| {
            next += 1;
            next
        });
    }
    out
}

fn level_difference(
    topo: &Topology,
    os: &OsView,
    common: &BTreeSet<u32>,
    level: &CacheLevel,
) -> Option<OsDifference> {
    if !measured(level) {
        return None;
    }
    let os_sets: Vec<Vec<u32>> = os
        .caches
        .iter()
        .filter(|c| u32::from(c.level) == level.level)
        .filter(|c| level.kind.map_or(c.kind.holds_data(), |k| c.kind == k))
        .map(|c| c.cpus.clone())
        .collect();
    if os_sets.is_empty() {
        return None;
    }
    let os_id = |c: &ContextId| topo.contexts().get(c.0).map(|h| h.os_id);
    let mine: Vec<Vec<u32>> = level
        .shared_by
        .iter()
        .map(|i| i.iter().filter_map(os_id).collect())
        .collect();
    let mine = labels(&mine, common);
    let theirs = labels(&os_sets, common);
    let joined = cuts(&mine, &theirs);
    let divided = cuts(&theirs, &mine);
    if joined.is_empty() && divided.is_empty() {
        return None;
    }
    let name = level.name();
    let mut parts = Vec::new();
    if !divided.is_empty() {
        parts.push(format!(
            "the OS lists one {name} for CPUs the walks find in separate instances: {}",
            cut_list(&divided)
        ));
    }
    if !joined.is_empty() {
        parts.push(format!(
            "the walks find one {name} for CPUs the OS lists in separate instances: {}",
            cut_list(&joined)
        ));
    }
    let evidence: Vec<String> = level
        .sharing
        .iter()
        .flat_map(|s| &s.pairs)
        .filter(|p| p.verdict != PairVerdict::Unclear)
        .filter_map(|p| {
            let (a, b) = (os_id(&p.a)?, os_id(&p.b)?);
            let os_shared = os_sets.iter().any(|s| s.contains(&a) && s.contains(&b));
            let shared = p.verdict == PairVerdict::Shared;
            (os_shared != shared).then(|| {
                format!(
                    "CPUs {a} and {b} walking together took {:.2}× the time alone, {:.0}% of \
                     the way to what a shared {name} costs ({})",
                    p.ratio,
                    p.fraction * 100.0,
                    p.verdict.as_str()
                )
            })
        })
        .collect();
    if !evidence.is_empty() {
        parts.push(evidence.join("; "));
    }
    let (a, b) = pair_across(&divided)
        .or_else(|| pair_across(&joined))
        .map_or_else(
            || ("A".to_string(), "B".to_string()),
            |(a, b)| (a.to_string(), b.to_string()),
        );
    Some(OsDifference {
        level: StructureLevel::Cache,
        message: parts.join("; "),
        rerun: format!(
            "re-run `topoprobe cache --shared` (it walks CPUs {a} and {b} together again); \
             in a virtual machine the OS lists the sharing the hypervisor announces while \
             the host may run the vCPUs on cores of different dies, and move them: \
             `topoprobe latency {a} {b}` before and after tells (pin the vCPUs on the host \
             to compare); if the measurement holds, place threads by the measured sharing"
        ),
    })
}
