//! The sort experiment (paper §7.2): the same random u32 and u64 arrays sorted by
//! topoprobe's sort (radix path, and the comparison path), rayon's `par_sort_unstable` in a
//! pool of the same number of threads, and the standard library's `sort_unstable` on one
//! thread; every result is checked (ordered, and the same multiset as the input).

use std::time::Instant;

use rayon::slice::ParallelSliceMut;
use serde::Serialize;
use topoprobe_model::Topology;

use super::median;
use crate::error::SyncError;
use crate::sort::{RadixKey, Sorter};

/// Largest accepted array, bytes.
pub const MAX_BYTES: u64 = 1 << 36;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Size of each array, bytes.
    pub bytes: u64,
    /// Threads of the parallel sorts.
    pub threads: usize,
    /// Runs (the median is reported).
    pub runs: usize,
    /// Seed of the random keys.
    pub seed: u64,
}

/// The algorithms, as named in output.
pub const ALGORITHMS: [&str; 4] = [
    "topoprobe",
    "topoprobe_comparison",
    "rayon_par_sort_unstable",
    "std_sort_unstable",
];

/// One line of the results.
#[derive(Debug, Clone, Serialize)]
pub struct SortResult {
    /// `topoprobe` (radix path), `topoprobe_comparison`, `rayon_par_sort_unstable` or
    /// `std_sort_unstable`.
    pub algorithm: String,
    /// `u32` or `u64`.
    pub keys: String,
    /// Bytes sorted.
    pub bytes: u64,
    /// Threads (1 for `std`).
    pub threads: usize,
    /// Median seconds.
    pub seconds: f64,
    /// Seconds of every run.
    pub runs: Vec<f64>,
}

/// Everything the experiment found.
#[derive(Debug, Clone, Serialize)]
pub struct SortReport {
    /// Whether every result was checked and correct (an error is returned otherwise).
    pub verified: bool,
    /// What the sorter's calibration decided.
    pub calibration: Vec<String>,
    /// The timings.
    pub results: Vec<SortResult>,
}

/// Runs the experiment; `progress(done, total)` after each sort.
///
/// # Errors
///
/// A parameter out of range, a placement that cannot hold the threads, a rayon pool that
/// cannot start, or a result that is not the sorted input.
pub fn run(
    topo: &Topology,
    config: &Config,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<SortReport, SyncError> {
    if config.bytes < 8 || config.bytes > MAX_BYTES {
        return Err(SyncError::parameter(
            "size",
            config.bytes,
            format!("8 bytes to {MAX_BYTES} bytes"),
        ));
    }
    if config.runs == 0 || config.runs > 1000 {
        return Err(SyncError::parameter("runs", config.runs, "1 to 1000"));
    }
    let mut sorter = Sorter::new(topo, Some(config.threads))?;
    sorter.calibrate();
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .build()
        .map_err(|e| SyncError::Thread(e.to_string()))?;
    let total = 2 * config.runs * ALGORITHMS.len();
    let mut done = 0;
    let mut results = Vec::new();
    let mut tick = || {
        done += 1;
        progress(done, total);
    };
    results.extend(keys::<u32>(config, &sorter, &rayon, "u32", &mut tick)?);
    results.extend(keys::<u64>(config, &sorter, &rayon, "u64", &mut tick)?);
    Ok(SortReport {
        verified: true,
        calibration: sorter.notes().to_vec(),
        results,
    })
}

/// Random keys from a seed (xorshift).
trait Random: RadixKey {
    fn from_u64(x: u64) -> Self;
    fn mix(self) -> u64;
}
impl Random for u32 {
    fn from_u64(x: u64) -> Self {
        x as u32
    }
    fn mix(self) -> u64 {
        u64::from(self).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}
impl Random for u64 {
    fn from_u64(x: u64) -> Self {
        x
    }
    fn mix(self) -> u64 {
        self.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17)
    }
}

/// Runs every algorithm `runs` times on keys of type `K`, interleaved.
fn keys<K: Random>(
    config: &Config,
    sorter: &Sorter,
    rayon: &rayon::ThreadPool,
    name: &str,
    tick: &mut dyn FnMut(),
) -> Result<Vec<SortResult>, SyncError> {
    let n = usize::try_from(config.bytes / std::mem::size_of::<K>() as u64).map_err(|_| {
        SyncError::parameter("size", config.bytes, "an array this machine can address")
    })?;
    let mut x = config.seed | 1;
    let input: Vec<K> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            K::from_u64(x)
        })
        .collect();
    // Order-independent fingerprint of the multiset.
    let fingerprint = |v: &[K]| {
        v.iter().fold((0u64, 0u64), |(s, t), &k| {
            (s.wrapping_add(k.mix()), t ^ k.mix().rotate_left(7))
        })
    };
    let want = fingerprint(&input);
    let mut work = input.clone();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ALGORITHMS.len()];
    for _ in 0..config.runs {
        for (a, alg) in ALGORITHMS.iter().enumerate() {
            work.copy_from_slice(&input);
            let t = Instant::now();
            match a {
                0 => sorter.sort_radix(&mut work),
                1 => sorter.sort(&mut work),
                2 => rayon.install(|| work.par_sort_unstable()),
                _ => work.sort_unstable(),
            }
            let s = t.elapsed().as_secs_f64();
            if !work.windows(2).all(|w| w[0] <= w[1]) {
                return Err(SyncError::Verification(format!(
                    "{alg} left {name} keys out of order"
                )));
            }
            if fingerprint(&work) != want {
                return Err(SyncError::Verification(format!(
                    "{alg}'s output is not a permutation of its {name} input"
                )));
            }
            times[a].push(s);
            tick();
        }
    }
    Ok(ALGORITHMS
        .iter()
        .zip(times)
        .map(|(alg, t)| SortResult {
            algorithm: (*alg).to_string(),
            keys: name.to_string(),
            bytes: config.bytes,
            threads: if *alg == "std_sort_unstable" {
                1
            } else {
                config.threads
            },
            seconds: median(&t),
            runs: t,
        })
        .collect())
}
