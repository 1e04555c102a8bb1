//! The stability checks of a measurement that watches for moving vCPUs
//! ([`crate::stability`]): the reference pairs re-measured between the phases within
//! their time, and the SMT probe run again at the end.

use std::time::Instant;

use topoprobe_measure::smt::SmtTest;
use topoprobe_model::{OsView, PairLatency, Topology, Warning, WarningKind};

use super::{planned_seconds, smt_probe, SmtFn};
use crate::deadlines::{Clock, STEP_SLACK};
use crate::pairs::MeasuredTable;
use crate::plan::MeasurePlan;
use crate::stability::{self, Finding, Monitor};
use crate::MachineError;

/// The share of the whole budget the stability checks may take when their plan is smaller
/// (a loaded or slow machine measures each pair many times slower than planned).
const STABILITY_BUDGET_SHARE: f64 = 0.05;

/// The stability checks of a measurement that watches for moving vCPUs: the reference
/// pairs re-measured between the phases, within the time the checks may take.
pub(super) struct Checks {
    /// The reference pairs (`None`: not watching).
    monitor: Option<Monitor>,
    /// Seconds the checks may take in all.
    allowance: f64,
    /// Seconds the checks spent so far.
    pub(super) spent: f64,
    /// Re-measurements left out because the allowance was spent.
    left_out: usize,
}

impl Checks {
    /// The checks of `monitor` under `plan`. They keep to their planned time (with a
    /// step's slack) or a small share of the budget, whichever is more: on a loaded
    /// machine a pair takes many times its plan, and the rest of the run must not pay
    /// for it.
    pub(super) fn new(monitor: Option<Monitor>, plan: &MeasurePlan) -> Self {
        let allowance = (STEP_SLACK * planned_seconds(plan, "stability"))
            .max(STABILITY_BUDGET_SHARE * plan.cost.budget.seconds);
        Self {
            monitor,
            allowance,
            spent: 0.0,
            left_out: 0,
        }
    }

    /// Whether the measurement watches for moving vCPUs.
    pub(super) fn watching(&self) -> bool {
        self.monitor.is_some()
    }

    /// Re-measures the reference pairs with `probe` after `phase`, within what is left of
    /// the allowance (nothing when not watching).
    pub(super) fn check(&mut self, probe: &mut dyn PairLatency, phase: &str) {
        if let Some(m) = self.monitor.as_mut() {
            let t = Instant::now();
            self.left_out += m.check_within(probe, phase, self.allowance - self.spent);
            self.spent += t.elapsed().as_secs_f64();
        }
    }

    /// The warning that re-measurements were left out for time, when some were.
    pub(super) fn left_out_warning(&self) -> Option<Warning> {
        (self.left_out > 0).then(|| {
            Warning::new(
                WarningKind::Budget,
                format!(
                    "stability: {} re-measurements of the reference pairs left out: the \
                     checks had spent their {:.2} s (a loaded machine slows every pair)",
                    self.left_out, self.allowance
                ),
            )
        })
    }

    /// What moved, by the checks against `topo` ([`Monitor::findings`]).
    pub(super) fn findings(&self, topo: &Topology) -> Vec<Finding> {
        self.monitor
            .as_ref()
            .map_or_else(Vec::new, |m| m.findings(topo))
    }

    /// Records each reference pair's checks in `topo`'s provenance (`reference_pairs`:
    /// `0-1: 80.2 81.0 ns; …`, `failed` for a check that could not measure).
    pub(super) fn record_references(&self, topo: &mut Topology) {
        let Some(m) = &self.monitor else {
            return;
        };
        let checks: Vec<String> = m
            .references()
            .iter()
            .map(|r| {
                let v: Vec<String> = r
                    .checks
                    .iter()
                    .map(|c| match &c.ns {
                        Ok(ns) => format!("{ns:.1}"),
                        Err(_) => "failed".into(),
                    })
                    .collect();
                format!("{}-{}: {} ns", r.cpus.0, r.cpus.1, v.join(" "))
            })
            .collect();
        topo.provenance_mut()
            .parameters
            .insert("reference_pairs".into(), checks.join("; "));
    }
}

/// The SMT probe's runs in a measurement: the tests of the first, the notes of both and
/// the seconds both spent.
pub(super) struct SmtRecord {
    /// The first run's tests (those the inference and the description use).
    pub(super) tests: Vec<SmtTest>,
    /// What the runs said (time left out, shortened runs).
    pub(super) notes: Vec<String>,
    /// Seconds the runs spent.
    pub(super) spent: f64,
}

impl SmtRecord {
    /// Runs the SMT probe again at the end within `seconds`, adding its time and notes;
    /// returns the cores that changed since the first run ([`stability::smt_findings`]).
    pub(super) fn again(
        &mut self,
        table: &MeasuredTable,
        cpus: &[u32],
        seconds: f64,
        clock: &dyn Clock,
        smt: &mut SmtFn<'_>,
        os_view: Option<&OsView>,
    ) -> Result<Vec<Finding>, MachineError> {
        let again_started = Instant::now();
        let again = smt_probe(table, cpus, seconds, clock, smt)?;
        self.spent += again_started.elapsed().as_secs_f64();
        self.notes.extend(
            again
                .notes
                .iter()
                .map(|n| format!("{n} (again at the end)")),
        );
        Ok(stability::smt_findings(&self.tests, &again.tests, os_view))
    }
}
