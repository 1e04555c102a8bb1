//! Measuring this machine: the CPUs to measure, the probe's settings, and collecting a
//! latency table with a progress bar.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{collect_full, Collected};
use topoprobe_measure::pair::{PairProbe, ProbeConfig};
use topoprobe_measure::stats::RepetitionPolicy;
use topoprobe_measure::timer::Timer;
use topoprobe_model::{format_cpu_list, parse_cpu_list, OsView};
use topoprobe_sys::affinity;

use crate::args::{Measure, Repetitions};

/// The CPUs to measure: `--cpus LIST` (each must be available to this process), or every
/// CPU this process may run on.
///
/// # Errors
///
/// Fails when the list is malformed, names a CPU this process cannot run on, or the
/// affinity mask cannot be read.
pub(crate) fn select_cpus(list: Option<&str>) -> Result<Vec<u32>> {
    let allowed = affinity::allowed_cpus()
        .context("finding the CPUs this process may use")?
        .to_vec();
    let Some(list) = list else {
        return Ok(allowed);
    };
    let mut cpus = parse_cpu_list(list).with_context(|| format!("--cpus {list:?}"))?;
    cpus.sort_unstable();
    cpus.dedup();
    let missing: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if !missing.is_empty() {
        bail!(
            "--cpus {list:?}: CPU {} not available to this process (offline, or outside its cpuset/affinity; available: {})",
            format_cpu_list(&missing),
            format_cpu_list(&allowed)
        );
    }
    if cpus.is_empty() {
        bail!("--cpus {list:?} names no CPU");
    }
    Ok(cpus)
}

/// The repetition policy the options describe.
pub(crate) fn policy(r: Repetitions) -> RepetitionPolicy {
    let mut p = RepetitionPolicy::default();
    if let Some(r) = r.reps {
        p.reps = r as usize;
    }
    if let Some(pct) = r.max_stdev {
        p.max_stdev = pct / 100.0;
        p.max_stdev_limit = 2.0 * p.max_stdev;
    }
    p
}

/// A probe over `cpus` with the options' settings.
pub(crate) fn probe(cpus: Vec<u32>, m: &Measure) -> PairProbe {
    let config = ProbeConfig {
        policy: policy(m.repetitions),
        ..ProbeConfig::default()
    };
    PairProbe::new(Timer::calibrate(), cpus, config)
}

/// A progress bar on standard error (drawn only on a terminal) counting pairs, with ETA.
pub(crate) fn pair_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{wide_bar}] {pos}/{len} pairs ({elapsed}, about {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A measured latency table and what it took.
pub(crate) struct Measured {
    /// The table.
    pub(crate) collected: Collected,
    /// Wall time of the measurement.
    pub(crate) elapsed: Duration,
}

/// The OS's SMT sibling sets as rows of the table (a hint the sparse strategy verifies).
pub(crate) fn sibling_hint(os: &OsView, cpus: &[u32]) -> Vec<Vec<usize>> {
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

/// Measures the table: every pair with `--full`, otherwise the pairs the inference needs
/// (`hint`: sets of rows the OS says belong together, verified rather than trusted).
///
/// # Errors
///
/// Fails when a pair cannot be measured (the error names it).
pub(crate) fn collect(
    probe: &mut PairProbe,
    m: &Measure,
    hint: Option<Vec<Vec<usize>>>,
) -> Result<Measured> {
    let started = Instant::now();
    let bar = pair_bar("measuring");
    let mut progress = |done: usize, total: usize| {
        bar.set_length(total.max(done) as u64);
        bar.set_position(done as u64);
    };
    let collected = if m.full {
        collect_full(probe, &mut progress)
    } else {
        let opts = SparseOptions {
            seed: m.seed.unwrap_or(0),
            hint: hint.filter(|h| !h.is_empty()),
            ..SparseOptions::default()
        };
        collect_sparse(probe, &opts, &mut progress)
    }
    .context("measuring core-to-core latencies")?;
    bar.finish_and_clear();
    Ok(Measured {
        collected,
        elapsed: started.elapsed(),
    })
}
