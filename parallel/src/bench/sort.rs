//! The sort experiment (paper §7.2): the same random u32 and u64 arrays sorted by
//! topoprobe's sort (radix path, and the comparison path), rayon's `par_sort_unstable` in a
//! pool of the same number of threads, and the standard library's `sort_unstable` on one
//! thread; every result is checked (ordered, and the same multiset as the input).

use std::time::Instant;

use rayon::slice::ParallelSliceMut;
pub use topoprobe_model::results::bench::{SortReport, SortResult};
use topoprobe_model::{median, Topology};

use super::{check_bytes, check_runs};
use crate::error::ParallelError;
use crate::sort::{RadixKey, Sorter};

/// Smallest accepted array, bytes (one u64 key).
pub const MIN_BYTES: u64 = 8;
/// Largest accepted array, bytes.
pub const MAX_BYTES: u64 = 1 << 36;
/// Largest accepted thread count.
pub const MAX_THREADS: usize = 4096;

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

impl Config {
    /// Checks the limits (before any work: nothing is measured).
    ///
    /// # Errors
    ///
    /// [`ParallelError::Parameter`] naming the first value out of range.
    pub fn check(&self) -> Result<(), ParallelError> {
        check_bytes(self.bytes, MIN_BYTES, MAX_BYTES)?;
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ParallelError::parameter(
                "threads",
                self.threads,
                format!("1 to {MAX_THREADS}"),
            ));
        }
        check_runs(self.runs)
    }

    /// Bytes the experiment holds at once, planned before anything is allocated: the
    /// keys, the copy being sorted and the sort's scratch array, each [`Config::bytes`]
    /// (the u32 keys' arrays are freed before the u64 keys').
    #[must_use]
    pub fn peak_bytes(&self) -> u64 {
        self.bytes.saturating_mul(3)
    }

    /// Number of sorts the configuration runs (for progress).
    #[must_use]
    pub fn measurements(&self) -> usize {
        2 * self.runs * ALGORITHMS.len()
    }
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
) -> Result<SortReport, ParallelError> {
    config.check()?;
    let mut sorter = Sorter::new(topo, Some(config.threads))?;
    // Calibrated up to the larger array of the experiment (its u32 keys).
    sorter.calibrate_up_to(usize::try_from(config.bytes / 4).unwrap_or(usize::MAX));
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .build()
        .map_err(|e| ParallelError::Thread(e.to_string()))?;
    let total = config.measurements();
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
        bytes: config.bytes,
        threads: config.threads,
        runs: config.runs,
        seed: config.seed,
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
) -> Result<Vec<SortResult>, ParallelError> {
    let n = usize::try_from(config.bytes / std::mem::size_of::<K>() as u64).map_err(|_| {
        ParallelError::parameter(
            "size",
            topoprobe_model::size_text(config.bytes),
            "an array this machine can address",
        )
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
                return Err(ParallelError::Verification(format!(
                    "{alg} left {name} keys out of order"
                )));
            }
            if fingerprint(&work) != want {
                return Err(ParallelError::Verification(format!(
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
            seconds: median(&t).unwrap_or(f64::NAN),
            runs: t,
        })
        .collect())
}
