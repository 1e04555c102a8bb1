//! The memory plugins: `mem` (latency and bandwidth), `mem-latency` (latency only) and
//! `mem-full` (with the node × node matrices, the read/write mixes, the saturating thread
//! counts and the loaded-latency curves), one memory measurement each.

use topoprobe_measure::memory::{self, MemOptions, MemReport};
use topoprobe_measure::plan::Shape;
use topoprobe_model::{
    size_text, Access, Budget, CostPlan, LatencyUnit, MemoryBandwidth, MemoryLatency,
    MemorySection, OsView, SocketId, Threads, Topology, Warning, WarningKind,
};

use super::{failed, Plugin, RunContext};
use crate::{MachineError, Progress};

/// The options of the memory plugin `plugin` (`mem`, `mem-latency` or `mem-full`) within
/// `budget`.
fn mem_options(budget: Budget, plugin: Plugin, ghz: Option<f64>) -> MemOptions {
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

/// The plan of the measurement `plugin` (`mem`, `mem-latency` or `mem-full`) on a machine
/// of `shape` within `budget`.
pub(super) fn plan(
    plugin: Plugin,
    shape: &Shape,
    _topo: Option<&Topology>,
    _os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    let o = mem_options(budget, plugin, None);
    memory::plan::plan_memory(shape, &o).cost()
}

/// Measures memory and records the section, the working set in the provenance and the
/// measurement's notes as warnings.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    let o = mem_options(budget, plugin, cx.ghz);
    let progress = &mut *cx.progress;
    let report = memory::measure_memory(&cx.shape, &o, |s| progress(Progress::Step(s)))
        .map_err(failed(plugin))?;
    let topo = &mut *cx.topo;
    topo.validation_mut()
        .warnings
        .extend(memory_warnings(&report));
    topo.provenance_mut().parameters.insert(
        "memory_working_set".into(),
        format!(
            "latency {} ({}), bandwidth {}{}",
            size_text(report.latency_bytes),
            if report.evicted {
                "evicted from the caches, one lap"
            } else {
                "steady-state chase"
            },
            size_text(report.bandwidth_bytes),
            if report.non_temporal {
                ", non-temporal stores"
            } else {
                ""
            }
        ),
    );
    let section = memory_section(topo, &report, cx.ghz);
    topo.set_memory(Some(section));
    Ok(report.cost)
}

#[cfg(test)]
mod tests {
    use super::*;

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
