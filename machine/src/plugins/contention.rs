//! The `contention` plugin: memory-access overhead groups and bandwidth scalability
//! (Servet). Where the measured topology is known the run is planned measurement by
//! measurement from it; a dry run before any latency is measured estimates it from the
//! shape.

use topoprobe_measure::contention::{self, plan as contention_plan, ContentionOptions};
use topoprobe_measure::memory;
use topoprobe_measure::plan::{Rates, Shape};
use topoprobe_measure::steady::SteadyRule;
use topoprobe_model::{size_text, Budget, CostPlan, CostStep, OsView, Topology};

use super::{failed, room, spent_in_one, Plugin, RunContext};
use crate::{MachineError, Progress};

/// Rounds a copy measurement of the contention run is expected to take.
const COPY_ROUNDS: usize = 4;
/// Most rounds of a copy measurement of the contention run.
const COPY_MAX_ROUNDS: usize = 6;
/// A measurement may run this many times its planned time before its rounds stop.
const SLACK: f64 = 1.5;
/// Smallest working set the contention run shrinks to when time is short, bytes.
const MIN_COPY_BYTES: u64 = 16 << 20;

/// Seconds of one copy measurement of `threads` threads over `bytes` in all: first touch,
/// then [`COPY_ROUNDS`] evicted passes.
fn copy_seconds(r: &Rates, bytes: u64, threads: usize) -> f64 {
    threads as f64 * r.thread_start_s
        + r.touch_seconds(bytes, threads)
        + (COPY_ROUNDS + 1) as f64
            * (r.flush_seconds(bytes, threads) + r.stream_seconds(bytes, threads))
}

/// The plan of the contention run of `topo` with `opts` at rates `r`: one step per
/// measurement it makes whatever it finds.
#[must_use]
pub fn contention_plan_with(
    topo: &Topology,
    opts: &ContentionOptions,
    r: &Rates,
    budget: Budget,
) -> CostPlan {
    let mut p = CostPlan::new(budget);
    for m in contention_plan::measurements(topo, opts) {
        p.steps.push(CostStep::new(
            "contention",
            format!("contention: {}", m.step.describe(&m.contexts)),
            m.bytes,
            COPY_ROUNDS as u64,
            copy_seconds(r, m.bytes, m.contexts.len()),
        ));
    }
    p
}

/// The contention run of `topo`: the options that keep it within `budget` (its working set
/// shrinks when time is short), and its plan, one step per measurement.
#[must_use]
pub fn contention_setup(
    topo: &Topology,
    shape: &Shape,
    budget: Budget,
) -> (ContentionOptions, CostPlan) {
    let room = room(budget);
    let mut opts = ContentionOptions {
        total_bytes: Some(memory::working_set(shape.largest_llc()).min(room)),
        max_total_bytes: room,
        ..ContentionOptions::default()
    };
    let rates = shape.rates();
    let cost = |opts: &ContentionOptions| contention_plan_with(topo, opts, &rates, budget);
    let mut plan = cost(&opts);
    while plan.seconds() > budget.seconds && opts.working_set(1) > MIN_COPY_BYTES {
        opts.total_bytes = Some((opts.working_set(1) / 2).max(MIN_COPY_BYTES));
        plan = cost(&opts);
    }
    while plan.seconds() > budget.seconds && opts.max_threads > 2 {
        opts.max_threads /= 2;
        plan = cost(&opts);
    }
    let longest = plan.steps.iter().map(|s| s.seconds).fold(0.0, f64::max);
    opts.rule = SteadyRule {
        max_rounds: COPY_MAX_ROUNDS,
        max_seconds: longest * SLACK,
        ..SteadyRule::default()
    };
    let extra = contention_plan::most_measurements(topo, &opts).saturating_sub(plan.steps.len());
    if extra > 0 {
        plan.left_out.push(format!(
            "contention: up to {} more when an overhead level is found inside a group \
             smaller than the socket (its scalability curve)",
            topoprobe_model::format::plural(extra, "measurement")
        ));
    }
    if opts.working_set(1) < memory::working_set(shape.largest_llc()).min(room) {
        plan.left_out.push(format!(
            "contention copies over {} (instead of {}) to keep within the {:.1} s budget",
            size_text(opts.working_set(1)),
            size_text(memory::working_set(shape.largest_llc()).min(room)),
            budget.seconds
        ));
    }
    (opts, plan)
}

/// The contention run estimated from the shape, before the topology is measured: the
/// context alone, a pair per scope (its core, its socket, the machine) and the socket curve
/// at 1, 2, 4, … threads.
fn contention_estimate(shape: &Shape, budget: Budget) -> CostPlan {
    let r = shape.rates();
    let room = room(budget);
    let bytes = memory::working_set(shape.largest_llc()).min(room);
    let socket = shape.sockets.first().map_or(1, |s| s.cpus.len());
    let counts = contention_plan::thread_counts(socket, ContentionOptions::default().max_threads);
    let pairs = 1 + usize::from(shape.sockets.len() > 1) + usize::from(socket > shape.cores());
    let mut p = CostPlan::new(budget);
    p.steps.push(CostStep::new(
        "contention",
        "contention: bandwidth alone and pairs",
        bytes,
        (1 + pairs) as u64,
        copy_seconds(&r, bytes, 1) + pairs as f64 * copy_seconds(&r, bytes, 2),
    ));
    let curve: f64 = counts
        .iter()
        .filter(|&&t| t > 2)
        .map(|&t| copy_seconds(&r, bytes, t))
        .sum();
    p.steps.push(CostStep::new(
        "contention",
        "contention: socket curve",
        bytes,
        counts.len() as u64,
        curve,
    ));
    p
}

/// The plan of the run: measurement by measurement on a measured topology, else
/// estimated from the shape.
pub(super) fn plan(
    _plugin: Plugin,
    shape: &Shape,
    topo: Option<&Topology>,
    _os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    match topo {
        Some(t) => contention_setup(t, shape, budget).1,
        None => contention_estimate(shape, budget),
    }
}

/// Runs the contention measurements and records the section.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    let (o, mut p) = contention_setup(cx.topo, &cx.shape, budget);
    let progress = &mut *cx.progress;
    let section = contention::measure_contention(cx.topo, &o, |s| {
        progress(Progress::Step(&format!("contention: {s}")));
    })
    .map_err(failed(plugin))?;
    cx.topo.set_contention(Some(section));
    spent_in_one(&mut p, cx.started);
    Ok(p)
}
