//! The `shared-caches` plugin: which contexts share each cache level, by concurrent walks
//! on contexts chosen from the topology (it needs the levels `cache` found). Where the
//! measured topology is known the test is planned level by level from it; a dry run before
//! any latency is measured estimates it from the OS's caches.

use topoprobe_measure::cache::shared::{self, SharingOptions};
use topoprobe_measure::plan::{Rates, Shape};
use topoprobe_model::{
    size_text, Budget, CacheSection, CostPlan, CostStep, OsView, Topology, Warning, WarningKind,
};

use super::{room, spent_in_one, Plugin, RunContext};
use crate::{MachineError, Progress};

/// Dependent accesses of one walk over an array of `bytes` with `rounds` timed rounds of at
/// least 2^20 accesses, its untimed lap included (as the shared-cache test walks).
fn walk_accesses(bytes: u64, rounds: usize) -> u64 {
    let positions = (bytes / 1024).max(1);
    let steps = positions.max(1 << 20);
    positions.max(steps / 4) + rounds.max(1) as u64 * steps
}

/// Seconds of the expected shared-cache test of one level with arrays of `array` bytes and
/// `partners` partners: the array and one twice its size walked alone, twice each, then
/// every pair twice (a pair sharing the level walks at the larger array's pace, one that
/// does not at the array's: half way between is expected), first touches included. An
/// array a little larger than a level still hits it in part: its pace is taken half way
/// between the level's and the next one's.
fn sharing_seconds(r: &Rates, array: u64, partners: usize, rounds: usize, levels: &[u64]) -> f64 {
    let alone = r.access_ns(array, levels);
    let double = (alone + r.access_ns(2 * array, levels)) / 2.0;
    let a = walk_accesses(array, rounds) as f64;
    let d = walk_accesses(2 * array, rounds) as f64;
    let calibration = 2.0 * (a * alone + d * double);
    let pairs = 2.0 * partners as f64 * a * (alone + double) / 2.0;
    let touches = (4 + 2 * partners) as f64 * r.touch_seconds(2 * array, 1);
    (calibration + pairs) * 1e-9 + touches
}

/// The shared-cache test of the cache levels `topo` holds: the options that keep it within
/// `budget`, and its plan (one step per level; levels left out are said).
#[must_use]
pub fn shared_setup(
    topo: &Topology,
    os: Option<&OsView>,
    shape: &Shape,
    budget: Budget,
) -> (SharingOptions, CostPlan) {
    let r = shape.rates();
    let mut opts = SharingOptions {
        max_bytes: room(budget),
        ..SharingOptions::default()
    };
    let Some(section) = topo.caches() else {
        return (opts, CostPlan::new(budget));
    };
    let specs = shared::level_specs(topo, section, os);
    let cost = |opts: &SharingOptions| -> (CostPlan, Vec<u64>) {
        let mut p = CostPlan::new(budget);
        let mut peaks = Vec::new();
        for (_, spec) in &specs {
            match shared::plan(topo, spec, opts) {
                Ok(plan) => {
                    let partners: usize = plan.scopes.iter().map(|s| s.partners.len()).sum();
                    let first = plan.arrays.first().copied().unwrap_or(0);
                    let seconds =
                        sharing_seconds(&r, first, partners, opts.rounds, &shape.cache_levels);
                    p.steps.push(CostStep::new(
                        "shared-caches",
                        format!("shared caches: {}", spec.name),
                        plan.peak_bytes(),
                        plan.max_walks() as u64,
                        seconds,
                    ));
                    peaks.push(plan.peak_bytes());
                }
                Err(why) => p
                    .left_out
                    .push(format!("{}: unavailable: {why}", spec.name)),
            }
        }
        (p, peaks)
    };
    let (mut plan, mut peaks) = cost(&opts);
    if plan.seconds() > budget.seconds && opts.rounds > 1 {
        opts.rounds = 1;
        (plan, peaks) = cost(&opts);
    }
    while plan.seconds() > budget.seconds {
        // The largest level's test costs most: leave it out by the memory it needs.
        let Some(&largest) = peaks.iter().max() else {
            break;
        };
        opts.max_bytes = largest.saturating_sub(1);
        (plan, peaks) = cost(&opts);
        plan.left_out.push(format!(
            "levels whose test needs {} or more are left out: the test would take longer \
             than the {:.1} s budget",
            size_text(largest),
            budget.seconds
        ));
    }
    (opts, plan)
}

/// The shared-cache test estimated from the OS's caches of the first context, before the
/// topology is measured: one calibration and one pair per scope for each data level.
fn shared_estimate(shape: &Shape, budget: Budget) -> CostPlan {
    let r = shape.rates();
    let mut p = CostPlan::new(budget);
    let room = room(budget);
    for (i, &size) in shape.cache_levels.iter().enumerate() {
        let array = size * 2 / 3;
        if 2 * array > room {
            p.left_out.push(format!(
                "L{}: which contexts share its {} is not measured: two walks of {} do not fit \
                 the {} memory budget",
                i + 1,
                size_text(size),
                size_text(array),
                size_text(budget.bytes)
            ));
            continue;
        }
        // Partners: the core's sibling, the socket, the machine.
        let partners = usize::from(shape.contexts() > shape.cores())
            + 1
            + usize::from(shape.sockets.len() > 1);
        let name = if i == 0 {
            "L1d".to_string()
        } else {
            format!("L{}", i + 1)
        };
        p.steps.push(CostStep::new(
            "shared-caches",
            format!("shared caches: {name}"),
            2 * array,
            (4 + 2 * partners) as u64,
            sharing_seconds(
                &r,
                array,
                partners,
                shared::plan::DEFAULT_ROUNDS,
                &shape.cache_levels,
            ),
        ));
    }
    p
}

/// Finds which contexts share every data level of `section` (concurrent walks on
/// contexts chosen from the topology, checked against the OS's `os` caches) and records
/// it; returns each level's name and result, with a warning where the walks did not
/// decide or did not run ([`shared::measure_section`]).
///
/// # Errors
///
/// [`MachineError::Plugin`] when a walk cannot run (a CPU cannot be pinned, an array
/// cannot be allocated).
pub fn measure_sharing(
    topo: &Topology,
    os: Option<&OsView>,
    section: &mut CacheSection,
    opts: &shared::SharingOptions,
) -> Result<Vec<(String, shared::LevelSharing)>, MachineError> {
    shared::measure_section(topo, os, section, opts).map_err(|e| MachineError::Plugin {
        plugin: "shared-caches",
        source: format!("finding which contexts share a cache level: {e}").into(),
    })
}

/// The plan of the test: level by level on a measured topology with caches, else
/// estimated from the shape.
pub(super) fn plan(
    _plugin: Plugin,
    shape: &Shape,
    topo: Option<&Topology>,
    os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    match topo {
        Some(t) if t.caches().is_some() => shared_setup(t, os, shape, budget).1,
        _ => shared_estimate(shape, budget),
    }
}

/// Finds which contexts share each level of the topology's cache section and records it,
/// with a warning where the walks did not decide or a level was left out.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    _plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    let (opts, mut p) = shared_setup(cx.topo, cx.os, &cx.shape, budget);
    if let Some(mut section) = cx.topo.caches().cloned() {
        if let Some(first) = p.steps.first() {
            (cx.progress)(Progress::Step(&first.what));
        }
        for (_, found) in measure_sharing(cx.topo, cx.os, &mut section, &opts)? {
            let warning = found
                .warning
                .map(|w| Warning::new(WarningKind::SharedCaches, w));
            cx.topo.validation_mut().warnings.extend(warning);
        }
        cx.topo.set_caches(Some(section));
    }
    for n in &p.left_out {
        cx.topo
            .validation_mut()
            .warnings
            .push(Warning::new(WarningKind::SharedCaches, n.clone()));
    }
    spent_in_one(&mut p, cx.started);
    Ok(p)
}
