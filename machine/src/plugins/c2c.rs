//! The `c2c` plugin: cache-to-cache transfers by distance, line state and home node (what
//! `mem --c2c` measures), added to the memory section.

use topoprobe_measure::cache_to_cache::{self, C2cError, C2cPlan};
use topoprobe_measure::plan::Shape;
use topoprobe_model::{Budget, CostPlan, OsView, Topology};

use super::{failed, nothing, Plugin, RunContext};
use crate::{MachineError, Progress};

/// The `c2c` plugin's transfers on `topo` within `budget`.
///
/// # Errors
///
/// [`C2cError`] (none with the default rounds).
fn c2c_plan(topo: &Topology, budget: Budget) -> Result<C2cPlan, C2cError> {
    cache_to_cache::plan(topo, cache_to_cache::DEFAULT_ROUNDS, budget)
}

/// The plan of the transfers on the measured topology, or before the latencies are
/// measured on the OS's view of it.
pub(super) fn plan(
    plugin: Plugin,
    _shape: &Shape,
    topo: Option<&Topology>,
    os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
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

/// Measures the transfers and adds them to the memory section.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    let plan = c2c_plan(cx.topo, budget).map_err(failed(plugin))?;
    let progress = &mut *cx.progress;
    let r = crate::probes::cache_to_cache::run(plan, &mut |s| {
        progress(Progress::Step(s));
    })
    .map_err(failed(plugin))?;
    let cost = r.cost.clone();
    let mut section = cx.topo.memory().cloned().unwrap_or_default();
    section.detail.cache_to_cache = Some(r);
    cx.topo.set_memory(Some(section));
    Ok(cost)
}
