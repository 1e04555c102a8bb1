//! SMT detection by measurement (paper §3.5): two hardware contexts of one core share its
//! pipeline, so a compute-bound loop slows down when its sibling runs the same loop, and
//! does not when the other context belongs to another core.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use topoprobe_model::format::plural;
use topoprobe_sys::affinity;

/// A slowdown at least this large means the two contexts share a core.
pub const SMT_SLOWDOWN: f64 = 1.5;
/// Iterations of the compute loop per run (a few milliseconds).
const ITERATIONS: u64 = 3_000_000;
/// Alternated rounds (alone, beside the partner).
const ROUNDS: usize = 7;

/// Iterations of each of the two first, timed parts of the ramp-up: the loop's pace on this
/// machine, from which the runs are fitted to the time allowed (both together are no more
/// than the least run).
const PACE_ITERATIONS: u64 = LEAST_ITERATIONS / 2;
/// Fewest iterations of a shortened run before rounds are dropped (about 0.25 ms at 3 GHz).
const SHORT_ITERATIONS: u64 = ITERATIONS / 32;
/// Fewest iterations of a run at all.
const LEAST_ITERATIONS: u64 = ITERATIONS / 256;
/// Fewest rounds before runs get shorter than [`SHORT_ITERATIONS`]: a median of three.
const SHORT_ROUNDS: usize = 3;
/// The pause between starting the partner and the timed run beside it, seconds.
const GAP_S: f64 = 200e-6;

/// Seconds the probe of one pair is expected to take: the loop run once to ramp the core
/// up, then alone and beside its partner in each round (about 8 ms a run at 3 GHz).
#[must_use]
pub fn expected_seconds() -> f64 {
    // Eight dependent multiply-add chains: about eight cycles an iteration.
    SmtRuns::FULL.seconds(8.0 / 3.0e9)
}

/// How much the probe of one pair runs: the loop's iterations per run and the rounds
/// (each a run alone and one beside the partner, after a ramp-up run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmtRuns {
    /// Iterations of the loop per run.
    pub iterations: u64,
    /// Rounds.
    pub rounds: usize,
}

impl SmtRuns {
    /// The probe's runs when time allows: 3 000 000 iterations, seven rounds.
    pub const FULL: Self = Self {
        iterations: ITERATIONS,
        rounds: ROUNDS,
    };

    /// The least the probe runs on a pair, however short its time.
    pub const LEAST: Self = Self {
        iterations: LEAST_ITERATIONS,
        rounds: 1,
    };

    /// Seconds these runs take when an iteration takes `per_iteration` seconds: the
    /// ramp-up (its timed part included), then the rounds.
    #[must_use]
    pub fn seconds(&self, per_iteration: f64) -> f64 {
        let ramp = self.iterations.max(2 * PACE_ITERATIONS);
        let runs = ramp + 2 * self.rounds as u64 * self.iterations;
        runs as f64 * per_iteration + self.rounds as f64 * GAP_S
    }

    /// Whether these are fewer or shorter runs than [`SmtRuns::FULL`].
    #[must_use]
    pub fn shortened(&self) -> bool {
        *self != Self::FULL
    }

    /// The most of [`SmtRuns::FULL`] that fits `seconds` when an iteration takes
    /// `per_iteration` seconds: shorter runs first (down to a 32nd of the full run),
    /// then fewer rounds (down to three), then shorter runs again, and one round; never
    /// less than [`SmtRuns::LEAST`].
    #[must_use]
    pub fn fit(seconds: f64, per_iteration: f64) -> Self {
        if !(per_iteration.is_finite() && per_iteration > 0.0) || seconds.is_nan() {
            return Self::FULL;
        }
        if Self::FULL.seconds(per_iteration) <= seconds {
            return Self::FULL;
        }
        // Iterations of `rounds` rounds that fit (the ramp-up is one run more).
        let iterations_for = |rounds: usize| -> u64 {
            let runs = (1 + 2 * rounds) as f64;
            let t = (seconds - rounds as f64 * GAP_S).max(0.0) / (runs * per_iteration);
            t.min(ITERATIONS as f64) as u64
        };
        let it = iterations_for(ROUNDS);
        if it >= SHORT_ITERATIONS {
            return Self {
                iterations: it,
                rounds: ROUNDS,
            };
        }
        for rounds in (SHORT_ROUNDS..ROUNDS).rev() {
            if iterations_for(rounds) >= SHORT_ITERATIONS {
                return Self {
                    iterations: SHORT_ITERATIONS,
                    rounds,
                };
            }
        }
        for rounds in [SHORT_ROUNDS, 1] {
            let it = iterations_for(rounds);
            if it >= LEAST_ITERATIONS {
                return Self {
                    iterations: it,
                    rounds,
                };
            }
        }
        Self::LEAST
    }
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

/// Seconds `iterations` of the loop take on the current thread.
fn timed_work(iterations: u64) -> f64 {
    let t = Instant::now();
    std::hint::black_box(work(std::hint::black_box(iterations)));
    t.elapsed().as_secs_f64()
}

/// The probe of one pair within a time allowed: its verdict, the runs it made and the
/// loop's pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmtRun {
    /// The verdict.
    pub test: SmtTest,
    /// The runs made (rounds done, iterations per run).
    pub runs: SmtRuns,
    /// Seconds an iteration of the loop took alone on the first context.
    pub per_iteration: f64,
}

impl SmtRun {
    /// `test` made with [`SmtRuns::FULL`] at the plan's pace (a verdict from elsewhere: a
    /// scripted probe, a test).
    #[must_use]
    pub fn full(test: SmtTest) -> Self {
        Self {
            test,
            runs: SmtRuns::FULL,
            per_iteration: expected_seconds() / SmtRuns::FULL.seconds(1.0),
        }
    }
}

/// Measures whether `a` and `b` share a core: rounds of the loop on `a` alone and beside
/// the same loop on `b`, alternated so that frequency changes and host noise hit both;
/// the slowdown is the median of the per-round ratios.
///
/// # Errors
///
/// Returns a message naming the CPU when a thread cannot be pinned.
pub fn test_pair(a: u32, b: u32) -> Result<SmtTest, String> {
    test_pair_within(a, b, f64::INFINITY).map(|r| r.test)
}

/// [`test_pair`] within `seconds`: the first part of the ramp-up times the loop, the runs
/// are fitted to the time left at that pace ([`SmtRuns::fit`]: shorter runs, then fewer
/// rounds), and a round that would end past `seconds` is not started (one round is always
/// made).
///
/// # Errors
///
/// As [`test_pair`].
pub fn test_pair_within(a: u32, b: u32, seconds: f64) -> Result<SmtRun, String> {
    let busy = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let chunk = AtomicU64::new(ITERATIONS / 64);
    let pinned = Barrier::new(2);
    std::thread::scope(|s| -> Result<SmtRun, String> {
        let partner = s.spawn(|| -> Result<(), String> {
            let pin = affinity::pin_current_thread(b).map_err(|e| e.to_string());
            pinned.wait();
            pin?;
            while !done.load(Ordering::Acquire) {
                if busy.load(Ordering::Acquire) {
                    let n = chunk.load(Ordering::Relaxed);
                    std::hint::black_box(work(std::hint::black_box(n)));
                } else {
                    std::hint::spin_loop();
                }
            }
            Ok(())
        });
        let measured = s.spawn(|| -> Result<SmtRun, String> {
            let pin = affinity::pin_current_thread(a).map_err(|e| e.to_string());
            pinned.wait();
            let result = pin.map(|()| {
                let started = Instant::now();
                // Ramp the core up, the first parts timed: the pace the runs are fitted to
                // (the faster of two: the first may pay for a cold start).
                let per_iteration = timed_work(PACE_ITERATIONS).min(timed_work(PACE_ITERATIONS))
                    / PACE_ITERATIONS as f64;
                let left = seconds - started.elapsed().as_secs_f64();
                let mut runs = SmtRuns::fit(left, per_iteration);
                chunk.store((runs.iterations / 64).max(1), Ordering::Relaxed);
                std::hint::black_box(work(runs.iterations.saturating_sub(2 * PACE_ITERATIONS)));
                let mut ratios = Vec::with_capacity(runs.rounds);
                let mut round = 0.0_f64;
                for _ in 0..runs.rounds {
                    let at = started.elapsed().as_secs_f64();
                    if !ratios.is_empty() && at + round > seconds {
                        break;
                    }
                    busy.store(false, Ordering::Release);
                    let alone = timed_work(runs.iterations);
                    busy.store(true, Ordering::Release);
                    std::thread::sleep(Duration::from_secs_f64(GAP_S));
                    let together = timed_work(runs.iterations);
                    ratios.push(together / alone);
                    round = started.elapsed().as_secs_f64() - at;
                }
                runs.rounds = ratios.len();
                SmtRun {
                    test: SmtTest {
                        a,
                        b,
                        slowdown: topoprobe_model::median(&ratios).unwrap_or(1.0),
                    },
                    runs,
                    per_iteration,
                }
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
    })
}

/// The SMT probe of candidate pairs within a share of time: what it found and what the
/// share left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmtProbe {
    /// The verdicts, in the candidates' order.
    pub tests: Vec<SmtTest>,
    /// Candidate pairs not tested: the share could not hold them.
    pub left_out: Vec<(u32, u32)>,
    /// Pairs tested with fewer or shorter runs than [`SmtRuns::FULL`], with the runs made.
    pub shortened: Vec<(u32, u32, SmtRuns)>,
    /// What the share changed, for the user (empty when nothing was left out).
    pub notes: Vec<String>,
}

/// Tests the candidate `pairs` (fastest first) within `seconds` read on `now` (seconds on
/// any clock): each pair gets an even part of the time left, as many pairs as the least
/// runs at the loop's measured pace fit, the others are left out; `test(a, b, allowed)`
/// runs one pair within `allowed` seconds ([`test_pair_within`] in a live run). The first
/// pair is always tested (shortened to fit), so a run measures something; nothing is ever
/// an error for time.
///
/// # Errors
///
/// The pair and the message of the first test that fails (a CPU that cannot be pinned).
pub fn probe_within(
    pairs: &[(u32, u32)],
    seconds: f64,
    now: &dyn Fn() -> f64,
    test: &mut dyn FnMut(u32, u32, f64) -> Result<SmtRun, String>,
) -> Result<SmtProbe, (u32, u32, String)> {
    let start = now();
    let mut out = SmtProbe::default();
    let mut pace: Option<f64> = None;
    for (i, &(a, b)) in pairs.iter().enumerate() {
        let left = seconds - (now() - start);
        let remaining = pairs.len() - i;
        // How many of the remaining pairs the time left holds at their least.
        let fit = match pace {
            None => remaining,
            Some(p) => {
                let least = SmtRuns::LEAST.seconds(p);
                ((left / least).max(0.0) as usize).min(remaining)
            }
        };
        if fit == 0 {
            out.left_out.extend_from_slice(&pairs[i..]);
            break;
        }
        let run = test(a, b, left / fit as f64).map_err(|m| (a, b, m))?;
        if run.per_iteration.is_finite() && run.per_iteration > 0.0 {
            pace = Some(run.per_iteration);
        }
        if run.runs.shortened() {
            out.shortened.push((a, b, run.runs));
        }
        out.tests.push(run.test);
    }
    let spent = now() - start;
    if !out.left_out.is_empty() {
        let names: Vec<String> = out
            .left_out
            .iter()
            .map(|(a, b)| format!("{a}-{b}"))
            .collect();
        out.notes.push(format!(
            "smt: {} of {} candidate pairs tested within the probe's {seconds:.2} s ({spent:.2} s \
             spent); left out: {}",
            out.tests.len(),
            pairs.len(),
            names.join(", ")
        ));
    }
    if !out.shortened.is_empty() {
        let runs: Vec<String> = out
            .shortened
            .iter()
            .map(|(a, b, r)| {
                format!(
                    "{a}-{b}: {} × {} iterations",
                    plural(r.rounds, "round"),
                    r.iterations
                )
            })
            .collect();
        out.notes.push(format!(
            "smt: runs shortened to fit the probe's {seconds:.2} s (instead of {} × {} \
             iterations): {}",
            plural(SmtRuns::FULL.rounds, "round"),
            SmtRuns::FULL.iterations,
            runs.join(", ")
        ));
    }
    Ok(out)
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
    fn runs_get_shorter_then_fewer_as_the_time_shrinks() {
        let native = 8.0 / 3.0e9;
        assert_eq!(SmtRuns::fit(1.0, native), SmtRuns::FULL);
        assert_eq!(SmtRuns::fit(f64::INFINITY, native), SmtRuns::FULL);
        assert!((SmtRuns::FULL.seconds(native) - expected_seconds()).abs() < 1e-12);
        // 20× slower (an emulated guest), every time allowed fits.
        let slow = 20.0 * native;
        let mut last = SmtRuns::FULL;
        for allowed in [2.0, 0.5, 0.2, 0.05, 0.02, 0.005, 0.0] {
            let r = SmtRuns::fit(allowed, slow);
            assert!(
                r.rounds >= 1 && r.iterations >= SmtRuns::LEAST.iterations,
                "{r:?}"
            );
            assert!(
                r.seconds(slow) <= allowed + 1e-9 || r == SmtRuns::LEAST,
                "{allowed}: {r:?} takes {}",
                r.seconds(slow)
            );
            assert!(
                r.seconds(slow) <= last.seconds(slow) + 1e-12,
                "{r:?} after {last:?}"
            );
            last = r;
        }
        // Shorter runs before fewer rounds.
        let r = SmtRuns::fit(expected_seconds() * 20.0 / 4.0, slow);
        assert_eq!(r.rounds, SmtRuns::FULL.rounds, "{r:?}");
        assert!(r.iterations < SmtRuns::FULL.iterations && r.shortened());
        assert_eq!(SmtRuns::fit(0.0, slow), SmtRuns::LEAST);
    }

    #[test]
    fn the_probe_keeps_within_its_share_on_a_simulated_clock() {
        use std::cell::Cell;
        let clock = Cell::new(0.0_f64);
        let now = || clock.get();
        // A machine where an iteration takes 30× the plan's: each pair spends what its
        // runs take at that pace.
        let pace = 30.0 * 8.0 / 3.0e9;
        let mut test = |a: u32, b: u32, allowed: f64| -> Result<SmtRun, String> {
            let runs = SmtRuns::fit(allowed, pace);
            clock.set(clock.get() + runs.seconds(pace));
            Ok(SmtRun {
                test: SmtTest {
                    a,
                    b,
                    slowdown: 1.0,
                },
                runs,
                per_iteration: pace,
            })
        };
        let pairs = [(0, 1), (2, 3), (4, 5)];
        let share = expected_seconds() * 3.0;
        let p = probe_within(&pairs, share, &now, &mut test).unwrap();
        assert!(clock.get() <= share * 1.01, "{} of {share}", clock.get());
        assert!(!p.tests.is_empty());
        assert!(p.notes.iter().any(|n| n.contains("shortened")), "{p:?}");
        // A share that cannot hold the least of the three: the first is tested, the others
        // are left out and said.
        clock.set(0.0);
        let least = SmtRuns::LEAST.seconds(pace);
        let p = probe_within(&pairs, least * 1.5, &now, &mut test).unwrap();
        assert_eq!(p.tests.len(), 1, "{p:?}");
        assert_eq!(p.left_out, [(2, 3), (4, 5)]);
        assert!(
            p.notes.iter().any(|n| n.contains("left out: 2-3, 4-5")),
            "{p:?}"
        );
        // Time enough: every pair in full, nothing said.
        clock.set(0.0);
        let p = probe_within(&pairs, f64::INFINITY, &now, &mut test).unwrap();
        assert_eq!(p.tests.len(), 3);
        assert!(p.notes.is_empty() && p.shortened.is_empty(), "{p:?}");
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
        // No time at all: one round of the least runs, still a verdict.
        let r = test_pair_within(cpus[0], cpus[1], 0.0).expect("probe");
        assert_eq!(r.runs, SmtRuns::LEAST, "{r:?}");
        assert!(
            r.test.slowdown.is_finite() && r.per_iteration > 0.0,
            "{r:?}"
        );
        assert!(test_pair(cpus[0], 100_000).is_err());
    }
}
