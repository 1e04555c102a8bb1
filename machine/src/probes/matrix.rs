//! The latency matrix (`topoprobe matrix`): every pair of the chosen CPUs, or the pairs
//! the structure needs with the others filled in from their class, within the budget.

use topoprobe_infer::{Collected, PairFlag};
use topoprobe_model::results::matrix::{FlaggedPair, MatrixResult, PairFlagKind};
use topoprobe_model::{Budget, CostPlan};
use topoprobe_sys::CpuSet;

use crate::pair_plan::{plan_pairs, PairPlan};
use crate::pairs::{collect, pair_probe_with, select_cpus, sibling_hint, Repetitions, Sampling};
use crate::{MachineError, Progress};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRequest {
    /// The CPUs (`None`: every CPU this process may use).
    pub cpus: Option<CpuSet>,
    /// How much to repeat the measurement of a pair.
    pub repetitions: Repetitions,
    /// Which pairs to measure.
    pub sampling: Sampling,
    /// Time and memory the measurement may take.
    pub budget: Budget,
}

impl Default for MatrixRequest {
    fn default() -> Self {
        Self {
            cpus: None,
            repetitions: Repetitions::default(),
            sampling: Sampling::default(),
            budget: super::DEFAULT_BUDGET,
        }
    }
}

/// The CPUs and the plan of their pairs.
fn planned(req: &MatrixRequest) -> Result<(Vec<u32>, PairPlan, CostPlan), MachineError> {
    let cpus = select_cpus(req.cpus.as_ref())?;
    if cpus.len() < 2 {
        return Err(MachineError::Cpus(format!(
            "a latency matrix needs at least two CPUs; this process may use only {} (see \
             --cpus and taskset)",
            match cpus.first() {
                Some(c) => format!("CPU {c}"),
                None => "none".into(),
            }
        )));
    }
    let plan = plan_pairs(
        cpus.len(),
        req.sampling,
        req.repetitions,
        req.budget.seconds,
    )?;
    let mut cost = CostPlan::new(req.budget);
    cost.steps.push(plan.step());
    cost.left_out.clone_from(&plan.notes);
    Ok((cpus, plan, cost))
}

/// The plan of the measurement.
///
/// # Errors
///
/// [`MachineError::Cpus`] for a CPU list that is malformed, names a CPU this process may
/// not use, or leaves fewer than two CPUs; [`MachineError::OverBudget`] when every pair is
/// asked for and cannot fit the budget.
pub fn plan(req: &MatrixRequest) -> Result<CostPlan, MachineError> {
    planned(req).map(|(_, _, cost)| cost)
}

/// Measures the matrix on this machine, reporting the plan and the pairs measured to
/// `progress`. Noisy pairs are kept and flagged, pairs the probe gave up on are missing
/// and flagged ([`MatrixResult::flagged`]).
///
/// # Errors
///
/// As [`plan`]; [`MachineError::Collect`] when the probe fails in a way that stops the run.
pub fn measure(
    req: &MatrixRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<MatrixResult, MachineError> {
    let (cpus, plan, cost) = planned(req)?;
    super::started(&cost, progress);
    let mut probe = pair_probe_with(cpus.clone(), plan.config);
    let hint = super::os_view().map(|os| sibling_hint(&os, &cpus));
    let measured = collect(
        &mut probe,
        req.sampling,
        hint,
        plan.max_measurements,
        &mut |done, total| progress(Progress::Pairs { done, total }),
    )?;
    progress(Progress::PairsDone);
    progress(Progress::StepsDone);
    let c = &measured.collected;
    Ok(MatrixResult {
        latency_ns: c.latency.to_rows(),
        pairs_measured: c.pairs,
        pairs_total: cpus.len() * (cpus.len() - 1) / 2,
        seconds: measured.elapsed.as_secs_f64(),
        timer: probe.timer().describe(),
        flagged: flagged(c, &cpus),
        notes: plan.notes,
        cpus,
    })
}

/// The flagged pairs of a table measured on `cpus`, by row.
fn flagged(c: &Collected, cpus: &[u32]) -> Vec<FlaggedPair> {
    let cpu = |row: usize| cpus.get(row).copied().unwrap_or(u32::MAX);
    c.flagged
        .iter()
        .map(|p| {
            let (flag, detail) = match &p.flag {
                f @ PairFlag::Noisy { .. } => (PairFlagKind::Noisy, f.to_string()),
                PairFlag::GaveUp(why) => (PairFlagKind::GivenUp, why.clone()),
            };
            FlaggedPair {
                row: p.a,
                column: p.b,
                cpu_a: cpu(p.a),
                cpu_b: cpu(p.b),
                flag,
                detail,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_infer::FlaggedPair as Flagged;
    use topoprobe_model::{LatencyMatrix, Noisy};

    #[test]
    fn flagged_pairs_name_rows_and_cpus() {
        let m = LatencyMatrix::from_fn(3, |a, b| (a != b).then_some(40.0));
        let c = Collected {
            latency: m.clone(),
            spread: m.clone(),
            measured: m,
            pairs: 3,
            measurements: 3,
            resolution: None,
            flagged: vec![
                Flagged {
                    a: 0,
                    b: 2,
                    flag: PairFlag::noisy(
                        0.3,
                        Noisy {
                            limit: 0.14,
                            batches: 5,
                        },
                    ),
                },
                Flagged {
                    a: 1,
                    b: 2,
                    flag: PairFlag::GaveUp("the partner stalled".into()),
                },
            ],
        };
        let f = flagged(&c, &[4, 5, 6]);
        assert_eq!(
            (f[0].row, f[0].column, f[0].cpu_a, f[0].cpu_b),
            (0, 2, 4, 6)
        );
        assert_eq!(f[0].flag, PairFlagKind::Noisy);
        assert!(
            f[0].detail.starts_with("spread 30.0% above"),
            "{}",
            f[0].detail
        );
        assert_eq!(f[1].flag, PairFlagKind::GivenUp);
        assert_eq!(f[1].detail, "the partner stalled");
    }

    #[test]
    fn one_cpu_is_not_a_matrix() {
        let first = select_cpus(None).expect("cpus")[0];
        let e = plan(&MatrixRequest {
            cpus: Some(CpuSet::from([first])),
            ..MatrixRequest::default()
        })
        .unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("at least two CPUs"), "{e}");
    }
}
