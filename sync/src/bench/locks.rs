//! libmctop's lock experiment (paper §7.1): threads placed by a policy repeatedly take one
//! of K locks, hold it for a critical section of a given length (touching the protected
//! value and then busy-waiting on the clock), release it and pause briefly; acquisitions per
//! second and fairness (fewest over most acquisitions of a thread) for every lock kind and
//! backoff, and for `std::sync::Mutex`, `parking_lot::Mutex` and `spin::Mutex` in the same
//! run.

use std::time::Duration;

use crossbeam_utils::CachePadded;
use topoprobe_model::results::bench::compared;
pub use topoprobe_model::results::bench::{LockResult, LocksReport};
use topoprobe_model::{median, Topology};
use topoprobe_place::Policy;
use topoprobe_sys::clock::Clock;

use super::{check_runs, workers};
use crate::backoff::{Backoff, BackoffKind, Wait};
use crate::error::SyncError;
use crate::locks::{RawClh, RawCohort, RawMcs, RawTas, RawTicket, RawTtas, WithWait};
use crate::LockKind;

/// Largest accepted thread count.
pub const MAX_THREADS: usize = 4096;
/// Largest accepted lock count.
pub const MAX_LOCKS: usize = 1 << 16;
/// Longest accepted critical section or pause, ns.
pub const MAX_SECTION_NS: f64 = 1e8;
/// Longest accepted duration of one measurement.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Threads (placed by `policy`).
    pub threads: usize,
    /// Locks; each acquisition picks one at random.
    pub locks: usize,
    /// Length of one measurement.
    pub duration: Duration,
    /// Length of the critical section, ns.
    pub cs_ns: f64,
    /// Pause after each release, ns ("threads pause after each iteration to avoid long
    /// runs", paper §7.1).
    pub pause_ns: f64,
    /// Placement policy of the threads.
    pub policy: Policy,
    /// Runs of every configuration (the median is reported).
    pub runs: usize,
    /// Lock kinds.
    pub kinds: Vec<LockKind>,
    /// Backoffs.
    pub backoffs: Vec<BackoffKind>,
    /// Whether to run `std`, `parking_lot` and `spin` mutexes too.
    pub baselines: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            threads: 2,
            locks: 1,
            duration: Duration::from_secs(1),
            cs_ns: 1000.0,
            pause_ns: 100.0,
            policy: Policy::ConCoreHwc,
            runs: 1,
            kinds: LockKind::ALL.to_vec(),
            backoffs: vec![BackoffKind::None, BackoffKind::Fixed, BackoffKind::Educated],
            baselines: true,
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
        if self.locks == 0 || self.locks > MAX_LOCKS {
            return Err(SyncError::parameter(
                "locks",
                self.locks,
                format!("1 to {MAX_LOCKS}"),
            ));
        }
        for (what, v) in [("cs-ns", self.cs_ns), ("pause-ns", self.pause_ns)] {
            if !(0.0..=MAX_SECTION_NS).contains(&v) {
                return Err(SyncError::parameter(
                    what,
                    v,
                    format!("0 to {MAX_SECTION_NS} ns"),
                ));
            }
        }
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return Err(SyncError::parameter(
                "duration",
                self.duration.as_secs_f64(),
                format!("more than 0 s, at most {} s", MAX_DURATION.as_secs()),
            ));
        }
        if self.kinds.is_empty() && !self.baselines {
            return Err(SyncError::parameter(
                "kinds",
                "(none)",
                "at least one lock kind, or the baselines",
            ));
        }
        check_runs(self.runs)
    }

    /// Number of measurements the configuration makes.
    #[must_use]
    pub fn measurements(&self) -> usize {
        let baselines = if self.baselines { BASELINES.len() } else { 0 };
        self.runs * (self.kinds.len() * self.backoffs.len() + baselines)
    }
}

/// The mutexes of other libraries measured beside topoprobe's.
pub const BASELINES: [&str; 3] = ["std", "parking_lot", "spin"];

/// One measurement: total acquisitions per second and fairness.
struct Sample {
    rate: f64,
    fairness: f64,
}

/// A lock the experiment can take.
trait Take: Sync {
    fn with(&self, f: &mut dyn FnMut(&mut u64));
}

impl<R: lock_api::RawMutex + Sync + Send> Take for lock_api::Mutex<R, u64> {
    #[inline]
    fn with(&self, f: &mut dyn FnMut(&mut u64)) {
        f(&mut self.lock());
    }
}

struct StdMutex(std::sync::Mutex<u64>);
impl Take for StdMutex {
    #[inline]
    fn with(&self, f: &mut dyn FnMut(&mut u64)) {
        let mut g = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut g);
    }
}

/// Runs the experiment; `progress(done, total)` after each measurement.
///
/// # Errors
///
/// A parameter out of range, an educated backoff the topology cannot give (latencies in
/// cycles without a frequency), a placement that cannot hold the threads, or a thread that
/// cannot be pinned.
pub fn run(
    topo: &Topology,
    config: &Config,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LocksReport, SyncError> {
    let results = measure_all(topo, config, progress)?;
    Ok(LocksReport {
        threads: config.threads,
        locks: config.locks,
        duration_s: config.duration.as_secs_f64(),
        cs_ns: config.cs_ns,
        pause_ns: config.pause_ns,
        policy: config.policy.to_string(),
        runs: config.runs,
        clock: Clock::get().describe(),
        advice: advice(&results),
        results,
    })
}

/// Every lock and backoff of the configuration, runs interleaved.
fn measure_all(
    topo: &Topology,
    config: &Config,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<LockResult>, SyncError> {
    config.check()?;
    let placement = workers::placement(topo, config.policy, config.threads)?;
    let mut lines: Vec<(String, String)> = Vec::new();
    for k in &config.kinds {
        for b in &config.backoffs {
            lines.push((k.as_str().into(), b.as_str().into()));
        }
    }
    if config.baselines {
        for b in BASELINES {
            lines.push((b.into(), "native".into()));
        }
    }
    let educated = if config.backoffs.contains(&BackoffKind::Educated) {
        Wait::new(&Backoff::Educated(topo))?
    } else {
        Wait::NONE
    };
    let waits = [Wait::NONE, Wait::new(&Backoff::Fixed)?, educated];
    let wait_of = |b: &str| match b {
        "fixed" => waits[1].clone(),
        "educated" => waits[2].clone(),
        _ => waits[0].clone(),
    };
    let total = config.measurements();
    let mut samples: Vec<Vec<Sample>> = (0..lines.len()).map(|_| Vec::new()).collect();
    let mut done = 0;
    for _ in 0..config.runs {
        for (i, (lock, backoff)) in lines.iter().enumerate() {
            let w = wait_of(backoff);
            let n = config.locks;
            let s = match lock.as_str() {
                "tas" => measure(&placement, config, &many(n, || kind::<RawTas>(&w)))?,
                "ttas" => measure(&placement, config, &many(n, || kind::<RawTtas>(&w)))?,
                "ticket" => measure(&placement, config, &many(n, || kind::<RawTicket>(&w)))?,
                "mcs" => measure(&placement, config, &many(n, || kind::<RawMcs>(&w)))?,
                "clh" => measure(&placement, config, &many(n, || kind::<RawClh>(&w)))?,
                "cohort" => measure(
                    &placement,
                    config,
                    &many(n, || {
                        lock_api::Mutex::<RawCohort, u64>::from_raw(
                            RawCohort::new(topo, w.clone()),
                            0,
                        )
                    }),
                )?,
                "std" => measure(
                    &placement,
                    config,
                    &many(n, || StdMutex(std::sync::Mutex::new(0))),
                )?,
                "parking_lot" => measure(
                    &placement,
                    config,
                    &many(n, || parking_lot::Mutex::new(0u64)),
                )?,
                _ => measure(
                    &placement,
                    config,
                    &many(n, || spin::lock_api::Mutex::new(0u64)),
                )?,
            };
            samples[i].push(s);
            done += 1;
            progress(done, total);
        }
    }
    Ok(lines
        .into_iter()
        .zip(samples)
        .map(|((lock, backoff), s)| {
            let rates: Vec<f64> = s.iter().map(|x| x.rate).collect();
            let fair: Vec<f64> = s.iter().map(|x| x.fairness).collect();
            LockResult {
                lock,
                backoff,
                threads: config.threads,
                acquisitions_per_s: median(&rates).unwrap_or(f64::NAN),
                fairness: median(&fair).unwrap_or(f64::NAN),
                runs: rates,
            }
        })
        .collect())
}

fn kind<R: WithWait + lock_api::RawMutex>(w: &Wait) -> lock_api::Mutex<R, u64> {
    lock_api::Mutex::from_raw(R::with_wait(w.clone()), 0)
}

fn many<M>(n: usize, make: impl Fn() -> M) -> Vec<CachePadded<M>> {
    (0..n).map(|_| CachePadded::new(make())).collect()
}

/// One measurement over the given locks.
fn measure<M: Take>(
    placement: &topoprobe_place::Placement,
    config: &Config,
    locks: &[CachePadded<M>],
) -> Result<Sample, SyncError> {
    let clock = Clock::get();
    let duration_ns = config.duration.as_nanos() as f64;
    let counts = workers::run(placement, config.threads, |i| {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let start = clock.now();
        let mut count = 0u64;
        let mut elapsed;
        loop {
            let l = if locks.len() == 1 {
                0
            } else {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % locks.len() as u64) as usize
            };
            locks[l].with(&mut |v| {
                *v = v.wrapping_add(1);
                clock.spin_ns(config.cs_ns);
            });
            count += 1;
            clock.spin_ns(config.pause_ns);
            elapsed = clock.ns_between(start, clock.now());
            if elapsed >= duration_ns {
                break;
            }
        }
        (count, elapsed)
    })?;
    let total: u64 = counts.iter().map(|c| c.0).sum();
    let longest = counts.iter().map(|c| c.1).fold(0.0, f64::max).max(1.0);
    let most = counts.iter().map(|c| c.0).max().unwrap_or(0);
    let fewest = counts.iter().map(|c| c.0).min().unwrap_or(0);
    let mut check = 0u64;
    for l in locks {
        l.with(&mut |v| check += *v);
    }
    if check != total {
        return Err(SyncError::verification(format!(
            "the locks' counters sum to {check}, but the threads counted {total} acquisitions"
        )));
    }
    Ok(Sample {
        rate: total as f64 / (longest / 1e9),
        fairness: if most == 0 {
            0.0
        } else {
            fewest as f64 / most as f64
        },
    })
}

/// What a user can act on, from the results: the fastest lock here, and how educated
/// backoff compares with no backoff for each kind.
#[must_use]
pub fn advice(results: &[LockResult]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(best) = results
        .iter()
        .max_by(|a, b| a.acquisitions_per_s.total_cmp(&b.acquisitions_per_s))
    {
        let which = if best.backoff == "native" {
            best.lock.clone()
        } else {
            format!("{} ({} backoff)", best.lock, best.backoff)
        };
        out.push(format!(
            "fastest here: {which}, {:.3} M acquisitions/s, fairness {:.2}",
            best.acquisitions_per_s / 1e6,
            best.fairness
        ));
    }
    for k in LockKind::ALL {
        let find = |b: &str| {
            results
                .iter()
                .find(|r| r.lock == k.as_str() && r.backoff == b)
                .map(|r| r.acquisitions_per_s)
        };
        if let (Some(none), Some(edu)) = (find("none"), find("educated")) {
            if none > 0.0 && edu > 0.0 {
                out.push(format!(
                    "{}: educated backoff is {}",
                    k.as_str(),
                    compared(edu / none, "no backoff")
                ));
            }
        }
    }
    out
}
