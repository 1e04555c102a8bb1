//! The `power` plugin: RAPL power under libmctop's load states, or a warning saying why
//! power is unavailable here.

use topoprobe_measure::plan::Shape;
use topoprobe_measure::power::{self, PowerOptions};
use topoprobe_model::{Budget, CostPlan, OsView, Topology, Warning, WarningKind};

use super::{failed, nothing, spent_in_one, Plugin, RunContext};
use crate::{MachineError, Progress};

/// The plan of the load states on a machine of `shape`, or a step of no cost saying why
/// power cannot be measured.
pub(super) fn plan(
    plugin: Plugin,
    shape: &Shape,
    _topo: Option<&Topology>,
    _os: Option<&OsView>,
    budget: Budget,
) -> CostPlan {
    match &shape.power_unavailable {
        None => power::plan_power(shape, &PowerOptions::default(), budget).cost(),
        Some(why) => nothing(plugin, budget, why.clone()),
    }
}

/// Measures power and records the section with the plan's notes; where power is
/// unavailable, a warning says why.
pub(super) fn run(
    cx: &mut RunContext<'_>,
    plugin: Plugin,
    budget: Budget,
) -> Result<CostPlan, MachineError> {
    (cx.progress)(Progress::Step("power"));
    let mut p = plan(plugin, &cx.shape, Some(&*cx.topo), cx.os, budget);
    let plan = power::plan_power(&cx.shape, &PowerOptions::default(), budget);
    let topo = &mut *cx.topo;
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
            None => return Err(failed(plugin)(e)),
        },
    }
    spent_in_one(&mut p, cx.started);
    Ok(p)
}
