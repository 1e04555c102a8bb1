//! The `cache` plugin: cache sizes and latencies, walked on the first context of the
//! machine, set beside the OS's caches.

use topoprobe_measure::cache::{self, CacheOptions};
use topoprobe_measure::plan::Shape;
use topoprobe_model::{Budget, CostPlan, OsView, Topology, Warning, WarningKind};

use super::{failed, Plugin, RunContext};
use crate::{MachineError, Progress};

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
        rates: shape.rates(),
        ..CacheOptions::quick(shape.first_cpu().unwrap_or(0), os)
    }
}

/// The plan of the walk on a machine of `shape` within `budget`.
pub(super) fn plan(
    _plugin: Plugin,
    shape: &Shape,
    _topo: Option<&Topology>,
    os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    let o = cache_options(shape, os, budget, None);
    cache::plan_caches(&shape.cache_levels, shape.huge_pages, &o).cost()
}

/// Walks the caches and records the section, its notes as warnings.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    (cx.progress)(Progress::Step("caches: walk on huge pages"));
    let report = cache::measure_caches(cx.os, &cache_options(&cx.shape, cx.os, budget, cx.ghz))
        .map_err(failed(plugin))?;
    for n in &report.notes {
        cx.topo
            .validation_mut()
            .warnings
            .push(Warning::new(WarningKind::Cache, n.clone()));
    }
    cx.topo.set_caches(Some(report.section));
    Ok(report.cost)
}
