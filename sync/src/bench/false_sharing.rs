//! False sharing (the talk's experiment): each thread increments its own counter with an
//! atomic read-modify-write (a plain load and store would be served by the thread's own
//! store buffer and hide the line's travels); the counters are `stride` bytes apart, so that at strides
//! under a cache line they share lines. The stride from which throughput stops growing is
//! the padding to use; whether 128 beats 64 shows the adjacent-line prefetcher pulling
//! pairs of lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use topoprobe_model::results::bench::compared;
pub use topoprobe_model::results::bench::{FalseSharingReport, StrideResult};
use topoprobe_model::{median, Topology};
use topoprobe_place::Policy;
use topoprobe_sys::clock::Clock;

use super::locks::{MAX_DURATION, MAX_THREADS};
use super::{check_runs, workers};
use crate::error::SyncError;

/// Strides measured by default, bytes.
pub const STRIDES: [usize; 6] = [8, 16, 32, 64, 128, 256];
/// Largest accepted stride, bytes.
pub const MAX_STRIDE: usize = 1 << 16;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Threads (placed by `policy`).
    pub threads: usize,
    /// Strides, bytes (multiples of 8).
    pub strides: Vec<usize>,
    /// Length of one measurement.
    pub duration: Duration,
    /// Placement policy (the default puts threads on different cores).
    pub policy: Policy,
    /// Runs of every stride (the median is reported).
    pub runs: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            threads: 2,
            strides: STRIDES.to_vec(),
            duration: Duration::from_millis(200),
            policy: Policy::ConCore,
            runs: 5,
        }
    }
}

impl Config {
    /// Checks the limits (before any work: nothing is measured).
    ///
    /// # Errors
    ///
    /// [`WorkError::Parameter`](topoprobe_place::WorkError::Parameter) naming the first value out of range.
    pub fn check(&self) -> Result<(), SyncError> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(SyncError::parameter(
                "threads",
                self.threads,
                format!("1 to {MAX_THREADS}"),
            ));
        }
        if self.strides.is_empty() {
            return Err(SyncError::parameter(
                "strides",
                "(none)",
                "at least one stride",
            ));
        }
        if let Some(&s) = self
            .strides
            .iter()
            .find(|&&s| s == 0 || s % 8 != 0 || s > MAX_STRIDE)
        {
            return Err(SyncError::parameter(
                "strides",
                s,
                format!("multiples of 8 from 8 to {MAX_STRIDE} bytes"),
            ));
        }
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return Err(SyncError::parameter(
                "duration",
                self.duration.as_secs_f64(),
                format!("more than 0 s, at most {} s", MAX_DURATION.as_secs()),
            ));
        }
        check_runs(self.runs)
    }
}

/// Runs the experiment; `progress(done, total)` after each measurement.
///
/// # Errors
///
/// A parameter out of range, a placement that cannot hold the threads, or a thread that
/// cannot be pinned.
pub fn run(
    topo: &Topology,
    config: &Config,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<FalseSharingReport, SyncError> {
    let results = measure_all(topo, config, progress)?;
    Ok(FalseSharingReport {
        threads: config.threads,
        policy: config.policy.to_string(),
        runs: config.runs,
        duration_s: config.duration.as_secs_f64(),
        padding_bytes: advised_padding(&results),
        advice: advice(&results),
        results,
    })
}

/// Every stride of the configuration, runs interleaved.
fn measure_all(
    topo: &Topology,
    config: &Config,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<StrideResult>, SyncError> {
    config.check()?;
    let placement = workers::placement(topo, config.policy, config.threads)?;
    let clock = Clock::get();
    let duration_ns = config.duration.as_nanos() as f64;
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); config.strides.len()];
    let total = config.runs * config.strides.len();
    let mut done = 0;
    for _ in 0..config.runs {
        for (k, &stride) in config.strides.iter().enumerate() {
            let words = stride / 8;
            // Room for a page-aligned start (512 words) and every thread's counter.
            let cells: Vec<AtomicU64> = (0..512 + words * config.threads)
                .map(|_| AtomicU64::new(0))
                .collect();
            let first = super::page_start(&cells);
            let counts = workers::run(&placement, config.threads, |t| {
                let c = &cells[first + t * words];
                let start = clock.now();
                let mut n = 0u64;
                loop {
                    for _ in 0..256 {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 256;
                    let e = clock.ns_between(start, clock.now());
                    if e >= duration_ns {
                        return n as f64 / (e / 1e9);
                    }
                }
            })?;
            rates[k].push(counts.iter().sum());
            done += 1;
            progress(done, total);
        }
    }
    Ok(config
        .strides
        .iter()
        .zip(rates)
        .map(|(&s, r)| StrideResult {
            stride_bytes: s,
            threads: config.threads,
            ops_per_s: median(&r).unwrap_or(f64::NAN),
            runs: r,
        })
        .collect())
}

/// The padding to use: the smallest stride within 5% of the best throughput.
#[must_use]
pub fn advised_padding(results: &[StrideResult]) -> Option<usize> {
    let best = results.iter().map(|r| r.ops_per_s).fold(0.0, f64::max);
    let mut v: Vec<&StrideResult> = results.iter().collect();
    v.sort_by_key(|r| r.stride_bytes);
    v.into_iter()
        .find(|r| r.ops_per_s >= 0.95 * best)
        .map(|r| r.stride_bytes)
}

/// What a user can act on: the padding, and how much false sharing costs here.
#[must_use]
pub fn advice(results: &[StrideResult]) -> Vec<String> {
    let mut out = Vec::new();
    let at = |s: usize| {
        results
            .iter()
            .find(|r| r.stride_bytes == s)
            .map(|r| r.ops_per_s)
    };
    if let Some(pad) = advised_padding(results) {
        out.push(format!(
            "pad data that different threads write to {pad} bytes (#[repr(align({pad}))], crossbeam's CachePadded, or alignas({pad}) in C)"
        ));
    }
    let widest = results.iter().map(|r| r.stride_bytes).max().unwrap_or(8);
    if let (Some(a), Some(b), true) = (at(8), at(widest), widest >= 64) {
        if a > 0.0 && b > 1.05 * a {
            out.push(format!(
                "false sharing costs {:.1}x here: counters 8 bytes apart reach {:.0} M increments/s, far apart {:.0} M",
                b / a,
                a / 1e6,
                b / 1e6
            ));
        } else if a > 0.0 {
            out.push(format!(
                "no false-sharing cost measured here: counters 8 bytes apart reach {:.0} M increments/s, far apart {:.0} M",
                a / 1e6,
                b / 1e6
            ));
        }
    }
    if let (Some(l64), Some(l128)) = (at(64), at(128)) {
        if l64 > 0.0 {
            let r = l128 / l64;
            let vs = compared(r, "a stride of 64");
            out.push(if r > 1.05 {
                format!("a stride of 128 bytes is {vs}: the adjacent-line prefetcher pulls pairs of lines; pad to 128")
            } else {
                format!("a stride of 128 bytes is {vs}: no adjacent-line effect measured; 64 bytes suffices")
            });
        }
    }
    out
}
