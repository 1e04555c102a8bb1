//! One pair's latency (`topoprobe latency A B`): the CAS ping-pong between two hardware
//! contexts, and with `smt` the SMT probe on them.

use topoprobe_measure::pair::{PairProbe, ProbeConfig, Wait};
use topoprobe_measure::smt;
use topoprobe_measure::timer::Timer;
use topoprobe_model::results::latency::{PairLatencyResult, PingPongWait};
use topoprobe_model::{Budget, CostPlan, CostStep};

use crate::pairs::{check_available, Repetitions};
use crate::MachineError;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRequest {
    /// First context (OS CPU number); it owns the cache line.
    pub a: u32,
    /// Second context (OS CPU number).
    pub b: u32,
    /// How much to repeat the measurement.
    pub repetitions: Repetitions,
    /// How each side waits for its turn.
    pub wait: PingPongWait,
    /// Also run the SMT probe on the pair.
    pub smt: bool,
    /// Time and memory the measurement may take (only planned: one pair fits any budget).
    pub budget: Budget,
}

impl PairRequest {
    /// The pair `a`, `b` with the default settings.
    #[must_use]
    pub fn new(a: u32, b: u32) -> Self {
        Self {
            a,
            b,
            repetitions: Repetitions::default(),
            wait: PingPongWait::Cas,
            smt: false,
            budget: super::DEFAULT_BUDGET,
        }
    }

    /// The probe's settings.
    fn config(&self) -> ProbeConfig {
        ProbeConfig {
            policy: self.repetitions.policy(),
            wait: match self.wait {
                PingPongWait::Cas => Wait::Cas,
                PingPongWait::Load => Wait::Load,
            },
            ..ProbeConfig::default()
        }
    }

    /// Checks the pair: two different CPUs this process may use.
    fn check(&self) -> Result<(), MachineError> {
        if self.a == self.b {
            return Err(MachineError::Cpus(format!(
                "CPU {} cannot be measured against itself: name two different CPUs",
                self.a
            )));
        }
        check_available(&[self.a, self.b])
    }
}

/// The plan of measuring the pair (and the SMT probe).
///
/// # Errors
///
/// [`MachineError::Cpus`] when the two CPUs are the same or one is not available to this
/// process.
pub fn plan(req: &PairRequest) -> Result<CostPlan, MachineError> {
    req.check()?;
    let mut plan = CostPlan::new(req.budget);
    plan.steps.push(CostStep::new(
        "latency",
        format!("latency CPU {} <-> CPU {}", req.a, req.b),
        0,
        1,
        crate::pair_plan::pair_seconds(&req.config()),
    ));
    if req.smt {
        plan.steps.push(CostStep::new(
            "smt",
            "SMT probe",
            0,
            1,
            smt::expected_seconds(),
        ));
    }
    Ok(plan)
}

/// Measures the pair on this machine. A pair whose spread stays above the limit is not an
/// error: it is returned with its best batch, flagged as noisy.
///
/// # Errors
///
/// [`MachineError::Cpus`] as [`plan`]; [`MachineError::Measure`] when the probe fails (a
/// CPU that cannot be pinned, a partner that stalls); [`MachineError::Smt`] when the SMT
/// probe fails.
pub fn measure(req: &PairRequest) -> Result<PairLatencyResult, MachineError> {
    req.check()?;
    let (a, b) = (req.a, req.b);
    let timer = Timer::calibrate();
    let mut probe = PairProbe::new(timer.clone(), vec![a, b], req.config());
    let m = probe
        .measure_cpus(a, b)
        .map_err(MachineError::measuring(format!(
            "measuring the latency between CPUs {a} and {b}"
        )))?;
    let smt_test = if req.smt {
        Some(smt::test_pair(a, b).map_err(|message| MachineError::Smt { a, b, message })?)
    } else {
        None
    };
    Ok(PairLatencyResult {
        a: m.a,
        b: m.b,
        median_ns: m.summary.median,
        min_ns: m.summary.min,
        spread: m.summary.spread,
        samples: m.summary.kept,
        rejected: m.summary.rejected,
        round_trips_per_sample: m.round_trips,
        batches: m.batches,
        warmup_batches: m.warmup_batches,
        frequency_ramp: m.ramp,
        noisy: m.noisy.is_some(),
        spread_limit: m.noisy.map(|n| n.limit),
        noise_note: m.noise_note(),
        wait: req.wait,
        timer: timer.describe(),
        ghz: timer.ghz(),
        smt_slowdown: smt_test.map(|t| t.slowdown),
        shares_core: smt_test.map(|t| t.shares_core()),
    })
}
