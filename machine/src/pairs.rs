//! Measuring core-to-core latencies on this machine: the CPUs to measure, the probe's
//! settings, and collecting a latency table (every pair, or the pairs the structure needs).

use std::time::{Duration, Instant};

use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{collect_full, Collected};
use topoprobe_measure::pair::{PairProbe, ProbeConfig};
use topoprobe_measure::timer::Timer;
use topoprobe_model::{format_cpu_list, OsView, PairLatency, PairReading, PairSample, ProbeError};
use topoprobe_sys::{affinity, CpuSet};

use crate::deadlines::Clock;
use crate::pair_plan::PairPlan;
use crate::MachineError;

pub use crate::pair_plan::{Repetitions, Sampling};

/// The CPUs to measure (ascending): `cpus` (each must be available to this process), or
/// every CPU this process may run on.
///
/// # Errors
///
/// [`MachineError::Cpus`] when the set is empty or names a CPU this process cannot run
/// on; [`MachineError::Affinity`] when the affinity mask cannot be read.
pub fn select_cpus(cpus: Option<&CpuSet>) -> Result<Vec<u32>, MachineError> {
    let allowed = affinity::allowed_cpus()
        .map_err(MachineError::Affinity)?
        .to_vec();
    let Some(set) = cpus else {
        return Ok(allowed);
    };
    let cpus = set.to_vec();
    let list = format_cpu_list(&cpus);
    let missing: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if !missing.is_empty() {
        let (noun, verb) = if missing.len() == 1 {
            ("CPU", "is")
        } else {
            ("CPUs", "are")
        };
        return Err(MachineError::Cpus(format!(
            "--cpus {list}: {noun} {} {verb} not available to this process (offline, or outside its cpuset/affinity; available: {})",
            format_cpu_list(&missing),
            format_cpu_list(&allowed)
        )));
    }
    if cpus.is_empty() {
        return Err(MachineError::Cpus(format!("--cpus {list} names no CPU")));
    }
    Ok(cpus)
}

/// Checks that this process may run on every CPU of `cpus` (OS numbers, as the user
/// named them).
///
/// # Errors
///
/// [`MachineError::Cpus`] naming the CPUs it may not use (offline, or outside its
/// cpuset or affinity) and those it may; [`MachineError::Affinity`] when the affinity mask
/// cannot be read.
pub fn check_available(cpus: &[u32]) -> Result<(), MachineError> {
    let allowed = affinity::allowed_cpus()
        .map_err(MachineError::Affinity)?
        .to_vec();
    let mut missing: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    let (what, is) = if missing.len() == 1 {
        ("CPU", "is")
    } else {
        ("CPUs", "are")
    };
    Err(MachineError::Cpus(format!(
        "{what} {} {is} not available to this process (offline, or outside its cpuset/affinity; available: {})",
        format_cpu_list(&missing),
        format_cpu_list(&allowed)
    )))
}

/// A pair probe over `cpus` with a freshly calibrated timer.
#[must_use]
pub fn pair_probe(cpus: Vec<u32>, repetitions: Repetitions) -> PairProbe {
    let config = ProbeConfig {
        policy: repetitions.policy(),
        ..ProbeConfig::default()
    };
    PairProbe::new(Timer::calibrate(), cpus, config)
}

/// A pair probe over `cpus` with `config` (a plan's probe settings) and a freshly
/// calibrated timer.
#[must_use]
pub fn pair_probe_with(cpus: Vec<u32>, config: ProbeConfig) -> PairProbe {
    PairProbe::new(Timer::calibrate(), cpus, config)
}

/// The OS's SMT sibling sets as rows of the table (a hint the sparse strategy verifies).
#[must_use]
pub fn sibling_hint(os: &OsView, cpus: &[u32]) -> Vec<Vec<usize>> {
    os.cores()
        .iter()
        .map(|core| {
            core.iter()
                .filter_map(|c| cpus.iter().position(|x| x == c))
                .collect::<Vec<usize>>()
        })
        .filter(|rows| rows.len() > 1)
        .collect()
}

/// A measured latency table and what it took.
#[derive(Debug, Clone)]
pub struct MeasuredTable {
    /// The table.
    pub collected: Collected,
    /// Wall time of the measurement.
    pub elapsed: Duration,
}

/// Measures the table: every pair with `sampling.full`, otherwise the pairs the inference
/// needs (`hint`: sets of rows the OS says belong together, verified rather than trusted;
/// at most `max_measurements` measurements, the rest filled in from the structure found),
/// calling `progress(done, total)` as pairs are measured.
///
/// A noisy pair does not fail the table: it is kept with its spread and flagged, and a pair
/// the probe gave up on (a partner that stalled twice) is missing and flagged; both are in
/// [`Collected::flagged`], and [`Collected::infer`] reports them.
///
/// # Errors
///
/// [`MachineError::Collect`] when the probe fails in a way that stops the run (a CPU that
/// cannot be pinned; the error names the pair), or when no pair at all could be measured.
pub fn collect(
    probe: &mut dyn PairLatency,
    sampling: Sampling,
    hint: Option<Vec<Vec<usize>>>,
    max_measurements: Option<usize>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<MeasuredTable, MachineError> {
    let started = Instant::now();
    let collected = if sampling.full {
        collect_full(probe, progress)
    } else {
        let opts = SparseOptions {
            seed: sampling.seed.unwrap_or(0),
            hint: hint.filter(|h| !h.is_empty()),
            budget: max_measurements,
            ..SparseOptions::default()
        };
        collect_sparse(probe, &opts, progress)
    }
    .map_err(MachineError::Collect)?;
    Ok(MeasuredTable {
        collected,
        elapsed: started.elapsed(),
    })
}

/// A probe measured against a clock: the first measurement calibrates the plan
/// ([`PairPlan::calibrate`]: a machine slower than planned gets fewer measurements), and
/// past the plan's deadline ([`PairPlan::deadline`]) or its cap every pair is answered as
/// unavailable without measuring it, and counted.
pub struct Timed<'a> {
    inner: &'a mut dyn PairLatency,
    clock: &'a dyn Clock,
    plan: PairPlan,
    started: f64,
    calls: usize,
    left_out: usize,
    first_done: f64,
}

/// Measurements after the first that calibrate a pair plan.
pub const CALIBRATION_PAIRS: usize = 4;

impl std::fmt::Debug for Timed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timed")
            .field("plan", &self.plan)
            .field("started", &self.started)
            .field("calls", &self.calls)
            .field("left_out", &self.left_out)
            .finish_non_exhaustive()
    }
}

impl<'a> Timed<'a> {
    /// `inner` under `plan`, its time read on `clock` from now.
    pub fn new(inner: &'a mut dyn PairLatency, clock: &'a dyn Clock, plan: PairPlan) -> Self {
        let started = clock.now();
        Self {
            inner,
            clock,
            plan,
            started,
            calls: 0,
            left_out: 0,
            first_done: started,
        }
    }

    /// The plan as calibrated, with a note on the pairs left out.
    #[must_use]
    pub fn finish(mut self) -> PairPlan {
        if self.left_out > 0 {
            self.plan.notes.push(format!(
                "latency: {} left out: the pairs' {:.1} s of the budget were spent ({} \
                 measured); they are filled in from the structure found, or missing",
                topoprobe_model::format::plural(self.left_out, "pair measurement"),
                self.plan.deadline(),
                self.calls
            ));
        }
        self.plan
    }

    /// Measurements refused for time.
    #[must_use]
    pub fn left_out(&self) -> usize {
        self.left_out
    }

    fn open(&self) -> bool {
        let cap = self.plan.max_measurements.unwrap_or(usize::MAX);
        self.calls < cap && self.clock.now() - self.started < self.plan.deadline()
    }
}

impl PairLatency for Timed<'_> {
    fn contexts(&self) -> usize {
        self.inner.contexts()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        match self.measure_pair(a, b)? {
            PairReading::Sample(s) => Ok(Some(s)),
            _ => Ok(None),
        }
    }

    fn measure_pair(&mut self, a: usize, b: usize) -> Result<PairReading, ProbeError> {
        // The first pair is always measured: a run measures something.
        if self.calls > 0 && !self.open() {
            self.left_out += 1;
            return Ok(PairReading::Unavailable);
        }
        let r = self.inner.measure_pair(a, b)?;
        self.calls += 1;
        // The first pair also starts the probe (and, in an emulator, translates its code):
        // the plan learns from the ones after it.
        if self.calls == 1 {
            self.first_done = self.clock.now();
        } else if self.calls == CALIBRATION_PAIRS + 1 {
            let per_pair = (self.clock.now() - self.first_done) / CALIBRATION_PAIRS as f64;
            self.plan.calibrate(per_pair);
        }
        Ok(r)
    }
}

/// [`collect`] within `plan`, its time read on `clock`: the first measurement calibrates
/// the plan, and the collection stops at the plan's deadline (pairs left out are said in
/// the plan's notes, and filled in from the structure found or missing). Returns the
/// table and the plan as calibrated.
///
/// # Errors
///
/// As [`collect`].
pub fn collect_within(
    probe: &mut dyn PairLatency,
    sampling: Sampling,
    hint: Option<Vec<Vec<usize>>>,
    plan: &PairPlan,
    clock: &dyn Clock,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(MeasuredTable, PairPlan), MachineError> {
    let mut timed = Timed::new(probe, clock, plan.clone());
    let table = collect(&mut timed, sampling, hint, plan.max_measurements, progress)?;
    Ok((table, timed.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_checked_against_this_process() {
        let all = select_cpus(None).expect("cpus");
        assert!(!all.is_empty());
        let first = all[0];
        assert_eq!(
            select_cpus(Some(&CpuSet::from([first, first]))).unwrap(),
            [first]
        );
        let e = select_cpus(Some(&CpuSet::from([100_000])))
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 100000 is not available"), "{e}");
        let e = select_cpus(Some(&CpuSet::new())).unwrap_err().to_string();
        assert!(e.contains("names no CPU"), "{e}");
        check_available(&[first]).expect("an allowed CPU");
        let e = check_available(&[first, 100_000]).unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string()
                .starts_with("CPU 100000 is not available to this process"),
            "{e}"
        );
        let e = check_available(&[100_000, 100_001])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("CPUs 100000-100001 are not"), "{e}");
    }
}
