//! Cache sizes and latencies (`topoprobe cache`): arrays of growing size walked on one
//! context, the levels found set beside the OS's, and with `shared` which contexts share
//! each level (concurrent walks on contexts chosen from the topology).

use std::path::PathBuf;

use topoprobe_measure::cache::check::size_text;
use topoprobe_measure::cache::{self, CacheOptions, CacheReport, HugePages, Method, Pages};
use topoprobe_measure::plan::Shape;
use topoprobe_measure::timer::Timer;
use topoprobe_model::results::cache::{
    CacheAgreement, CacheLevelResult, CacheResult, CurveSample, LevelSharingResult, TlbResult,
};
use topoprobe_model::{Budget, CostPlan, OsView, Topology};

use crate::plugins::{measure_sharing, plan_plugin, shared_setup, Plugin};
use crate::{MachineError, Progress};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheRequest {
    /// The CPU to walk on (OS number; `None`: the first this process may use).
    pub cpu: Option<u32>,
    /// Largest array walked, bytes (`None`: 4 × the largest cache the OS reports, between
    /// 64 MiB and 1 GiB); at least [`cache::MIN_MAX_BYTES`].
    pub max_bytes: Option<u64>,
    /// Which pages the arrays are walked on.
    pub pages: Pages,
    /// Also find which contexts share each level.
    pub shared: bool,
    /// The topology the sharing test chooses its contexts from (`None`: this machine's
    /// description).
    pub topology: Option<PathBuf>,
    /// Return the measured curve too.
    pub curve: bool,
    /// Time and memory the measurement may take.
    pub budget: Budget,
    /// How the budget was chosen, for the plan ([`super::budget_here`]; `None`: not
    /// said).
    pub budget_basis: Option<String>,
}

impl Default for CacheRequest {
    fn default() -> Self {
        Self {
            cpu: None,
            max_bytes: None,
            pages: Pages::Both,
            shared: false,
            topology: None,
            curve: false,
            budget: cache::DEFAULT_BUDGET,
            budget_basis: None,
        }
    }
}

/// Checks the request before any work: the CPU, and a largest array the walk can keep to.
fn check(req: &CacheRequest) -> Result<u32, MachineError> {
    if let Some(max) = req.max_bytes.filter(|&m| m < cache::MIN_MAX_BYTES) {
        return Err(MachineError::Request(format!(
            "arrays up to {} are too small to find a cache: the walk needs {} at least (its \
             first sizes find the L1 up to there)",
            size_text(max),
            size_text(cache::MIN_MAX_BYTES)
        )));
    }
    super::one_cpu(req.cpu)
}

/// The walk's options on `cpu`.
fn options(req: &CacheRequest, cpu: u32, ghz: Option<f64>) -> CacheOptions {
    CacheOptions {
        cpu,
        max_bytes: req.max_bytes,
        ghz,
        pages: req.pages,
        budget: req.budget,
        rates: topoprobe_measure::this_machine_speed(&[cpu]).rates(),
        ..CacheOptions::default()
    }
}

/// The plan of the walk (and of the sharing test on `topo`).
fn plan_with(opts: &CacheOptions, view: Option<&OsView>, topo: Option<&Topology>) -> CostPlan {
    let levels = view.map_or_else(Vec::new, |os| {
        topoprobe_measure::plan::cache_sizes(os, opts.cpu)
    });
    let mut plan =
        cache::plan_caches(&levels, topoprobe_measure::memory::thp_available(), opts).cost();
    plan.speed = topoprobe_measure::this_machine_speed(&[opts.cpu]).note();
    if let Some(topo) = topo {
        let shape = Shape::from_topology(topo, view).at_this_machines_speed();
        plan.extend(plan_plugin(
            Plugin::SharedCaches,
            &shape,
            None,
            view,
            opts.budget,
        ));
    }
    plan
}

/// The topology of the sharing test, when it is asked for; a topology file given without
/// `shared` is read all the same (a file named is never ignored: a bad one is refused),
/// and not used.
fn sharing_topology(
    req: &CacheRequest,
) -> Result<Option<(Topology, Option<String>)>, MachineError> {
    if !req.shared {
        if let Some(p) = req.topology.as_deref() {
            super::topology(Some(p))?;
        }
        return Ok(None);
    }
    super::topology(req.topology.as_deref()).map(Some)
}

/// The plan of the measurement.
///
/// # Errors
///
/// [`MachineError::Cpus`] for a CPU this process may not use; [`MachineError::Request`]
/// for a largest array below [`cache::MIN_MAX_BYTES`]; with `shared`, the errors of
/// loading the topology ([`crate::load::topology_or_os`]).
pub fn plan(req: &CacheRequest) -> Result<CostPlan, MachineError> {
    let cpu = check(req)?;
    let topo = sharing_topology(req)?.map(|(t, _)| t);
    let view = super::os_view();
    let mut plan = plan_with(&options(req, cpu, None), view.as_ref(), topo.as_ref());
    plan.basis.clone_from(&req.budget_basis);
    Ok(plan)
}

/// Measures the caches on this machine, reporting the plan and its steps to `progress`.
///
/// # Errors
///
/// As [`plan`]; [`MachineError::Measure`] when the walk cannot run (the thread cannot be
/// pinned, the array cannot be allocated); [`MachineError::Plugin`] when a sharing walk
/// cannot run.
pub fn measure(
    req: &CacheRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CacheResult, MachineError> {
    let cpu = check(req)?;
    let (topo, note) = sharing_topology(req)?.unzip();
    let view = super::os_view();
    let timer = Timer::calibrate();
    let opts = options(req, cpu, timer.cycle_ghz());
    let mut planned = plan_with(&opts, view.as_ref(), topo.as_ref());
    planned.basis.clone_from(&req.budget_basis);
    super::started(&planned, progress);
    let mut report = cache::measure_caches(view.as_ref(), &opts).map_err(
        MachineError::measuring(format!("measuring the caches on CPU {cpu}")),
    )?;
    let mut sharing = None;
    let mut differences = None;
    report.notes.extend(note.flatten());
    if let Some(mut topo) = topo {
        topo.set_caches(Some(report.section.clone()));
        let shape = Shape::from_topology(&topo, view.as_ref()).at_this_machines_speed();
        let left = opts
            .budget
            .with_seconds((opts.budget.seconds - report.seconds).max(1.0));
        let (sharing_opts, plan) = shared_setup(&topo, view.as_ref(), &shape, left);
        if let Some(first) = plan.steps.first() {
            progress(Progress::Step(&first.what));
        }
        report.notes.extend(plan.left_out);
        let tests = measure_sharing(&topo, view.as_ref(), &mut report.section, &sharing_opts)?;
        sharing = Some(
            tests
                .into_iter()
                .map(|(level, t)| LevelSharingResult {
                    level,
                    shared_by: t.shared_by,
                    test: t.test,
                    warning: t.warning,
                })
                .collect(),
        );
        differences = Some(match &view {
            Some(v) => {
                topo.set_caches(Some(report.section.clone()));
                topoprobe_infer::compare::section_differences(&topo, v)
            }
            None => Vec::new(),
        });
    }
    progress(Progress::StepsDone);
    let mut r = result(&report, cpu, req.curve, sharing, differences);
    r.cost.basis.clone_from(&req.budget_basis);
    Ok(r)
}

/// The result of a walk on `cpu`.
fn result(
    report: &CacheReport,
    cpu: u32,
    curve: bool,
    sharing_tests: Option<Vec<LevelSharingResult>>,
    os_differences: Option<Vec<topoprobe_model::OsDifference>>,
) -> CacheResult {
    let levels = report
        .section
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| CacheLevelResult {
            level: l.level,
            name: l.name(),
            kind: l.kind,
            size_bytes: l.measured_size_kib.map(|k| k * 1024),
            os_size_bytes: l.os_size_kib.map(|k| k * 1024),
            latency_ns: l.latency,
            latency_cycles: l.cycles,
            line_bytes: l.line_bytes,
            method: method(report, i),
            agreement: report.checks.get(i).map(|c| c.agreement),
            shared_by: l.shared_by.clone(),
        })
        .collect();
    let curve = curve.then(|| {
        report
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| CurveSample {
                size_bytes: s.bytes,
                ns: s.ns,
                ns_4k_pages: report
                    .small_pages
                    .as_ref()
                    .and_then(|v| v.get(i))
                    .map(|x| x.ns),
            })
            .collect()
    });
    CacheResult {
        cpu,
        levels,
        memory_ns: report.found.last().map(|f| f.miss_ns),
        notes: report.notes.clone(),
        seconds: report.seconds,
        max_bytes: report.max_bytes,
        sizes_walked: report.samples.len(),
        pages: pages(report),
        cost: report.cost.clone(),
        tlb: report
            .tlb
            .iter()
            .map(|t| TlbResult {
                page_bytes: t.page_bytes,
                reach_bytes: t.reach_bytes,
                entries: t.entries(),
                extra_ns: t.extra_ns,
            })
            .collect(),
        sharing_tests,
        os_differences,
        curve,
    }
}

/// How a level's size was found and how it compares with the OS's, for people.
fn method(report: &CacheReport, index: usize) -> String {
    let Some(check) = report.checks.get(index) else {
        return String::new();
    };
    let how = match check.found.map(|f| f.method) {
        None => return check.agreement.describe().to_string(),
        Some(Method::Step) => "step",
        Some(Method::Probabilistic) => "probabilistic",
        Some(Method::Incomplete) => "probabilistic (curve still rising)",
    };
    match (check.agreement, check.found) {
        (CacheAgreement::Explains, Some(f)) => format!(
            "{how}, {} (fit alone: {})",
            check.agreement.describe(),
            size_text(f.bytes)
        ),
        (a, _) => format!("{how}, {}", a.describe()),
    }
}

/// Which pages the arrays were walked on, for people.
fn pages(report: &CacheReport) -> String {
    match &report.huge_pages {
        HugePages::Granted { fraction } => format!(
            "huge pages ({:.0}% of the array){}",
            fraction * 100.0,
            if report.small_pages.is_some() {
                ", then 4 KiB pages"
            } else {
                ""
            }
        ),
        HugePages::Unavailable(_) => "4 KiB pages".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked_before_any_work() {
        let e = plan(&CacheRequest {
            max_bytes: Some(1),
            ..CacheRequest::default()
        })
        .unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string().starts_with(
                "arrays up to 1 B are too small to find a cache: the walk needs 256 KiB"
            ),
            "{e}"
        );
        let e = plan(&CacheRequest {
            cpu: Some(100_000),
            ..CacheRequest::default()
        })
        .unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string().starts_with("CPU 100000 is not available"),
            "{e}"
        );
    }
}
