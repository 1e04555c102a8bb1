//! SMT detection by measurement (paper §3.5): two hardware contexts of one core share its
//! pipeline, so a compute-bound loop slows down when its sibling runs the same loop, and
//! does not when the other context belongs to another core.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::stats::median;
use topoprobe_sys::affinity;

/// A slowdown at least this large means the two contexts share a core.
pub const SMT_SLOWDOWN: f64 = 1.5;
/// Iterations of the compute loop per run (a few milliseconds).
const ITERATIONS: u64 = 3_000_000;
/// Alternated rounds (alone, beside the partner).
const ROUNDS: usize = 7;

/// Seconds the probe of one pair is expected to take: the loop run once to ramp the core
/// up, then alone and beside its partner in each round (about 8 ms a run at 3 GHz).
#[must_use]
pub fn expected_seconds() -> f64 {
    // Eight dependent multiply-add chains: about eight cycles an iteration.
    let run = ITERATIONS as f64 * 8.0 / 3.0e9;
    (1 + 2 * ROUNDS) as f64 * run + ROUNDS as f64 * 200e-6
}

/// The verdict of the SMT probe on one pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmtTest {
    /// First context.
    pub a: u32,
    /// Second context.
    pub b: u32,
    /// Time of the loop on `a` while `b` runs it too, over its time alone.
    pub slowdown: f64,
}

impl SmtTest {
    /// Whether the slowdown shows a shared core.
    #[must_use]
    pub fn shares_core(&self) -> bool {
        self.slowdown >= SMT_SLOWDOWN
    }
}

/// A throughput-bound loop: eight independent chains keep every integer unit busy, so a
/// sibling running the same loop halves the throughput of a shared core.
fn work(iterations: u64) -> u64 {
    let mut x = [1_u64, 2, 3, 4, 5, 6, 7, 8];
    for i in 0..iterations {
        for (k, v) in x.iter_mut().enumerate() {
            *v = v
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i ^ k as u64);
        }
    }
    x.iter().fold(0, |a, &b| a ^ b)
}

/// Seconds one run of the loop takes on the current thread.
fn timed_work() -> f64 {
    let t = Instant::now();
    std::hint::black_box(work(std::hint::black_box(ITERATIONS)));
    t.elapsed().as_secs_f64()
}

/// Measures whether `a` and `b` share a core: rounds of the loop on `a` alone and beside
/// the same loop on `b`, alternated so that frequency changes and host noise hit both;
/// the slowdown is the median of the per-round ratios.
///
/// # Errors
///
/// Returns a message naming the CPU when a thread cannot be pinned.
pub fn test_pair(a: u32, b: u32) -> Result<SmtTest, String> {
    let busy = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let pinned = Barrier::new(2);
    let ratios = std::thread::scope(|s| -> Result<Vec<f64>, String> {
        let partner = s.spawn(|| -> Result<(), String> {
            let pin = affinity::pin_current_thread(b).map_err(|e| e.to_string());
            pinned.wait();
            pin?;
            while !done.load(Ordering::Acquire) {
                if busy.load(Ordering::Acquire) {
                    std::hint::black_box(work(std::hint::black_box(ITERATIONS / 64)));
                } else {
                    std::hint::spin_loop();
                }
            }
            Ok(())
        });
        let measured = s.spawn(|| -> Result<Vec<f64>, String> {
            let pin = affinity::pin_current_thread(a).map_err(|e| e.to_string());
            pinned.wait();
            let result = pin.map(|()| {
                std::hint::black_box(work(ITERATIONS)); // ramp the core up
                (0..ROUNDS)
                    .map(|_| {
                        busy.store(false, Ordering::Release);
                        let alone = timed_work();
                        busy.store(true, Ordering::Release);
                        std::thread::sleep(Duration::from_micros(200));
                        let together = timed_work();
                        together / alone
                    })
                    .collect()
            });
            done.store(true, Ordering::Release);
            result
        });
        let r = measured
            .join()
            .map_err(|_| "the SMT probe thread panicked".to_string());
        done.store(true, Ordering::Release);
        partner
            .join()
            .map_err(|_| "the SMT probe thread panicked".to_string())??;
        r?
    })?;
    Ok(SmtTest {
        a,
        b,
        slowdown: median(&ratios).unwrap_or(1.0),
    })
}

/// The pairs worth testing for SMT in a latency table: mutually nearest pairs (each is the
/// other's fastest partner), fastest first, at most `max`. Siblings of one core are always
/// mutually nearest; on a machine without SMT these are cluster or socket neighbours, and
/// the probe says so.
#[must_use]
pub fn candidates(latency: &topoprobe_model::LatencyMatrix, max: usize) -> Vec<(usize, usize)> {
    let n = latency.len();
    let nearest: Vec<Option<(usize, f64)>> = (0..n)
        .map(|a| {
            (0..n)
                .filter(|&b| b != a)
                .filter_map(|b| latency.get(a, b).map(|v| (b, v)))
                .min_by(|x, y| x.1.total_cmp(&y.1))
        })
        .collect();
    let mut pairs: Vec<(usize, usize, f64)> = nearest
        .iter()
        .enumerate()
        .filter_map(|(a, n)| {
            let (b, v) = (*n)?;
            let mutual = nearest[b].is_some_and(|(c, _)| c == a);
            (a < b && mutual).then_some((a, b, v))
        })
        .collect();
    pairs.sort_by(|x, y| x.2.total_cmp(&y.2));
    pairs
        .into_iter()
        .take(max)
        .map(|(a, b, _)| (a, b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_mutually_nearest_pairs_fastest_first() {
        // Two cores of two siblings (0,2) and (1,3); siblings at 8 ns, others at 40 ns,
        // (1,3) slightly slower than (0,2).
        let m = topoprobe_model::LatencyMatrix::from_fn(4, |a, b| {
            Some(match (a.min(b), a.max(b)) {
                (0, 2) => 8.0,
                (1, 3) => 9.0,
                _ => 40.0,
            })
        });
        assert_eq!(candidates(&m, 4), vec![(0, 2), (1, 3)]);
        assert_eq!(candidates(&m, 1), vec![(0, 2)]);
        assert!(candidates(&topoprobe_model::LatencyMatrix::empty(3), 4).is_empty());
    }

    #[test]
    fn the_loop_is_deterministic() {
        assert_eq!(work(1000), work(1000));
        assert_ne!(work(1000), work(1001));
    }

    #[test]
    fn a_pair_of_this_machine_gets_a_slowdown() {
        let cpus = affinity::allowed_cpus().expect("cpus").to_vec();
        if cpus.len() < 2 {
            return;
        }
        let t = test_pair(cpus[0], cpus[1]).expect("probe");
        assert!(t.slowdown.is_finite() && t.slowdown > 0.0, "{t:?}");
        assert!(test_pair(cpus[0], 100_000).is_err());
    }
}
