//! The `contention` plugin: memory-access overhead groups and bandwidth scalability
//! (Servet). Where the measured topology is known the run is planned measurement by
//! measurement from it; a dry run before any latency is measured estimates it from the
//! shape.

use topoprobe_measure::contention::{self, plan as contention_plan, ContentionOptions};
use topoprobe_measure::memory;
use topoprobe_measure::plan::{Shape, Speed};
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

/// Seconds of one copy measurement of `threads` threads over `bytes` in all on a machine
/// of `speed`: first touch, then its evicted passes, the touch and the evictions shared by
/// the threads that really run at once ([`copy_rounds`] passes after a first).
fn copy_seconds(speed: &Speed, bytes: u64, threads: usize) -> f64 {
    let r = speed.rates();
    let at_once = speed.effective_threads(threads);
    threads as f64 * r.thread_start_s
        + r.touch_seconds(bytes, at_once)
        + (copy_rounds(speed) + 1) as f64
            * (r.flush_seconds(bytes, at_once) + r.stream_seconds(bytes, threads))
}

/// Rounds a copy measurement is expected to take on a machine of `speed`: [`COPY_ROUNDS`],
/// or the most the rule allows ([`COPY_MAX_ROUNDS`]) where the threads take turns on
/// fewer CPUs than they are (a time-shared guest), whose rounds seldom agree early.
fn copy_rounds(speed: &Speed) -> usize {
    if speed.parallel.is_finite() {
        COPY_MAX_ROUNDS
    } else {
        COPY_ROUNDS
    }
}

/// The plan of the contention run of `topo` with `opts` on a machine of `speed`: one step
/// per measurement it makes whatever it finds, and, where the machine's threads do not
/// run at once (so that every pair contends), the level curve that always follows.
#[must_use]
pub fn contention_plan_with(
    topo: &Topology,
    opts: &ContentionOptions,
    speed: &Speed,
    budget: Budget,
) -> CostPlan {
    let mut p = CostPlan::new(budget);
    let mut planned = contention_plan::measurements(topo, opts);
    if speed.parallel.is_finite() {
        planned.extend(contention_plan::time_shared_level_curve(topo, opts));
    }
    for m in planned {
        p.steps.push(CostStep::new(
            "contention",
            format!("contention: {}", m.step.describe(&m.contexts)),
            m.bytes,
            copy_rounds(speed) as u64,
            copy_seconds(speed, m.bytes, m.contexts.len()),
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
    let cost = |opts: &ContentionOptions| contention_plan_with(topo, opts, &shape.speed, budget);
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
            "contention: up to {} more when an overhead level is found in a group other \
             than the socket curve's (its scalability curve)",
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
        copy_seconds(&shape.speed, bytes, 1) + pairs as f64 * copy_seconds(&shape.speed, bytes, 2),
    ));
    let curve: f64 = counts
        .iter()
        .filter(|&&t| t > 2)
        .map(|&t| copy_seconds(&shape.speed, bytes, t))
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

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_infer::sim::platforms;

    #[test]
    fn a_machine_whose_threads_do_not_run_at_once_plans_the_level_curve_too() {
        let spec = platforms::ccx_server(2);
        let topo = topoprobe_infer::infer(&spec.true_matrix(), &spec.infer_options()).unwrap();
        let opts = ContentionOptions::default();
        let budget = Budget::new(1e6, 1 << 40);
        let ordinary = contention_plan_with(&topo, &opts, &Speed::assumed(), budget);
        let shared = Speed {
            parallel: 1.2,
            ..Speed::assumed()
        };
        let time_shared = contention_plan_with(&topo, &opts, &shared, budget);
        let extra = contention_plan::time_shared_level_curve(&topo, &opts).len();
        assert!(extra > 0);
        assert_eq!(time_shared.steps.len(), ordinary.steps.len() + extra);
        assert!(time_shared
            .steps
            .iter()
            .any(|s| s.what.contains("scalability level 0")));
    }
}
