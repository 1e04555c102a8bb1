//! Plugins: the measurements that enrich a freshly inferred description (memory, caches,
//! shared caches, contention, power), chosen by name (`--plugins cache,mem`).

use topoprobe_measure::cache::{self, shared};
use topoprobe_measure::contention;
use topoprobe_measure::memory::{self, MemReport};
use topoprobe_measure::plan::{mib, Shape};
use topoprobe_measure::power::{self, PowerOptions};
use topoprobe_model::{
    Access, Budget, CacheSection, CostPlan, LatencyUnit, MemoryBandwidth, MemoryLatency,
    MemorySection, OsView, SocketId, Threads, Topology, Warning, WarningKind,
};

use crate::deadlines::{share_of_time_left, Clock, WallClock, STEP_SLACK};
use crate::{MachineError, Progress};

mod plans;

use plans::{c2c_plan, cache_options, mem_options};
pub use plans::{contention_plan_with, contention_setup, plan_plugin, shared_setup};

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

/// Every plugin with its name.
const ALL: [(&str, Plugin); 8] = [
    ("cache", Plugin::Cache),
    ("shared-caches", Plugin::SharedCaches),
    ("mem", Plugin::Mem),
    ("mem-latency", Plugin::MemLatency),
    ("mem-full", Plugin::MemFull),
    ("c2c", Plugin::CacheToCache),
    ("contention", Plugin::Contention),
    ("power", Plugin::Power),
];

/// The plugins run when `--plugins` is not given: the set that finishes in a few seconds.
pub const DEFAULT: &str = "cache,mem,power";

impl Plugin {
    /// The plugin's name, as [`parse`] takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        ALL.iter()
            .find(|(_, p)| *p == self)
            .map_or("?", |(n, _)| *n)
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
            .map(|(_, p)| *p)
            .filter(|&p| p != Plugin::MemFull)
            .collect());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let Some((_, p)) = ALL.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
            return Err(MachineError::UnknownPlugin {
                name: name.to_string(),
                known: known.join(", "),
            });
        };
        if !out.contains(p) {
            out.push(*p);
        }
    }
    Ok(out)
}

/// The memory section of a measurement, latencies in the topology's unit.
pub fn memory_section(topo: &Topology, r: &MemReport, ghz: Option<f64>) -> MemorySection {
    let unit = |ns: f64| match (topo.units(), ghz) {
        (LatencyUnit::Cycles, Some(g)) => ns * g,
        _ => ns,
    };
    let latency = r
        .latency
        .iter()
        .filter_map(|l| {
            let ctx = topo.context_by_os_id(l.cpu)?;
            Some(MemoryLatency {
                context: ctx,
                node: topo.node_by_os_id(l.node)?,
                latency: unit(l.ns()),
                cycles: ghz.map(|g| l.ns() * g),
            })
        })
        .collect();
    let mut bandwidth = Vec::new();
    for b in &r.bandwidth {
        // The measurement names nodes by OS number; the section by the topology's index.
        let Some(node) = topo.node_by_os_id(b.node) else {
            continue;
        };
        let socket_size = topo.sockets()[b.socket].contexts.len();
        let threads = match b.threads {
            1 => Threads::Single,
            n if n == socket_size => Threads::AllContexts,
            n => Threads::Count(n),
        };
        for (access, gbps) in [
            (Access::Read, b.read),
            (Access::Write, b.write),
            (Access::Copy, b.copy),
        ] {
            bandwidth.push(MemoryBandwidth {
                socket: SocketId(b.socket),
                node,
                access,
                threads,
                gbps,
            });
        }
    }
    MemorySection {
        latency,
        bandwidth,
        detail: crate::probes::memory::detail(r),
    }
}

/// The memory measurement's notes and warnings as the description's warnings, each
/// once: the plan's notes that its cost record carries (what the budget left out, how the
/// plan was made) become the description's `budget` warnings with the rest of the cost
/// record, and are not said again here (the text view printed them twice).
fn memory_warnings(report: &MemReport) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    for n in report.notes.iter().chain(&report.warnings) {
        if report.cost.left_out.contains(n) || out.iter().any(|w| &w.message == n) {
            continue;
        }
        out.push(Warning::new(WarningKind::Memory, n.clone()));
    }
    out
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

/// Wraps a plugin's error.
fn failed<E: std::error::Error + Send + Sync + 'static>(
    plugin: Plugin,
) -> impl FnOnce(E) -> MachineError {
    move |e| MachineError::Plugin {
        plugin: plugin.name(),
        source: Box::new(e),
    }
}

/// The plugins in the order they run, each once: `shared-caches` needs the cache levels,
/// so `cache` runs first whenever `shared-caches` is asked for; `c2c` adds to the memory
/// section, so it runs after the memory plugin.
#[must_use]
pub fn in_order(plugins: &[Plugin]) -> Vec<Plugin> {
    let wants = |p: Plugin| plugins.contains(&p);
    let mut out = Vec::new();
    if wants(Plugin::Cache) || wants(Plugin::SharedCaches) {
        out.push(Plugin::Cache);
    }
    // One memory measurement: the fullest asked for.
    let memory = [Plugin::MemFull, Plugin::Mem, Plugin::MemLatency]
        .into_iter()
        .find(|&p| wants(p));
    for p in [
        Plugin::SharedCaches,
        Plugin::Mem,
        Plugin::MemLatency,
        Plugin::MemFull,
        Plugin::CacheToCache,
        Plugin::Contention,
        Plugin::Power,
    ] {
        let is_memory = matches!(p, Plugin::Mem | Plugin::MemLatency | Plugin::MemFull);
        if wants(p) && (!is_memory || memory == Some(p)) {
            out.push(p);
        }
    }
    out
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
        let shape = Shape::from_topology(topo, os);
        let left = end - clock.now();
        let budget = match budget_in_time_left(plugin, planned, &wants[i..], left, |b| {
            plan_plugin(plugin, &shape, Some(topo), os, b).seconds()
        }) {
            Ok(b) => b,
            Err(note) => {
                let mut p = plans::nothing(plugin, planned.with_seconds(0.0), note.clone());
                p.left_out.push(note);
                costs.push(p);
                continue;
            }
        };
        progress(Progress::Plugin(plugin.name()));
        let started = std::time::Instant::now();
        let cost = match plugin {
            Plugin::Cache => {
                progress(Progress::Step("caches: walk on huge pages"));
                let report = cache::measure_caches(os, &cache_options(&shape, os, budget, ghz))
                    .map_err(failed(Plugin::Cache))?;
                for n in &report.notes {
                    topo.validation_mut()
                        .warnings
                        .push(Warning::new(WarningKind::Cache, n.clone()));
                }
                topo.set_caches(Some(report.section));
                report.cost
            }
            Plugin::SharedCaches => {
                let (opts, mut p) = shared_setup(topo, os, &shape, budget);
                if let Some(mut section) = topo.caches().cloned() {
                    if let Some(first) = p.steps.first() {
                        progress(Progress::Step(&first.what));
                    }
                    for (_, found) in measure_sharing(topo, os, &mut section, &opts)? {
                        let warning = found
                            .warning
                            .map(|w| Warning::new(WarningKind::SharedCaches, w));
                        topo.validation_mut().warnings.extend(warning);
                    }
                    topo.set_caches(Some(section));
                }
                for n in &p.left_out {
                    topo.validation_mut()
                        .warnings
                        .push(Warning::new(WarningKind::SharedCaches, n.clone()));
                }
                spent_in_one(&mut p, started);
                p
            }
            Plugin::Mem | Plugin::MemLatency | Plugin::MemFull => {
                let o = mem_options(budget, plugin, ghz);
                let report = memory::measure_memory(&shape, &o, |s| progress(Progress::Step(s)))
                    .map_err(failed(plugin))?;
                topo.validation_mut()
                    .warnings
                    .extend(memory_warnings(&report));
                topo.provenance_mut().parameters.insert(
                    "memory_working_set".into(),
                    format!(
                        "latency {} ({}), bandwidth {}{}",
                        mib(report.latency_bytes),
                        if report.evicted {
                            "evicted from the caches, one lap"
                        } else {
                            "steady-state chase"
                        },
                        mib(report.bandwidth_bytes),
                        if report.non_temporal {
                            ", non-temporal stores"
                        } else {
                            ""
                        }
                    ),
                );
                let section = memory_section(topo, &report, ghz);
                topo.set_memory(Some(section));
                report.cost
            }
            Plugin::CacheToCache => {
                let plan = c2c_plan(topo, budget).map_err(failed(plugin))?;
                let r = crate::probes::cache_to_cache::run(plan, &mut |s| {
                    progress(Progress::Step(s));
                })
                .map_err(failed(plugin))?;
                let cost = r.cost.clone();
                let mut section = topo.memory().cloned().unwrap_or_default();
                section.detail.cache_to_cache = Some(r);
                topo.set_memory(Some(section));
                cost
            }
            Plugin::Contention => {
                let (o, mut p) = contention_setup(topo, &shape, budget);
                let section = contention::measure_contention(topo, &o, |s| {
                    progress(Progress::Step(&format!("contention: {s}")));
                })
                .map_err(failed(Plugin::Contention))?;
                topo.set_contention(Some(section));
                spent_in_one(&mut p, started);
                p
            }
            Plugin::Power => {
                progress(Progress::Step("power"));
                let mut p = plan_plugin(plugin, &shape, Some(topo), os, budget);
                let plan = power::plan_power(&shape, &PowerOptions::default(), budget);
                match power::measure_power(topo, &plan.options) {
                    Ok(section) => {
                        topo.set_power(Some(section));
                        for n in &plan.notes {
                            topo.validation_mut()
                                .warnings
                                .push(Warning::new(WarningKind::Power, n.clone()));
                        }
                    }
                    Err(e) => match e.unavailable_reason() {
                        Some(reason) => topo.validation_mut().warnings.push(Warning::new(
                            WarningKind::Power,
                            format!("unavailable: {reason}"),
                        )),
                        None => return Err(failed(Plugin::Power)(e)),
                    },
                }
                spent_in_one(&mut p, started);
                p
            }
        };
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

    /// Three packages on nodes 0, 2 and 5 (sparse numbers, as memory-only nodes and
    /// sub-NUMA clusters leave them): CPUs 0-1, 2-3 and 4-5.
    fn sparse_nodes() -> OsView {
        use topoprobe_model::{OsCpu, OsNode};
        let node_of = |cpu: u32| [0, 2, 5][(cpu / 2) as usize];
        let cpu = |id: u32| OsCpu {
            id,
            package: i64::from(id / 2),
            die: None,
            core: i64::from(id % 2),
            cluster: None,
            thread_siblings: vec![id],
            core_siblings: vec![id - id % 2, id - id % 2 + 1],
            node: Some(node_of(id)),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        };
        let node = |id: u32, cpus: Vec<u32>, distances: Vec<u32>| OsNode {
            id,
            cpus,
            distances,
            memory_bytes: Some(1 << 30),
        };
        OsView {
            cpus: (0..6).map(cpu).collect(),
            nodes: Some(vec![
                node(0, vec![0, 1], vec![10, 20, 30]),
                node(2, vec![2, 3], vec![20, 10, 20]),
                node(5, vec![4, 5], vec![30, 20, 10]),
            ]),
            ..OsView::default()
        }
    }

    #[test]
    fn the_memory_notes_the_cost_record_carries_are_not_warned_twice() {
        let plan_note = "write and copy use non-temporal stores".to_string();
        let mut report = MemReport {
            latency: Vec::new(),
            bandwidth: Vec::new(),
            local_nodes: Vec::new(),
            notes: vec![plan_note.clone(), "socket 0: local node".into()],
            warnings: vec!["not trustworthy: x".into(), "not trustworthy: x".into()],
            latency_bytes: 64 << 20,
            evicted: true,
            bandwidth_bytes: 192 << 20,
            non_temporal: true,
            pairs: (1, 1),
            cost: CostPlan::of(Budget::new(15.0, 1 << 29), Vec::new(), vec![plan_note]),
            node_matrix: None,
            mixes: Vec::new(),
            saturation: Vec::new(),
            loaded_latency: Vec::new(),
        };
        let said: Vec<String> = memory_warnings(&report)
            .into_iter()
            .map(|w| w.message)
            .collect();
        assert_eq!(said, ["socket 0: local node", "not trustworthy: x"]);
        // Without a cost record to carry it, the note is a memory warning.
        report.cost.left_out.clear();
        assert_eq!(memory_warnings(&report).len(), 3);
    }

    #[test]
    fn the_memory_section_indexes_sparse_nodes_by_their_place_not_their_os_number() {
        use topoprobe_measure::memory::{BandwidthResult, LatencyResult};
        use topoprobe_model::NodeId;
        let topo = sparse_nodes().structure().expect("a structure");
        assert_eq!(topo.node_by_os_id(5), Some(NodeId(2)));
        assert_eq!(topo.node_by_os_id(1), None);
        assert_eq!(topo.node_os_number(NodeId(1)), 2);
        let lat = |node: u32, ns: f64| LatencyResult {
            cpu: 0,
            socket: 0,
            node,
            huge_ns: Some(ns),
            small_ns: None,
            scattered_ns: None,
            waited: None,
            huge_share: None,
        };
        let report = MemReport {
            latency: vec![lat(0, 90.0), lat(2, 140.0), lat(5, 200.0)],
            bandwidth: vec![BandwidthResult {
                socket: 2,
                node: 5,
                threads: 2,
                read: 30.0,
                write: 20.0,
                copy: 25.0,
                spread: 0.01,
                rounds: 3,
            }],
            local_nodes: vec![(0, 0)],
            notes: Vec::new(),
            warnings: Vec::new(),
            latency_bytes: 64 << 20,
            evicted: true,
            bandwidth_bytes: 192 << 20,
            non_temporal: false,
            pairs: (3, 9),
            cost: CostPlan::new(Budget::new(15.0, 1 << 29)),
            node_matrix: None,
            mixes: Vec::new(),
            saturation: Vec::new(),
            loaded_latency: Vec::new(),
        };
        let section = memory_section(&topo, &report, None);
        let nodes: Vec<(usize, f64)> = section
            .latency
            .iter()
            .map(|l| (l.node.0, l.latency))
            .collect();
        assert_eq!(nodes, [(0, 90.0), (1, 140.0), (2, 200.0)]);
        assert!(section.bandwidth.iter().all(|b| b.node == NodeId(2)));
        let ctx = topo.socket_contexts(SocketId(0)).to_vec();
        assert_eq!(section.latency_from(&ctx, NodeId(2)), Some(200.0));
        let mut t = topo.clone();
        t.set_memory(Some(section));
        assert_eq!(t.num_known_nodes(), 3, "no column for the numbers between");
        // A plan on the same OS view names the nodes by their OS numbers.
        let shape = Shape::from_os(&sparse_nodes(), &[]);
        let plan = memory::plan::plan_memory(&shape, &memory::MemOptions::default());
        let mut named: Vec<u32> = plan
            .steps
            .iter()
            .filter_map(|s| match s.work {
                memory::steps::MemWork::Latency { node, .. } => Some(node),
                _ => None,
            })
            .collect();
        named.sort_unstable();
        named.dedup();
        assert!(named.iter().all(|n| [0, 2, 5].contains(n)), "{named:?}");
        assert!(named.contains(&5), "{named:?}");
    }
}
