//! The plan of the latency pairs: which pairs are measured ([`Sampling`]), how much each
//! is repeated ([`Repetitions`]), with which probe settings, and in how many measurements of
//! what cost ([`PairPlan`]), within the pairs' share of the budget. The whole measurement's
//! plan ([`crate::plan`]) gives them their share; collecting the table
//! ([`crate::pairs::collect_within`]) keeps to it.

use topoprobe_infer::sparse::SparseOptions;
use topoprobe_measure::pair::ProbeConfig;
use topoprobe_measure::stats::{RepetitionPolicy, MAX_WARMUP_BATCHES};
use topoprobe_model::CostStep;

use crate::deadlines::STEP_SLACK;
use crate::MachineError;

/// How much to repeat the measurement of a pair (`None`: the probe's default).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Repetitions {
    /// Samples per batch of a pair (default 25).
    pub reps: Option<u32>,
    /// Largest relative spread of a pair's samples, in percent (default 7; raised on each
    /// retry, up to twice as much).
    pub max_stdev_percent: Option<f64>,
}

impl Repetitions {
    /// The probe's repetition policy with these settings.
    #[must_use]
    pub fn policy(self) -> RepetitionPolicy {
        let mut p = RepetitionPolicy::default();
        if let Some(r) = self.reps {
            p.reps = r as usize;
        }
        if let Some(pct) = self.max_stdev_percent {
            p.max_stdev = pct / 100.0;
            p.max_stdev_limit = 2.0 * p.max_stdev;
        }
        p
    }
}

/// Which pairs to measure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sampling {
    /// Every pair, instead of the pairs needed to infer the structure.
    pub full: bool,
    /// Seed of the random choices (verification pairs), for a reproducible run.
    pub seed: Option<u64>,
}

/// Samples of a pair's warm-up: two batches of four at least (the probe's warm-up stops
/// when two consecutive batches agree).
const WARMUP_SAMPLES: usize = 8;
/// Seconds to start, pin and join the two threads of a pair.
const PAIR_THREADS_S: f64 = 200e-6;
/// Seconds to calibrate the probe's timer (five rounds of 4 ms against the monotonic
/// clock).
const TIMER_S: f64 = 0.025;
/// Length of a sample of the quick probe setting (against 40 µs by default), ns.
const QUICK_SAMPLE_NS: f64 = 10_000.0;
/// Samples per batch of the quick probe setting.
const QUICK_REPS: usize = 15;
/// Share of the budget (after the fixed costs) the latency pairs may take at most.
pub(crate) const PAIRS_SHARE: f64 = 0.5;

/// Seconds one pair is expected to take with `config`: two threads started, a warm-up of
/// two batches, one batch.
#[must_use]
pub fn pair_seconds(config: &ProbeConfig) -> f64 {
    let warm = if config.warm_up { WARMUP_SAMPLES } else { 0 };
    let samples = warm + config.policy.reps.max(3) + 1;
    PAIR_THREADS_S + samples as f64 * config.sample_ns * 1e-9
}

/// The longest one pair may take with `config`: every warm-up batch and every retry.
#[must_use]
pub fn pair_seconds_at_most(config: &ProbeConfig) -> f64 {
    let warm = if config.warm_up {
        4 * MAX_WARMUP_BATCHES
    } else {
        0
    };
    let samples = warm + config.policy.reps.max(3) * config.policy.attempts.max(1) + 1;
    PAIR_THREADS_S + samples as f64 * config.sample_ns * 1e-9
}

/// How the latency pairs are measured, and what they will cost.
#[derive(Debug, Clone, PartialEq)]
pub struct PairPlan {
    /// Contexts measured.
    pub contexts: usize,
    /// Every pair, rather than those the structure needs.
    pub full: bool,
    /// Measurements planned (pairs, repeated ones included).
    pub measurements: usize,
    /// Pairs of the contexts in all.
    pub pairs_total: usize,
    /// The probe's settings.
    pub config: ProbeConfig,
    /// Whether the quick setting (shorter samples, smaller batches) was chosen to fit.
    pub quick: bool,
    /// Most measurements made (the sparse strategy fills in the rest from the structure
    /// found so far); `None`: as many as the structure needs.
    pub max_measurements: Option<usize>,
    /// Seconds planned.
    pub seconds: f64,
    /// Most seconds the pairs may take of the budget (their share): the collection stops
    /// there whatever the plan said.
    pub room: f64,
    /// What the budget changed, for the user.
    pub notes: Vec<String>,
}

impl PairPlan {
    /// The plan's step.
    #[must_use]
    pub fn step(&self) -> CostStep {
        CostStep::new(
            "latency",
            format!("latency pairs of {} contexts", self.contexts),
            0,
            self.measurements as u64,
            self.seconds + TIMER_S,
        )
    }

    /// Seconds one measurement is planned to take.
    #[must_use]
    pub fn per_measurement(&self) -> f64 {
        pair_seconds(&self.config)
    }

    /// The plan again, once a first measurement took `per_pair` seconds on this machine:
    /// the seconds scale, and when they no longer fit [`PairPlan::room`], the
    /// measurements are capped to what fits (the structure fills in the rest). Never
    /// more generous than the plan: a machine faster than planned keeps it.
    pub fn calibrate(&mut self, per_pair: f64) {
        let planned = self.per_measurement();
        if !(per_pair.is_finite() && per_pair > planned) {
            return;
        }
        let wanted = self.max_measurements.unwrap_or(self.measurements);
        let seconds = wanted as f64 * per_pair;
        self.seconds = seconds;
        if seconds <= self.room || self.full {
            if self.full && seconds > self.room {
                self.notes.push(format!(
                    "latency: a pair took {:.1} ms here ({:.1}× the plan): the {} pairs take \
                     about {seconds:.1} s, over their {:.1} s share; the pairs left when it \
                     is spent are left out",
                    per_pair * 1e3,
                    per_pair / planned,
                    self.measurements,
                    self.room
                ));
            }
            return;
        }
        let cap = ((self.room / per_pair) as usize).max(1);
        self.max_measurements = Some(cap.min(wanted));
        self.seconds = cap.min(wanted) as f64 * per_pair;
        self.notes.push(format!(
            "latency: a pair took {:.1} ms here ({:.1}× the plan): at most {cap} of the about \
             {wanted} measurements fit the pairs' {:.1} s share; the pairs not measured are \
             filled in from the structure found by then",
            per_pair * 1e3,
            per_pair / planned,
            self.room
        ));
    }

    /// When the collection stops, seconds after it started: the plan with
    /// [`STEP_SLACK`], never past its share.
    #[must_use]
    pub fn deadline(&self) -> f64 {
        (self.seconds * STEP_SLACK).min(self.room.max(self.per_measurement()))
    }
}

/// Measurements the sparse strategy is expected to make on `n` contexts (every pair on a
/// machine so small that the structure is not worth discovering).
#[must_use]
pub fn sparse_measurements(n: usize) -> usize {
    let pairs = n * n.saturating_sub(1) / 2;
    let verify = SparseOptions::default().verify_pairs(n);
    // About five measurements per context, plus the verification pairs (docs/INFERENCE.md).
    (5 * n + verify).min(pairs)
}

/// Plans the latency pairs of `n` contexts within `seconds`.
///
/// # Errors
///
/// [`MachineError::OverBudget`] when every pair is asked for (`sampling.full`) and even
/// the quick probe setting cannot measure them within `seconds`.
pub fn plan_pairs(
    n: usize,
    sampling: Sampling,
    repetitions: Repetitions,
    seconds: f64,
) -> Result<PairPlan, MachineError> {
    let pairs_total = n * n.saturating_sub(1) / 2;
    let measurements = if sampling.full {
        pairs_total
    } else {
        sparse_measurements(n)
    };
    let mut config = ProbeConfig {
        policy: repetitions.policy(),
        ..ProbeConfig::default()
    };
    let natural = measurements as f64 * pair_seconds(&config);
    let mut plan = PairPlan {
        contexts: n,
        full: sampling.full,
        measurements,
        pairs_total,
        config,
        quick: false,
        max_measurements: None,
        seconds: natural,
        room: seconds,
        notes: Vec::new(),
    };
    if natural <= seconds {
        return Ok(plan);
    }
    // Shorter samples and smaller batches, unless the user set the batches.
    config.sample_ns = QUICK_SAMPLE_NS;
    if repetitions.reps.is_none() {
        config.policy.reps = QUICK_REPS;
    }
    let quick = measurements as f64 * pair_seconds(&config);
    plan.config = config;
    plan.quick = true;
    plan.seconds = quick;
    plan.notes.push(format!(
        "latency pairs measured with {:.0} µs samples in batches of {} (instead of {:.0} µs and \
         {}): {} measurements would take {:.1} s, over the {:.1} s they may take of the budget",
        config.sample_ns / 1000.0,
        config.policy.reps,
        ProbeConfig::default().sample_ns / 1000.0,
        repetitions.policy().reps,
        measurements,
        natural,
        seconds
    ));
    if quick <= seconds {
        return Ok(plan);
    }
    if sampling.full {
        return Err(MachineError::OverBudget(format!(
            "measuring all {pairs_total} pairs of {n} contexts takes about {quick:.0} s, over \
             the budget's {seconds:.1} s for them: pass --budget {} or measure the pairs the \
             structure needs (without --full)",
            (quick * 1.2 / PAIRS_SHARE).ceil()
        )));
    }
    let cap = ((seconds / pair_seconds(&config)) as usize).max(n.saturating_sub(1));
    plan.max_measurements = Some(cap);
    plan.seconds = cap as f64 * pair_seconds(&config);
    plan.notes.push(format!(
        "latency: at most {cap} of the about {measurements} measurements the structure needs \
         fit the budget; the pairs not measured are filled in from the structure found by \
         then (pass --budget {} for all of them)",
        (quick / PAIRS_SHARE).ceil()
    ));
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_get_quicker_then_capped_as_the_budget_shrinks() {
        let r = Repetitions::default();
        let s = Sampling::default();
        let free = plan_pairs(256, s, r, 100.0).unwrap();
        assert!(!free.quick && free.max_measurements.is_none());
        let quick = plan_pairs(256, s, r, free.seconds / 2.0).unwrap();
        assert!(quick.quick && quick.max_measurements.is_none(), "{quick:?}");
        let capped = plan_pairs(256, s, r, free.seconds / 20.0).unwrap();
        assert!(capped.max_measurements.is_some(), "{capped:?}");
        assert!(capped.notes.iter().any(|n| n.contains("filled in")));
        // A pair costs about 1.5 ms with the default probe settings.
        let one = pair_seconds(&ProbeConfig::default());
        assert!(one > 1e-3 && one < 2e-3, "{one}");
        assert!(pair_seconds_at_most(&ProbeConfig::default()) > 4.0 * one);
    }

    #[test]
    fn repetitions_set_the_policy() {
        let p = Repetitions {
            reps: Some(9),
            max_stdev_percent: Some(5.0),
        }
        .policy();
        assert_eq!(p.reps, 9);
        assert!((p.max_stdev - 0.05).abs() < 1e-12);
        assert!((p.max_stdev_limit - 0.10).abs() < 1e-12);
        assert_eq!(Repetitions::default().policy(), RepetitionPolicy::default());
    }
}
