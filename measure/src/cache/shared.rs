//! Which contexts share a cache level (Servet Fig. 5), tested on representatives chosen
//! from the latency topology rather than on all pairs, and checked against the OS.
//!
//! From the first context outwards, one partner per latency scope (its core, each
//! enclosing group, its socket, the machine; [`scopes()`]) walks an array at the same time
//! as the first context; the widest scope that still shares is the level's sharing
//! domain, and its components are the instances. Where the OS's instance of the level cuts
//! a scope, a partner inside it and one outside are both walked, so that the OS's boundary
//! is tested rather than assumed.
//!
//! The test is sized from the level ([`mod@plan`]: arrays of two thirds of what one context
//! keeps, then other sizes when that one cannot tell), calibrated on the context itself
//! and decided three ways ([`decide`]: shared, private, unclear). A level whose arrays
//! exceed the memory budget is not walked ("unavailable"), and one whose walks do not
//! decide keeps the OS's sharing with a warning: a level's `shared_by` never silently
//! contradicts the OS, and a decided one that differs from the OS is reported among the
//! description's differences from the OS (`topoprobe_infer::compare`).

pub mod decide;
pub mod plan;
pub mod scopes;
mod walk;

use topoprobe_model::{
    CacheSection, CacheType, ContextId, OsView, PairVerdict, SharingOutcome, Topology,
};

pub use decide::{overruled, sharing_with, LevelSharing};
pub use plan::{plan, LevelSpec, SharingOptions, SharingPlan};
pub use scopes::{instances, scope_tests, scopes, Scope, ScopeTest};

use crate::cache::CacheError;

/// Finds which contexts share one level by walking on this machine ([`sharing_with`]).
///
/// # Errors
///
/// [`CacheError`] when a thread cannot be pinned or an array allocated.
pub fn sharing(
    topo: &Topology,
    spec: &LevelSpec,
    opts: &SharingOptions,
) -> Result<LevelSharing, CacheError> {
    let os = |c: &ContextId| topo.contexts().get(c.0).map(|h| h.os_id);
    sharing_with(topo, spec, opts, |ctxs, bytes| {
        let cpus: Vec<u32> = ctxs.iter().filter_map(os).collect();
        walk::walk_together(&cpus, bytes, opts.rounds)
    })
}

/// The OS's instances of the cache of `level` holding `kind` (any data-holding cache when
/// `kind` is `None`), as contexts of `topo`, each ascending; CPUs outside the topology
/// are left out.
#[must_use]
pub fn os_instances(
    topo: &Topology,
    os: &OsView,
    level: u32,
    kind: Option<CacheType>,
) -> Vec<Vec<ContextId>> {
    let mut out: Vec<Vec<ContextId>> = os
        .caches
        .iter()
        .filter(|c| u32::from(c.level) == level)
        .filter(|c| kind.map_or(c.kind.holds_data(), |k| c.kind == k))
        .map(|c| {
            let mut v: Vec<ContextId> = c
                .cpus
                .iter()
                .filter_map(|&cpu| topo.context_by_os_id(cpu))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .filter(|v| !v.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The data-holding levels of `section` as the test sees them, with their index in the
/// section: what one context keeps, the OS's size and instances, the level inside.
#[must_use]
pub fn level_specs(
    topo: &Topology,
    section: &CacheSection,
    os: Option<&OsView>,
) -> Vec<(usize, LevelSpec)> {
    let mut out = Vec::new();
    let mut inner: Option<u64> = None;
    for (i, l) in section.levels.iter().enumerate() {
        if l.kind.is_some_and(|k| !k.holds_data()) {
            continue;
        }
        let reach_bytes = l.measured_size_kib.map(|k| k * 1024);
        let os_bytes = l.os_size_kib.map(|k| k * 1024);
        out.push((
            i,
            LevelSpec {
                name: l.name(),
                reach_bytes,
                os_bytes,
                inner_bytes: inner,
                os_instances: os
                    .map(|v| os_instances(topo, v, l.level, l.kind))
                    .unwrap_or_default(),
            },
        ));
        inner = reach_bytes.or(os_bytes).or(inner);
    }
    out
}

/// Tests every data-holding level of `section` on this machine and records each level's
/// `shared_by` and `sharing`; returns each level's name and result, in the section's
/// order.
///
/// # Errors
///
/// [`CacheError`] when a thread cannot be pinned or an array allocated.
pub fn measure_section(
    topo: &Topology,
    os: Option<&OsView>,
    section: &mut CacheSection,
    opts: &SharingOptions,
) -> Result<Vec<(String, LevelSharing)>, CacheError> {
    let os_id = |c: &ContextId| topo.contexts().get(c.0).map(|h| h.os_id);
    measure_section_with(topo, os, section, opts, |_, ctxs, bytes| {
        let cpus: Vec<u32> = ctxs.iter().filter_map(os_id).collect();
        walk::walk_together(&cpus, bytes, opts.rounds)
    })
}

/// [`measure_section`] with the walks given: `walk(level, contexts, bytes)` walks an
/// array of `bytes` on each of `contexts` at once for the test of `level` and returns the
/// mean time of one access, ns (tests drive it with simulated caches).
///
/// # Errors
///
/// What `walk` returns.
pub fn measure_section_with<E>(
    topo: &Topology,
    os: Option<&OsView>,
    section: &mut CacheSection,
    opts: &SharingOptions,
    mut walk: impl FnMut(&LevelSpec, &[ContextId], u64) -> Result<f64, E>,
) -> Result<Vec<(String, LevelSharing)>, E> {
    let mut results = Vec::new();
    for (i, spec) in level_specs(topo, section, os) {
        let found = sharing_with(topo, &spec, opts, |c, b| walk(&spec, c, b))?;
        results.push((i, spec, found));
    }
    for (inner, outer, reason) in contradictions(topo, &results) {
        for k in [inner, outer] {
            if let Some((_, spec, found)) = results.get_mut(k) {
                if found.test.outcome == SharingOutcome::Decided {
                    *found = decide::overruled(topo, spec, found.clone(), &reason);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, spec, found) in results {
        if let Some(level) = section.levels.get_mut(i) {
            level.shared_by.clone_from(&found.shared_by);
            level.sharing = Some(found.test.clone());
        }
        out.push((spec.name, found));
    }
    Ok(out)
}

/// Pairs of levels (indices into `results`, inner first) whose walks contradict each
/// other, with why: contexts that share an inner level share every level outside it, so
/// a pair found sharing a level but not a larger one was walked under two placements (a
/// host that moved a vCPU between the tests).
fn contradictions(
    topo: &Topology,
    results: &[(usize, LevelSpec, LevelSharing)],
) -> Vec<(usize, usize, String)> {
    let os = |c: ContextId| topo.contexts().get(c.0).map_or(c.0 as u32, |h| h.os_id);
    let same = |a: &topoprobe_model::SharingPair, b: &topoprobe_model::SharingPair| {
        (a.a, a.b) == (b.a, b.b) || (a.a, a.b) == (b.b, b.a)
    };
    let mut out = Vec::new();
    for (i, (_, inner, x)) in results.iter().enumerate() {
        for (j, (_, outer, y)) in results.iter().enumerate().skip(i + 1) {
            let clash = x.test.pairs.iter().find(|p| {
                p.verdict == PairVerdict::Shared
                    && y.test
                        .pairs
                        .iter()
                        .any(|q| q.verdict == PairVerdict::Private && same(p, q))
            });
            if let Some(p) = clash {
                out.push((
                    i,
                    j,
                    format!(
                        "CPUs {} and {} walked as sharing the {} but not the {}, which holds \
                         it: the host moved a vCPU between the two tests, or the machine was \
                         busy",
                        os(p.a),
                        os(p.b),
                        inner.name,
                        outer.name
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
