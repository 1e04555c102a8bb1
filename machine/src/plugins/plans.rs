//! Each plugin's plan on a machine of a given shape within its budget: the steps it will
//! take, their cost, and the options that keep it within the budget. Where the measured
//! topology is known (a live run, or a command given a description), the shared-cache test
//! and the contention run are planned measurement by measurement from it; a dry run before
//! any latency is measured estimates them from the OS's view.

use topoprobe_measure::cache::shared::{self, SharingOptions};
use topoprobe_measure::cache::{self, CacheOptions};
use topoprobe_measure::cache_to_cache::{self, C2cError, C2cPlan};
use topoprobe_measure::contention::{plan as contention_plan, ContentionOptions};
use topoprobe_measure::memory::{self, MemOptions};
use topoprobe_measure::plan::{mib, Rates, Shape, PROCESS_BYTES};
use topoprobe_measure::power::{self, PowerOptions};
use topoprobe_measure::steady::SteadyRule;
use topoprobe_model::{Budget, CostPlan, CostStep, OsView, Topology};

use super::Plugin;

/// Rounds a copy measurement of the contention run is expected to take.
const COPY_ROUNDS: usize = 4;
/// Most rounds of a copy measurement of the contention run.
const COPY_MAX_ROUNDS: usize = 6;
/// A measurement may run this many times its planned time before its rounds stop.
const SLACK: f64 = 1.5;
/// Smallest working set the contention run shrinks to when time is short, bytes.
const MIN_COPY_BYTES: u64 = 16 << 20;

/// The memory budget's room for buffers.
fn room(budget: Budget) -> u64 {
    budget.bytes.saturating_sub(PROCESS_BYTES).max(1 << 20)
}

/// The cache plugin's options on a machine of `shape` within `budget`.
pub(super) fn cache_options(
    shape: &Shape,
    os: Option<&OsView>,
    budget: Budget,
    ghz: Option<f64>,
) -> CacheOptions {
    CacheOptions {
        ghz,
        budget,
        ..CacheOptions::quick(shape.first_cpu().unwrap_or(0), os)
    }
}

/// The options of the memory plugin `plugin` (`mem`, `mem-latency` or `mem-full`) within
/// `budget`.
pub(super) fn mem_options(budget: Budget, plugin: Plugin, ghz: Option<f64>) -> MemOptions {
    MemOptions {
        scattered: false,
        max_rounds: 10,
        latency_only: plugin == Plugin::MemLatency,
        full: plugin == Plugin::MemFull,
        ghz,
        budget,
        ..MemOptions::default()
    }
}

/// The `c2c` plugin's transfers on `topo` within `budget`.
///
/// # Errors
///
/// [`C2cError`] (none with the default rounds).
pub(super) fn c2c_plan(topo: &Topology, budget: Budget) -> Result<C2cPlan, C2cError> {
    cache_to_cache::plan(topo, cache_to_cache::DEFAULT_ROUNDS, budget)
}

/// A plan of no cost with a note (a plugin whose hardware is missing).
pub(super) fn nothing(plugin: Plugin, budget: Budget, note: String) -> CostPlan {
    let mut p = CostPlan::new(budget);
    let mut step = CostStep::new(plugin.name(), plugin.name(), 0, 0, 0.0);
    step.note = Some(note);
    p.steps.push(step);
    p
}

/// Plans `plugin` on a machine of `shape` (OS view `os`; measured topology `topo` when
/// known) within `budget`: its steps, their cost, and what the budget leaves out.
#[must_use]
pub fn plan_plugin(
    plugin: Plugin,
    shape: &Shape,
    topo: Option<&Topology>,
    os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    match plugin {
        Plugin::Cache => {
            let o = cache_options(shape, os, budget, None);
            cache::plan_caches(&shape.cache_levels, shape.huge_pages, &o).cost()
        }
        Plugin::SharedCaches => match topo {
            Some(t) if t.caches().is_some() => shared_setup(t, os, shape, budget).1,
            _ => shared_estimate(shape, budget),
        },
        Plugin::Mem | Plugin::MemLatency | Plugin::MemFull => {
            let o = mem_options(budget, plugin, None);
            memory::plan::plan_memory(shape, &o).cost()
        }
        Plugin::CacheToCache => {
            // Before the latencies are measured, the OS's view stands in for the topology.
            let os_topology = || os.and_then(|o| o.structure().ok());
            match topo
                .cloned()
                .or_else(os_topology)
                .map(|t| c2c_plan(&t, budget))
            {
                Some(Ok(p)) => p.cost,
                Some(Err(e)) => nothing(plugin, budget, e.to_string()),
                None => nothing(
                    plugin,
                    budget,
                    "no topology to plan the transfers on (the OS's view could not be read)".into(),
                ),
            }
        }
        Plugin::Contention => match topo {
            Some(t) => contention_setup(t, shape, budget).1,
            None => contention_estimate(shape, budget),
        },
        Plugin::Power => match &shape.power_unavailable {
            None => power::plan_power(shape, &PowerOptions::default(), budget).cost(),
            Some(why) => nothing(plugin, budget, why.clone()),
        },
    }
}

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
    let r = Rates::ASSUMED;
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
            mib(largest),
            budget.seconds
        ));
    }
    (opts, plan)
}

/// The shared-cache test estimated from the OS's caches of the first context, before the
/// topology is measured: one calibration and one pair per scope for each data level.
fn shared_estimate(shape: &Shape, budget: Budget) -> CostPlan {
    let r = Rates::ASSUMED;
    let mut p = CostPlan::new(budget);
    let room = room(budget);
    for (i, &size) in shape.cache_levels.iter().enumerate() {
        let array = size * 2 / 3;
        if 2 * array > room {
            p.left_out.push(format!(
                "L{}: which contexts share its {} is not measured: two walks of {} do not fit \
                 the {} memory budget",
                i + 1,
                mib(size),
                mib(array),
                mib(budget.bytes)
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

/// Seconds of one copy measurement of `threads` threads over `bytes` in all: first touch,
/// then [`COPY_ROUNDS`] evicted passes.
fn copy_seconds(r: &Rates, bytes: u64, threads: usize) -> f64 {
    threads as f64 * r.thread_start_s
        + r.touch_seconds(bytes, threads)
        + (COPY_ROUNDS + 1) as f64
            * (r.flush_seconds(bytes, threads) + r.stream_seconds(bytes, threads))
}

/// The plan of the contention run of `topo` with `opts`: one step per measurement it
/// makes whatever it finds.
#[must_use]
pub fn contention_plan_with(topo: &Topology, opts: &ContentionOptions, budget: Budget) -> CostPlan {
    let r = Rates::ASSUMED;
    let mut p = CostPlan::new(budget);
    for m in contention_plan::measurements(topo, opts) {
        p.steps.push(CostStep::new(
            "contention",
            format!("contention: {}", m.step.describe(&m.contexts)),
            m.bytes,
            COPY_ROUNDS as u64,
            copy_seconds(&r, m.bytes, m.contexts.len()),
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
    let cost = |opts: &ContentionOptions| contention_plan_with(topo, opts, budget);
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
            mib(opts.working_set(1)),
            mib(memory::working_set(shape.largest_llc()).min(room)),
            budget.seconds
        ));
    }
    (opts, plan)
}

/// The contention run estimated from the shape, before the topology is measured: the
/// context alone, a pair per scope (its core, its socket, the machine) and the socket curve
/// at 1, 2, 4, … threads.
fn contention_estimate(shape: &Shape, budget: Budget) -> CostPlan {
    let r = Rates::ASSUMED;
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
