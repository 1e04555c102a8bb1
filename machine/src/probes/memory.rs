//! Memory latency and bandwidth (`topoprobe mem`) from every socket to every node, planned
//! within the budget from the topology.

use std::path::PathBuf;

use topoprobe_measure::cache::check::size_text;
use topoprobe_measure::memory::plan::{plan_memory, MemPlan};
use topoprobe_measure::memory::{self, LatencyResult, MemOptions, MemReport};
use topoprobe_measure::pages::HugePages;
use topoprobe_measure::plan::Shape;
use topoprobe_measure::timer::Timer;
use topoprobe_model::results::memory::{LocalNode, MemoryLatencyRow, MemoryResult, MemoryRow};
use topoprobe_model::{CostPlan, MemoryDetail};

use crate::{MachineError, Progress};

/// What to measure: the measurement's own options and what only this machine's workflow
/// adds to them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemRequest {
    /// The measurement's options. Its working set is checked before any work (at least
    /// [`memory::MIN_SIZE`], no more than the memory available now), as its thread count
    /// (no more than a socket's contexts); its `ghz` is the timer's, set when the
    /// measurement runs.
    pub options: MemOptions,
    /// The topology giving the sockets (`None`: this machine's description).
    pub topology: Option<PathBuf>,
    /// How the budget was chosen, for the plan ([`super::budget_here`]; `None`: not
    /// said).
    pub budget_basis: Option<String>,
}

/// What the cgroup cpuset keeps this process from measuring: its disallowed CPUs and
/// memory nodes, in one sentence (empty when it allows everything).
fn confinement(os: &topoprobe_model::OsView) -> String {
    let (cpus, nodes) = (os.disallowed(), os.disallowed_nodes());
    let mut parts = Vec::new();
    if !cpus.is_empty() {
        parts.push(format!("CPUs {}", topoprobe_model::format_cpu_list(&cpus)));
    }
    if !nodes.is_empty() {
        parts.push(format!(
            "memory nodes {}",
            topoprobe_model::format_cpu_list(&nodes)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "{} are outside this process's cgroup cpuset and are not measured",
        parts.join(" and ")
    )
}

/// The note of a topology that is the OS's view (no description), the topology's shape and
/// the options, checked.
fn prepare(
    req: &MemRequest,
    ghz: Option<f64>,
) -> Result<(Option<String>, Shape, MemOptions), MachineError> {
    if let Some(size) = req.options.size.filter(|&s| s < memory::MIN_SIZE) {
        return Err(MachineError::Request(format!(
            "a working set of {} cannot measure memory: a chase through so few lines times \
             the timer and the prefetchers (give {} at least)",
            size_text(size),
            size_text(memory::MIN_SIZE)
        )));
    }
    if let (Some(size), Some(available)) =
        (req.options.size, topoprobe_measure::os::available_bytes())
    {
        if size > available {
            return Err(MachineError::Request(format!(
                "a working set of {} is more than the {} of memory this machine has available \
                 now (MemAvailable of /proc/meminfo): the measurement would swap or be killed \
                 for memory; give a smaller --size",
                size_text(size),
                size_text(available)
            )));
        }
    }
    let (topo, note) = super::topology(req.topology.as_deref())?;
    if let Some(t) = req.options.threads {
        let max = topo
            .sockets()
            .iter()
            .map(|s| s.contexts.len())
            .max()
            .unwrap_or(0);
        if t > max {
            return Err(MachineError::Request(format!(
                "--threads {t}: a socket of this machine has at most {}",
                topoprobe_model::format::plural(max, "context")
            )));
        }
    }
    let os = super::os_view();
    let shape = Shape::from_topology(&topo, os.as_ref()).at_this_machines_speed();
    let confined = os.as_ref().map(confinement).filter(|s| !s.is_empty());
    let note = match (note, confined) {
        (Some(n), Some(c)) => Some(format!("{n}; {c}")),
        (n, c) => n.or(c),
    };
    let opts = MemOptions {
        ghz,
        ..req.options.clone()
    };
    Ok((note, shape, opts))
}

/// The plan of the measurement.
///
/// # Errors
///
/// [`MachineError::Request`] for a working set below [`memory::MIN_SIZE`] or above the
/// memory available now, or more threads than a socket has; [`MachineError::OverBudget`]
/// for a working set whose plan needs more than the memory budget; the errors of loading the
/// topology ([`crate::load::topology_or_os`]: without a description, the OS's view is
/// measured and the result's notes say so).
pub fn plan(req: &MemRequest) -> Result<CostPlan, MachineError> {
    let (_, shape, opts) = prepare(req, None)?;
    let mut cost = plan_memory(&shape, &opts).cost();
    cost.basis.clone_from(&req.budget_basis);
    super::size_within_budget(&cost, "--size", req.options.size)?;
    Ok(cost)
}

/// Measures memory on this machine, reporting the plan and its steps to `progress`.
///
/// # Errors
///
/// As [`plan`]; [`MachineError::Measure`] when a measurement cannot run (a thread cannot
/// be pinned, a buffer cannot be allocated or bound).
pub fn measure(
    req: &MemRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<MemoryResult, MachineError> {
    let (note, shape, mut opts) = prepare(req, None)?;
    opts.ghz = Timer::calibrate().cycle_ghz();
    let mut plan: MemPlan = plan_memory(&shape, &opts);
    super::size_within_budget(&plan.cost(), "--size", req.options.size)?;
    progress(Progress::Plan(&plan.cost()));
    let report = memory::run_plan(&shape, &mut plan, &opts, |s| progress(Progress::Step(s)))
        .map_err(MachineError::measuring("measuring memory"))?;
    progress(Progress::StepsDone);
    let mut r = result(&report, &opts, shape.largest_llc());
    r.cost.basis.clone_from(&req.budget_basis);
    r.notes.extend(note);
    r.hmat = firmware_figures(&r);
    Ok(r)
}

/// What ACPI HMAT says of the nodes `r` measured (empty without HMAT).
fn firmware_figures(r: &MemoryResult) -> Vec<topoprobe_model::OsHmatAccess> {
    let Some(os) = super::os_view() else {
        return Vec::new();
    };
    os.hmat
        .into_iter()
        .filter(|h| r.results.iter().any(|row| row.node == h.node))
        .collect()
}

/// `mem --full`'s figures of a measurement, as the `mem` result and the description's
/// memory section both hold them (no transfers: `--c2c` adds them after).
#[must_use]
pub fn detail(r: &MemReport) -> MemoryDetail {
    MemoryDetail {
        node_matrix: r.node_matrix.clone(),
        mixes: r.mixes.clone(),
        saturation: r.saturation.clone(),
        loaded_latency: r.loaded_latency.clone(),
        cache_to_cache: None,
    }
}

/// How the latency buffer was chased, for people.
fn latency_method(r: &MemReport) -> String {
    if r.evicted {
        format!(
            "random chase in 256 KiB windows over {}, evicted from every cache first, one lap",
            size_text(r.latency_bytes)
        )
    } else {
        format!(
            "random chase in 256 KiB windows over {} in its steady state",
            size_text(r.latency_bytes)
        )
    }
}

/// The result of a measurement with `opts` on sockets whose last-level cache is `llc`.
fn result(r: &MemReport, opts: &MemOptions, llc: Option<u64>) -> MemoryResult {
    let cycles = |ns: f64| opts.ghz.map(|g| ns * g);
    let finite = |x: f64| x.is_finite().then_some(x);
    let mut results = Vec::new();
    for b in &r.bandwidth {
        let lat = r
            .latency
            .iter()
            .filter(|l| l.socket == b.socket && l.node == b.node)
            .map(LatencyResult::ns)
            .min_by(f64::total_cmp);
        results.push(MemoryRow {
            socket: b.socket,
            node: b.node,
            threads: b.threads,
            latency_ns: lat,
            latency_cycles: lat.and_then(cycles),
            read_gbps: finite(b.read),
            write_gbps: finite(b.write),
            copy_gbps: finite(b.copy),
            spread: Some(b.spread),
            rounds: Some(b.rounds),
        });
    }
    if r.bandwidth.is_empty() {
        for l in &r.latency {
            results.push(MemoryRow {
                socket: l.socket,
                node: l.node,
                threads: 1,
                latency_ns: finite(l.ns()),
                latency_cycles: cycles(l.ns()),
                read_gbps: None,
                write_gbps: None,
                copy_gbps: None,
                spread: None,
                rounds: None,
            });
        }
    }
    // Whether the huge pages were granted, said as `cache` says it (one verdict).
    let huge_share = r
        .latency
        .iter()
        .filter_map(|l| l.huge_share)
        .min_by(f64::total_cmp);
    let mut notes = r.notes.clone();
    if huge_share.is_some() {
        notes.extend(
            HugePages::of_share(huge_share, "latency buffer")
                .note("latency buffer", "its latency includes 4 KiB page walks"),
        );
    }
    MemoryResult {
        results,
        latency: r
            .latency
            .iter()
            .map(|l| MemoryLatencyRow {
                cpu: l.cpu,
                socket: l.socket,
                node: l.node,
                huge_pages_ns: l.huge_ns,
                small_pages_ns: l.small_ns,
                scattered_ns: l.scattered_ns,
                huge_pages_share: l.huge_share,
            })
            .collect(),
        local_nodes: r
            .local_nodes
            .iter()
            .map(|&(socket, node)| LocalNode { socket, node })
            .collect(),
        isa: opts.isa.name().to_string(),
        working_set_bytes: r.latency_bytes,
        working_set: latency_method(r),
        evicted: r.evicted,
        huge_pages_share: huge_share,
        bandwidth_working_set_bytes: (!opts.latency_only).then_some(r.bandwidth_bytes),
        non_temporal: r.non_temporal,
        last_level_cache_bytes: llc,
        memory_reached: r.evicted || llc.is_none_or(|l| r.latency_bytes >= 2 * l),
        pairs_measured: r.pairs.0,
        pairs_total: r.pairs.1,
        ghz: opts.ghz,
        warnings: r.warnings.clone(),
        notes,
        cost: r.cost.clone(),
        hmat: Vec::new(),
        detail: detail(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::Budget;

    #[test]
    fn a_working_set_too_small_for_memory_is_refused_before_anything_is_loaded() {
        let e = plan(&MemRequest {
            options: MemOptions {
                size: Some(1024),
                ..MemOptions::default()
            },
            topology: Some(PathBuf::from("/nonexistent/t.json")),
            ..MemRequest::default()
        })
        .unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string()
                .starts_with("a working set of 1 KiB cannot measure memory"),
            "{e}"
        );
    }

    #[test]
    fn a_chase_the_caches_can_hold_is_not_memory() {
        let report = MemReport {
            latency: vec![LatencyResult {
                cpu: 0,
                socket: 0,
                node: 0,
                huge_ns: Some(7.0),
                small_ns: None,
                scattered_ns: None,
                waited: None,
                huge_share: None,
            }],
            bandwidth: Vec::new(),
            local_nodes: vec![(0, 0)],
            notes: Vec::new(),
            warnings: vec!["latency: lines cannot be evicted".into()],
            latency_bytes: 16 << 20,
            evicted: false,
            bandwidth_bytes: 16 << 20,
            non_temporal: false,
            pairs: (1, 1),
            cost: CostPlan::new(Budget::new(1.0, 1 << 30)),
            node_matrix: None,
            mixes: Vec::new(),
            saturation: Vec::new(),
            loaded_latency: Vec::new(),
        };
        let opts = MemOptions {
            latency_only: true,
            ..MemOptions::default()
        };
        let r = result(&report, &opts, Some(32 << 20));
        assert!(!r.memory_reached);
        assert_eq!(
            r.working_set,
            "random chase in 256 KiB windows over 16 MiB in its steady state"
        );
        assert_eq!(r.results[0].latency_ns, Some(7.0));
        assert_eq!(r.bandwidth_working_set_bytes, None);
        let mut report = MemReport {
            evicted: true,
            ..report
        };
        let evicted = result(&report, &opts, Some(32 << 20));
        assert!(evicted.memory_reached);
        assert_eq!(
            evicted.huge_pages_share, None,
            "no share read: nothing said"
        );
        // The share of the buffer on huge pages is said, as `cache` says it.
        report.latency[0].huge_share = Some(0.2);
        let refused = result(&report, &opts, Some(32 << 20));
        assert_eq!(refused.huge_pages_share, Some(0.2));
        assert!(
            refused.notes.iter().any(|n| n
                == "huge pages were not used (the kernel backed only 20% of the latency buffer \
                    with huge pages): its latency includes 4 KiB page walks"),
            "{:?}",
            refused.notes
        );
        report.latency[0].huge_share = Some(1.0);
        let granted = result(&report, &opts, Some(32 << 20));
        assert_eq!(granted.huge_pages_share, Some(1.0));
        assert!(granted.notes.is_empty(), "{:?}", granted.notes);
    }
}
