//! Power (`topoprobe power`): RAPL energy of every socket under libmctop's load states
//! (idle, one context, a second core, a second context, all cores, all contexts).
//!
//! Availability is checked before this machine's description is loaded, so that a
//! machine without usable energy counters says so even where no description exists yet:
//! the result then carries the reason ([`PowerResult::unavailable`]) and nothing else. A
//! topology file named in the request is read first, and refused when bad.

use std::path::PathBuf;
use std::time::Duration;

use topoprobe_measure::plan::Shape;
use topoprobe_measure::power::{self, PowerError, PowerOptions};
use topoprobe_model::results::power::PowerResult;
use topoprobe_model::{Budget, CostPlan, CostStep};

use crate::{MachineError, Progress};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerRequest {
    /// How long each load state is measured.
    pub duration: Duration,
    /// The powercap tree to read RAPL zones from (`None`: `/sys/class/powercap`).
    pub powercap_root: Option<PathBuf>,
    /// The machine's topology (`None`: this machine's description).
    pub topology: Option<PathBuf>,
    /// Time and memory the measurement may take.
    pub budget: Budget,
}

impl Default for PowerRequest {
    fn default() -> Self {
        Self {
            duration: PowerOptions::default().duration,
            powercap_root: None,
            topology: None,
            budget: super::DEFAULT_BUDGET,
        }
    }
}

impl PowerRequest {
    /// The measurement's options.
    fn options(&self) -> PowerOptions {
        let mut opts = PowerOptions {
            duration: self.duration,
            ..PowerOptions::default()
        };
        if let Some(root) = &self.powercap_root {
            opts.powercap_root.clone_from(root);
        }
        opts
    }
}

/// A power error: unavailable (`Ok` with the reason), or a failure.
fn unavailable(e: PowerError) -> Result<String, MachineError> {
    match e.unavailable_reason() {
        Some(reason) => Ok(reason.to_string()),
        None => Err(MachineError::measuring("measuring power")(e)),
    }
}

/// The plan of the measurement: one step per socket, or, without usable counters, one
/// step of no cost saying why.
///
/// # Errors
///
/// [`MachineError::Measure`] when a counter file is malformed; the errors of loading the
/// topology ([`crate::load::topology_or_os`]).
pub fn plan(req: &PowerRequest) -> Result<CostPlan, MachineError> {
    let opts = req.options();
    // A file named is read first, and refused when bad, whatever the counters; this
    // machine's description is looked for only once the counters are known usable.
    let named = req
        .topology
        .as_deref()
        .map(|p| super::topology(Some(p)))
        .transpose()?;
    if let Err(e) = power::check_available(&opts) {
        let mut plan = CostPlan::new(req.budget);
        let mut step = CostStep::new("power", "power", 0, 0, 0.0);
        step.note = Some(format!("unavailable: {}", unavailable(e)?));
        plan.steps.push(step);
        return Ok(plan);
    }
    let (topo, _) = match named {
        Some(t) => t,
        None => super::topology(None)?,
    };
    let shape = Shape::from_topology(&topo, super::os_view().as_ref()).at_this_machines_speed();
    let mut plan = power::plan_power(&shape, &opts, req.budget).cost();
    plan.speed = shape.speed.note();
    Ok(plan)
}

/// Measures power on this machine, reporting the plan and its steps to `progress`. Where
/// no energy counters can be used (none, no permission, counters that do not count), the
/// result says why and holds no figures.
///
/// # Errors
///
/// [`MachineError::Measure`] when a counter file is malformed, the sockets cannot be
/// matched with the RAPL packages or the load cannot run; the errors of loading the
/// topology ([`crate::load::topology_or_os`]).
pub fn measure(
    req: &PowerRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<PowerResult, MachineError> {
    let opts = req.options();
    // A file named is read first, and refused when bad, whatever the counters; this
    // machine's description is looked for only once the counters are known usable.
    let named = req
        .topology
        .as_deref()
        .map(|p| super::topology(Some(p)))
        .transpose()?;
    if let Err(e) = power::check_available(&opts) {
        return unavailable(e).map(PowerResult::unavailable);
    }
    let (topo, note) = match named {
        Some(t) => t,
        None => super::topology(None)?,
    };
    let shape = Shape::from_topology(&topo, super::os_view().as_ref()).at_this_machines_speed();
    let plan = power::plan_power(&shape, &opts, req.budget);
    super::started(&plan.cost(), progress);
    let measured = power::measure_power_report(&topo, &plan.options);
    progress(Progress::StepsDone);
    match measured {
        Ok(report) => Ok(PowerResult {
            unavailable: None,
            source: Some(report.source),
            seconds_per_state: Some(report.seconds_per_state),
            cores_measured: report.cores_measured,
            dram_measured: report.dram_measured,
            entries: report.section.entries,
            notes: plan.notes.into_iter().chain(note).collect(),
        }),
        Err(e) => unavailable(e).map(PowerResult::unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_powercap_tree_is_unavailable_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        if power::perf::discover(std::path::Path::new("/sys/bus/event_source/devices")).is_ok() {
            return; // the perf power events would be used after powercap
        }
        let req = PowerRequest {
            powercap_root: Some(dir.path().to_path_buf()),
            ..PowerRequest::default()
        };
        let r = measure(&req, &mut |_| {}).expect("unavailable is a result");
        assert!(!r.measured());
        assert!(
            r.unavailable
                .as_deref()
                .is_some_and(|u| u.starts_with("no RAPL zones under ")),
            "{r:?}"
        );
        let p = plan(&req).expect("plan");
        assert!(p.steps[0]
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("unavailable: ")));
    }
}
