//! Measuring core-to-core latencies on this machine: the CPUs to measure, the probe's
//! settings, and collecting a latency table (every pair, or the pairs the structure needs).

use std::time::{Duration, Instant};

use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{collect_full, Collected};
use topoprobe_measure::pair::{PairProbe, ProbeConfig};
use topoprobe_measure::stats::RepetitionPolicy;
use topoprobe_measure::timer::Timer;
use topoprobe_model::{format_cpu_list, parse_cpu_list, OsView, PairLatency};
use topoprobe_sys::affinity;

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

/// The CPUs to measure: `list` (Linux list syntax; each CPU must be available to this
/// process), or every CPU this process may run on.
///
/// # Errors
///
/// [`MachineError::Cpus`] when the list is malformed, empty or names a CPU this process
/// cannot run on; [`MachineError::Affinity`] when the affinity mask cannot be read.
pub fn select_cpus(list: Option<&str>) -> Result<Vec<u32>, MachineError> {
    let allowed = affinity::allowed_cpus()
        .map_err(MachineError::Affinity)?
        .to_vec();
    let Some(list) = list else {
        return Ok(allowed);
    };
    let mut cpus =
        parse_cpu_list(list).map_err(|e| MachineError::Cpus(format!("--cpus {list}: {e}")))?;
    cpus.sort_unstable();
    cpus.dedup();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_checked_against_this_process() {
        let all = select_cpus(None).expect("cpus");
        assert!(!all.is_empty());
        let first = all[0];
        assert_eq!(
            select_cpus(Some(&format!("{first},{first}"))).unwrap(),
            [first]
        );
        let e = select_cpus(Some("100000")).unwrap_err().to_string();
        assert!(e.contains("CPU 100000 is not available"), "{e}");
        let e = select_cpus(Some("x")).unwrap_err().to_string();
        assert!(e.contains("--cpus x:"), "{e}");
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
