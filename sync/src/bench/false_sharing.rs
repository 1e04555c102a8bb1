//! False sharing (the talk's experiment): each thread increments its own counter with an
//! atomic read-modify-write (a plain load and store would be served by the thread's own
//! store buffer and hide the line's travels); the counters are `stride` bytes apart, so that at strides
//! under a cache line they share lines. The stride from which throughput stops growing is
//! the padding to use; whether 128 beats 64 shows the adjacent-line prefetcher pulling
//! pairs of lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use topoprobe_model::Topology;
use topoprobe_place::Policy;

use super::{median, workers};
use crate::clock::Clock;
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

/// One line of the results.
#[derive(Debug, Clone, Serialize)]
pub struct StrideResult {
    /// Distance between two threads' counters, bytes.
    pub stride_bytes: usize,
    /// Threads.
    pub threads: usize,
    /// Median increments per second, all threads together.
    pub ops_per_s: f64,
    /// Increments per second of every run.
    pub runs: Vec<f64>,
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
) -> Result<Vec<StrideResult>, SyncError> {
    if config.threads == 0 || config.threads > super::locks::MAX_THREADS {
        return Err(SyncError::parameter(
            "threads",
            config.threads,
            format!("1 to {}", super::locks::MAX_THREADS),
        ));
    }
    if let Some(&s) = config
        .strides
        .iter()
        .find(|&&s| s == 0 || s % 8 != 0 || s > MAX_STRIDE)
    {
        return Err(SyncError::parameter(
            "stride",
            s,
            format!("a multiple of 8 from 8 to {MAX_STRIDE}"),
        ));
    }
    if config.runs == 0 || config.runs > 1000 || config.duration.is_zero() {
        return Err(SyncError::parameter(
            "runs/duration",
            format!("{} runs of {:?}", config.runs, config.duration),
            "1 to 1000 runs of more than 0 s",
        ));
    }
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
            ops_per_s: median(&r),
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
    if let (Some(a), Some(b)) = (
        at(8),
        at(results.iter().map(|r| r.stride_bytes).max().unwrap_or(8)),
    ) {
        if a > 0.0 {
            out.push(format!(
                "false sharing costs {:.1}x here: counters 8 bytes apart reach {:.0} M increments/s, far apart {:.0} M",
                b / a,
                a / 1e6,
                b / 1e6
            ));
        }
    }
    if let (Some(l64), Some(l128)) = (at(64), at(128)) {
        if l64 > 0.0 {
            let r = l128 / l64;
            out.push(if r > 1.05 {
                format!("128 bytes is {r:.2}x 64 bytes: the adjacent-line prefetcher pulls pairs of lines; pad to 128")
            } else {
                format!("128 bytes is {r:.2}x 64 bytes: no adjacent-line effect measured; 64 bytes suffices")
            });
        }
    }
    out
}
