//! Memory-access overhead groups and bandwidth scalability (`topoprobe contention`):
//! pairs of contexts copying at the same time, chosen from the topology, and the
//! bandwidth of a socket as threads are added.

use std::path::PathBuf;
use std::time::Instant;

use topoprobe_measure::contention::{self, ContentionOptions};
use topoprobe_measure::plan::Shape;
use topoprobe_model::results::contention::ContentionResult;
use topoprobe_model::{Budget, CostPlan, Topology};

use crate::plugins::{contention_plan_with, contention_setup, spent_in_one};
use crate::{MachineError, Progress};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentionRequest {
    /// Working set of each copy measurement, all threads together, bytes (`None`: 6 × the
    /// last-level cache within the memory budget, smaller when time is short).
    pub size: Option<u64>,
    /// The topology the pairs are chosen from (`None`: this machine's description).
    pub topology: Option<PathBuf>,
    /// Time and memory the measurement may take.
    pub budget: Budget,
    /// How the budget was chosen, for the plan ([`super::budget_here`]; `None`: not
    /// said).
    pub budget_basis: Option<String>,
}

impl Default for ContentionRequest {
    fn default() -> Self {
        Self {
            size: None,
            topology: None,
            budget: super::DEFAULT_BUDGET,
            budget_basis: None,
        }
    }
}

/// The topology (with the note of the OS's view, when no description is saved), the
/// options and the plan.
fn planned(
    req: &ContentionRequest,
) -> Result<(Topology, Option<String>, ContentionOptions, CostPlan), MachineError> {
    let (topo, note) = super::topology(req.topology.as_deref())?;
    let shape = Shape::from_topology(&topo, super::os_view().as_ref()).at_this_machines_speed();
    let (mut opts, mut plan) = contention_setup(&topo, &shape, req.budget);
    if let Some(size) = req.size {
        // The size asked for, planned again (the working set decides each step's cost).
        opts = ContentionOptions {
            total_bytes: Some(size),
            max_total_bytes: size,
            ..opts
        };
        plan = contention_plan_with(&topo, &opts, &shape.speed, req.budget);
    }
    plan.basis.clone_from(&req.budget_basis);
    plan.speed = shape.speed.note();
    super::size_within_budget(&plan, "--size", req.size)?;
    Ok((topo, note, opts, plan))
}

/// The plan of the measurement.
///
/// # Errors
///
/// The errors of loading the topology ([`crate::load::topology_or_os`]);
/// [`MachineError::OverBudget`] for a `size` whose plan needs more than the memory budget.
pub fn plan(req: &ContentionRequest) -> Result<CostPlan, MachineError> {
    planned(req).map(|(_, _, _, plan)| plan)
}

/// Measures contention on this machine, reporting the plan and its steps to `progress`.
///
/// # Errors
///
/// As [`plan`]; [`MachineError::Measure`] when a copy cannot run (a thread cannot be
/// pinned, its buffers cannot be allocated).
pub fn measure(
    req: &ContentionRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ContentionResult, MachineError> {
    let (topo, note, opts, mut cost) = planned(req)?;
    progress(Progress::Plan(&cost));
    let started = Instant::now();
    let section = contention::measure_contention(&topo, &opts, |s| {
        progress(Progress::Step(&format!("contention: {s}")));
    })
    .map_err(MachineError::measuring(
        "measuring memory-access contention",
    ))?;
    progress(Progress::StepsDone);
    spent_in_one(&mut cost, started);
    Ok(ContentionResult {
        section,
        cost,
        notes: note.into_iter().collect(),
    })
}
