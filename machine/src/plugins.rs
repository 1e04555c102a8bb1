//! Plugins: the measurements that enrich a freshly inferred description (memory, caches,
//! shared caches, contention, power), chosen by name (`--plugins cache,mem`).
//!
//! Each plugin is one module holding its plan (its steps on a machine of a given shape
//! within its budget, their cost, and the options that keep it within the budget) and its
//! run (the measurement, the section it adds to the description, its warnings); one table
//! lists them, each with its name, its plan and its run, in the order they run. Adding a
//! plugin is a variant of [`Plugin`], a module and a row of that table.

use std::time::Instant;

use topoprobe_measure::plan::{Shape, PROCESS_BYTES};
use topoprobe_model::{Budget, CostPlan, CostStep, OsView, Topology};

use crate::deadlines::{share_of_time_left, Clock, WallClock, STEP_SLACK};
use crate::{MachineError, Progress};

mod c2c;
mod cache;
mod contention;
mod memory;
mod power;
mod shared_caches;

pub use contention::{contention_plan_with, contention_setup};
pub use memory::memory_section;
pub use shared_caches::{measure_sharing, shared_setup};

/// A plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    /// Cache sizes and latencies.
    Cache,
    /// Which contexts share each cache level (implies `cache`).
    SharedCaches,
    /// Memory latency and bandwidth.
    Mem,
    /// Memory latency only.
    MemLatency,
    /// Memory latency and bandwidth, with the node × node matrices, the read/write mixes,
    /// the saturating thread counts and the loaded-latency curves (`mem --full`).
    MemFull,
    /// Cache-to-cache transfers by distance, line state and home node (`mem --c2c`).
    CacheToCache,
    /// Memory-access overhead groups and scalability.
    Contention,
    /// Power (RAPL).
    Power,
}

/// What a plugin's run works on: the topology it adds its section to, the OS's view, the
/// machine's shape, the timer's rate, when the plugin started, and where its steps are
/// reported.
struct RunContext<'a> {
    /// The measured topology.
    topo: &'a mut Topology,
    /// The OS's view of the machine, when read.
    os: Option<&'a OsView>,
    /// The shape of the measured topology.
    shape: Shape,
    /// The timer's cycles per ns, when known.
    ghz: Option<f64>,
    /// When the plugin started.
    started: Instant,
    /// Where the plugin's steps are reported.
    progress: &'a mut dyn FnMut(Progress<'_>),
}

/// How a plugin plans on a machine of a shape (OS view; measured topology when known)
/// within a budget.
type PlanFn = fn(Plugin, &Shape, Option<&Topology>, Option<&OsView>, Budget) -> CostPlan;

/// How a plugin runs within a budget, returning its cost with what each step spent.
type RunFn = fn(&mut RunContext<'_>, Plugin, Budget) -> Result<CostPlan, MachineError>;

/// One plugin: its name, as [`parse`] takes it, and its plan and run.
struct PluginEntry {
    /// The name.
    name: &'static str,
    /// The plugin.
    plugin: Plugin,
    /// Its plan.
    plan: PlanFn,
    /// Its run.
    run: RunFn,
}

/// Every plugin, in the order of [`Plugin`]'s variants, which is the order they run
/// ([`in_order`]).
const ALL: &[PluginEntry] = &[
    PluginEntry {
        name: "cache",
        plugin: Plugin::Cache,
        plan: cache::plan,
        run: cache::run,
    },
    PluginEntry {
        name: "shared-caches",
        plugin: Plugin::SharedCaches,
        plan: shared_caches::plan,
        run: shared_caches::run,
    },
    PluginEntry {
        name: "mem",
        plugin: Plugin::Mem,
        plan: memory::plan,
        run: memory::run,
    },
    PluginEntry {
        name: "mem-latency",
        plugin: Plugin::MemLatency,
        plan: memory::plan,
        run: memory::run,
    },
    PluginEntry {
        name: "mem-full",
        plugin: Plugin::MemFull,
        plan: memory::plan,
        run: memory::run,
    },
    PluginEntry {
        name: "c2c",
        plugin: Plugin::CacheToCache,
        plan: c2c::plan,
        run: c2c::run,
    },
    PluginEntry {
        name: "contention",
        plugin: Plugin::Contention,
        plan: contention::plan,
        run: contention::run,
    },
    PluginEntry {
        name: "power",
        plugin: Plugin::Power,
        plan: power::plan,
        run: power::run,
    },
];

/// The plugins run when `--plugins` is not given: the set that finishes in a few seconds.
pub const DEFAULT: &str = "cache,mem,power";

impl Plugin {
    /// The plugin's row of `ALL` (which lists the plugins in the order of this enum's
    /// variants: a test checks it).
    fn entry(self) -> &'static PluginEntry {
        &ALL[self as usize]
    }

    /// The plugin's name, as [`parse`] takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.entry().name
    }
}

/// Parses `none`, `all` (every section, `mem` for memory) or a comma-separated list of
/// plugin names.
///
/// # Errors
///
/// [`MachineError::UnknownPlugin`] for an unknown name, with the known ones.
pub fn parse(list: &str) -> Result<Vec<Plugin>, MachineError> {
    let list = list.trim();
    if list == "none" || list.is_empty() {
        return Ok(Vec::new());
    }
    if list == "all" {
        // Every section once: `mem-full` is the long form of `mem`, asked for by name.
        return Ok(ALL
            .iter()
            .map(|e| e.plugin)
            .filter(|&p| p != Plugin::MemFull)
            .collect());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let Some(e) = ALL.iter().find(|e| e.name == name) else {
            let known: Vec<&str> = ALL.iter().map(|e| e.name).collect();
            return Err(MachineError::UnknownPlugin {
                name: name.to_string(),
                known: known.join(", "),
            });
        };
        if !out.contains(&e.plugin) {
            out.push(e.plugin);
        }
    }
    Ok(out)
}

/// The memory budget's room for buffers.
fn room(budget: Budget) -> u64 {
    budget.bytes.saturating_sub(PROCESS_BYTES).max(1 << 20)
}

/// A plan of no cost with a note (a plugin whose hardware is missing).
fn nothing(plugin: Plugin, budget: Budget, note: String) -> CostPlan {
    let mut p = CostPlan::new(budget);
    let mut step = CostStep::new(plugin.name(), plugin.name(), 0, 0, 0.0);
    step.note = Some(note);
    p.steps.push(step);
    p
}

/// Wraps a plugin's error.
fn failed<E: std::error::Error + Send + Sync + 'static>(
    plugin: Plugin,
) -> impl FnOnce(E) -> MachineError {
    move |e| MachineError::Plugin {
        plugin: plugin.name(),
        source: Box::new(e),
    }
}

/// The plugins in the order they run (the table's), each once: `shared-caches` needs the
/// cache levels, so `cache` runs first whenever `shared-caches` is asked for; `c2c` adds to
/// the memory section, so it runs after the memory plugin.
#[must_use]
pub fn in_order(plugins: &[Plugin]) -> Vec<Plugin> {
    let wants = |p: Plugin| plugins.contains(&p);
    // One memory measurement: the fullest asked for.
    let memory = [Plugin::MemFull, Plugin::Mem, Plugin::MemLatency]
        .into_iter()
        .find(|&p| wants(p));
    ALL.iter()
        .map(|e| e.plugin)
        .filter(|&p| match p {
            Plugin::Cache => wants(Plugin::Cache) || wants(Plugin::SharedCaches),
            Plugin::Mem | Plugin::MemLatency | Plugin::MemFull => memory == Some(p),
            _ => wants(p),
        })
        .collect()
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
    (plugin.entry().plan)(plugin, shape, topo, os, budget)
}

/// Runs `plugins` (each with its share of the budget, as [`crate::plan::plan_measurement`]
/// gives them) on this machine and stores their sections in `topo`, reporting each plugin
/// and step to `progress`; a plugin whose hardware is missing leaves a warning saying
/// `unavailable: <reason>`. Each plugin plans again on the measured topology within its
/// share; returns every step with what it spent.
///
/// # Errors
///
/// [`MachineError::Plugin`] when a measurement fails (a CPU cannot be pinned, memory
/// cannot be allocated).
pub fn run(
    topo: &mut Topology,
    os: Option<&OsView>,
    plugins: &[(Plugin, Budget)],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CostPlan>, MachineError> {
    let clock = WallClock::start();
    run_within(topo, os, plugins, &clock, f64::INFINITY, progress)
}

/// Seconds a plugin must be given at least to run at all.
const LEAST_SECONDS: f64 = 0.02;

/// The budget `plugin` runs with when `shares` (its planned budget's seconds, then those
/// of the plugins after it) meet `left` seconds: its share of the time left
/// ([`share_of_time_left`]), or why it is left out: its share is gone, or its plan in
/// what is left (`plan_in(budget)`'s seconds) would overrun it by more than
/// [`STEP_SLACK`].
///
/// # Errors
///
/// The note saying why the plugin is left out (`left out: <plugin>: ...`).
pub fn budget_in_time_left(
    plugin: Plugin,
    budget: Budget,
    shares: &[f64],
    left: f64,
    plan_in: impl FnOnce(Budget) -> f64,
) -> Result<Budget, String> {
    let Some(given) = share_of_time_left(shares, left, LEAST_SECONDS) else {
        return Err(format!(
            "left out: {}: {:.1} s of the budget were left for it and the plugins after it",
            plugin.name(),
            left.max(0.0)
        ));
    };
    let b = budget.with_seconds(given.min(budget.seconds));
    let need = plan_in(b);
    if given > 0.0 && need > b.seconds * STEP_SLACK {
        return Err(format!(
            "left out: {}: its share of the time left is {:.2} s, and the least it measures \
             takes about {need:.2} s",
            plugin.name(),
            b.seconds
        ));
    }
    Ok(b)
}

/// [`run`] against a clock: each plugin runs with its share of the time left until `end`
/// seconds on `clock` ([`budget_in_time_left`]); a plugin that time cannot hold is left
/// out, with a note in its cost (`left_out`) that the description's warnings repeat.
///
/// # Errors
///
/// As [`run`].
pub fn run_within(
    topo: &mut Topology,
    os: Option<&OsView>,
    plugins: &[(Plugin, Budget)],
    clock: &dyn Clock,
    end: f64,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CostPlan>, MachineError> {
    let timer = topoprobe_measure::timer::Timer::calibrate();
    let ghz = timer.cycle_ghz();
    if let Some(g) = ghz {
        // The TSC's rate: what converts this description's ns into a .mct file's cycles.
        topo.provenance_mut()
            .parameters
            .entry("ghz".into())
            .or_insert_with(|| format!("{g:.4}"));
    }
    let mut costs = Vec::new();
    let wants: Vec<f64> = plugins.iter().map(|(_, b)| b.seconds).collect();
    for (i, &(plugin, planned)) in plugins.iter().enumerate() {
        let shape = Shape::from_topology(topo, os).at_this_machines_speed();
        let left = end - clock.now();
        let budget = match budget_in_time_left(plugin, planned, &wants[i..], left, |b| {
            plan_plugin(plugin, &shape, Some(topo), os, b).seconds()
        }) {
            Ok(b) => b,
            Err(note) => {
                let mut p = nothing(plugin, planned.with_seconds(0.0), note.clone());
                p.left_out.push(note);
                costs.push(p);
                continue;
            }
        };
        progress(Progress::Plugin(plugin.name()));
        let mut cx = RunContext {
            topo: &mut *topo,
            os,
            shape,
            ghz,
            started: Instant::now(),
            progress: &mut *progress,
        };
        let cost = (plugin.entry().run)(&mut cx, plugin, budget)?;
        costs.push(cost);
    }
    if let Some(os) = os {
        // The sections just measured (cache sharing, contention) are compared too.
        topoprobe_infer::compare::record_os_differences(topo, os);
    }
    progress(Progress::StepsDone);
    Ok(costs)
}

/// Records what a plugin run as one block spent: its time spread over its steps in
/// proportion to their plan, the process's peak memory on each.
pub(crate) fn spent_in_one(p: &mut CostPlan, started: std::time::Instant) {
    let spent = started.elapsed().as_secs_f64();
    let planned = p.seconds();
    let peak = topoprobe_sys::usage::peak_resident_bytes();
    let n = p.steps.len().max(1) as f64;
    for s in &mut p.steps {
        let share = if planned > 0.0 {
            spent * s.seconds / planned
        } else {
            spent / n
        };
        s.record(share, peak);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_plugin_in_the_order_of_the_enum() {
        for (i, e) in ALL.iter().enumerate() {
            assert_eq!(e.plugin as usize, i, "{}", e.name);
            assert_eq!(e.plugin.name(), e.name);
        }
    }

    #[test]
    fn plugin_lists_parse() {
        assert_eq!(parse("none").unwrap(), []);
        assert_eq!(parse("all").unwrap().len(), ALL.len() - 1);
        assert!(!parse("all").unwrap().contains(&Plugin::MemFull));
        assert_eq!(
            in_order(&parse("mem-latency,mem-full,mem").unwrap()),
            [Plugin::MemFull]
        );
        // The transfers add to the memory section: they run after it.
        assert_eq!(
            in_order(&parse("c2c,mem").unwrap()),
            [Plugin::Mem, Plugin::CacheToCache]
        );
        assert_eq!(
            parse("mem, cache,mem").unwrap(),
            [Plugin::Mem, Plugin::Cache]
        );
        let e = parse("cache,bogus").unwrap_err().to_string();
        assert!(e.contains("\"bogus\"") && e.contains("contention"), "{e}");
        assert_eq!(parse(DEFAULT).unwrap().len(), 3);
    }
}
