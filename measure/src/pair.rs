//! The pair-latency probe: CAS ping-pong between two pinned threads.
//!
//! For every pair, a fresh cache line is allocated and first touched by the thread of the
//! first context (so that neither the line's home node nor an earlier owner biases the
//! pair). The first thread flips the line from even to odd with a compare-and-swap, the
//! second flips it back; one sample times many such round trips (amortized, so that a
//! coarsely stepping timer is negligible) and gives the one-way latency as
//! `elapsed / (2 × round trips)`.
//!
//! Each side waits for its turn by retrying the compare-and-swap itself ([`Wait::Cas`], as
//! core-to-core-latency does): an atomic read-modify-write asks for the line in the
//! exclusive state, so each hop of a round trip is one transfer of the line. Waiting with
//! plain loads and swapping once the turn is seen ([`Wait::Load`], the probe's first form)
//! costs two coherence operations per hop: the load's miss brings a shared copy (the
//! writer keeps an owned copy on AMD's MOESI), and the swap must then invalidate that copy
//! before it can write. On Zen 3 and Zen 4 guests that made the figure a steady 1.3× the
//! transfer; on Intel guests the upgrade is nearly free and both agree. Each pair is warmed up until consecutive batches agree
//! (DVFS ramp, paper §3.5), then measured in batches until the spread is under the
//! threshold (7%, raised on retries up to 14%), with outliers rejected.
//!
//! One noisy pair does not sink a run: when no batch gets under the threshold, the pair is
//! kept with its best batch and flagged ([`PairMeasurement::noisy`]). A partner thread that
//! stalls is given a second try; a pair that stalls twice, or has no usable sample, is a
//! *passing* failure ([`PairFailure::is_passing`]): the [`PairLatency`] view gives it up
//! ([`PairReading::GaveUp`]) and the run goes on without it. A CPU that cannot be pinned
//! stops the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use topoprobe_model::{median, Noisy, PairLatency, PairReading, PairSample, ProbeError};

use crate::stats::{Adaptive, RepetitionPolicy, Summary, Verdict, WarmUp};
use crate::timer::Timer;
use topoprobe_sys::affinity;

mod error;

pub use error::{PairError, PairFailure};

/// A cache line of its own (128 bytes: adjacent-line prefetchers pair 64-byte lines).
#[repr(align(128))]
struct Line(AtomicU64);

/// The value that tells the responder to stop (odd, never reached by counting).
const STOP: u64 = u64::MAX;
/// Samples per warm-up batch.
const WARMUP_BATCH: usize = 4;
/// A single sample longer than this means the partner is not running: the try fails.
const STALL: Duration = Duration::from_secs(2);
/// Tries of a pair whose partner stalls (the second is usually on a quiet CPU again).
const STALL_TRIES: usize = 2;

/// How each side of the ping-pong waits for its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// Retry the compare-and-swap until it succeeds: one line transfer per hop.
    #[default]
    Cas,
    /// Spin on plain loads, then swap: a transfer and an invalidation per hop (kept to
    /// compare with the first form of the probe).
    Load,
}

/// Settings of the probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeConfig {
    /// Repetitions and spread thresholds.
    pub policy: RepetitionPolicy,
    /// Round trips per sample; `None` chooses them so that a sample lasts about
    /// [`ProbeConfig::sample_ns`].
    pub round_trips: Option<u32>,
    /// Target duration of one sample when the round trips are chosen automatically.
    pub sample_ns: f64,
    /// Whether to warm the pair up until it is steady before measuring.
    pub warm_up: bool,
    /// How each side waits for its turn.
    pub wait: Wait,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        Self {
            policy: RepetitionPolicy::default(),
            round_trips: None,
            sample_ns: 40_000.0,
            warm_up: true,
            wait: Wait::Cas,
        }
    }
}

/// One measured pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairMeasurement {
    /// First context (OS CPU number); it owns the cache line.
    pub a: u32,
    /// Second context (OS CPU number).
    pub b: u32,
    /// Robust summary of the accepted batch (of the best batch when [`noisy`](Self::noisy)):
    /// one-way latency in ns.
    pub summary: Summary,
    /// Round trips per sample.
    pub round_trips: u32,
    /// Batches measured (1 when the first batch was good).
    pub batches: usize,
    /// Warm-up batches run before measuring.
    pub warmup_batches: usize,
    /// The first warm-up batch's slowdown against the steady state, when it showed a
    /// frequency ramp.
    pub ramp: Option<f64>,
    /// Set when no batch's spread got under the threshold: the summary is the best batch's,
    /// kept and flagged as noisy.
    pub noisy: Option<Noisy>,
}

impl PairMeasurement {
    /// The measurement as the inference sees it: median, min and spread of the summary,
    /// with its noise flag.
    #[must_use]
    pub fn sample(&self) -> PairSample {
        PairSample {
            median: self.summary.median,
            min: self.summary.min,
            spread: self.summary.spread,
            noisy: self.noisy,
        }
    }

    /// The noise flag in words ("spread 10.2% above the 14.0% limit after 5 batches");
    /// `None` for an accepted pair.
    #[must_use]
    pub fn noise_note(&self) -> Option<String> {
        self.sample().noise_note()
    }
}

/// The probe: measures pairs of the given CPUs.
#[derive(Debug, Clone)]
pub struct PairProbe {
    timer: Timer,
    cpus: Vec<u32>,
    config: ProbeConfig,
    ramps: Vec<f64>,
    retried: usize,
}

impl PairProbe {
    /// A probe over `cpus` (row `i` of the table is `cpus[i]`).
    #[must_use]
    pub fn new(timer: Timer, cpus: Vec<u32>, config: ProbeConfig) -> Self {
        Self {
            timer,
            cpus,
            config,
            ramps: Vec::new(),
            retried: 0,
        }
    }

    /// The CPUs, in row order.
    #[must_use]
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The timer the probe uses.
    #[must_use]
    pub fn timer(&self) -> &Timer {
        &self.timer
    }

    /// Frequency ramps seen during warm-up so far (first batch / steady state).
    #[must_use]
    pub fn ramps(&self) -> &[f64] {
        &self.ramps
    }

    /// Pairs that needed more than one batch so far.
    #[must_use]
    pub fn retried(&self) -> usize {
        self.retried
    }

    /// Measures the pair of OS CPUs `a` and `b`. A pair whose spread stays above the
    /// threshold after every retry is not an error: it is returned with its best batch,
    /// flagged ([`PairMeasurement::noisy`]). A stalled partner is tried once more.
    ///
    /// # Errors
    ///
    /// Returns a [`PairError`] naming the pair when `a == b`, a thread cannot be pinned,
    /// the partner thread stalls on both tries, no batch has a usable sample, or the probe
    /// breaks; [`PairError::is_passing`] tells the failures a run can go on without.
    pub fn measure_cpus(&mut self, a: u32, b: u32) -> Result<PairMeasurement, PairError> {
        let fail = |failure| PairError { a, b, failure };
        if a == b {
            return Err(fail(PairFailure::SameCpu));
        }
        let mut tries = 0;
        let m = loop {
            tries += 1;
            match ping_pong(&self.timer, a, b, &self.config) {
                Ok(m) => break m,
                Err(PairFailure::Stalled { .. }) if tries < STALL_TRIES => {}
                Err(PairFailure::Stalled { .. }) => {
                    return Err(fail(PairFailure::Stalled { tries }))
                }
                Err(f) => return Err(fail(f)),
            }
        };
        if let Some(r) = m.ramp {
            self.ramps.push(r);
        }
        if m.batches > 1 {
            self.retried += 1;
        }
        Ok(m)
    }
}

impl PairLatency for PairProbe {
    fn contexts(&self) -> usize {
        self.cpus.len()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        Ok(self.measure_pair(a, b)?.sample())
    }

    /// A noisy pair is a flagged sample; a passing failure (a partner that stalled twice,
    /// no usable sample) gives the pair up; any other failure stops the run.
    fn measure_pair(&mut self, a: usize, b: usize) -> Result<PairReading, ProbeError> {
        let (Some(&ca), Some(&cb)) = (self.cpus.get(a), self.cpus.get(b)) else {
            return Err(ProbeError(format!(
                "row {a} or {b} is outside the {} CPUs measured",
                self.cpus.len()
            )));
        };
        match self.measure_cpus(ca, cb) {
            Ok(m) => Ok(PairReading::Sample(m.sample())),
            Err(e) if e.is_passing() => Ok(PairReading::GaveUp(e.failure.to_string())),
            Err(e) => Err(ProbeError(e.to_string())),
        }
    }
}

/// The responder: flips the line from odd to even until told to stop.
fn respond(line: &Line, wait: Wait) {
    match wait {
        Wait::Cas => {
            // The value it waits for: 1, 3, 5 … (the initiator counts the even ones).
            let mut mine = 1u64;
            loop {
                match line
                    .0
                    .compare_exchange(mine, mine + 1, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => mine += 2,
                    Err(STOP) => return,
                    Err(_) => std::hint::spin_loop(),
                }
            }
        }
        Wait::Load => loop {
            let v = line.0.load(Ordering::Acquire);
            if v == STOP {
                return;
            }
            if v & 1 == 1 {
                let _ = line
                    .0
                    .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed);
            } else {
                std::hint::spin_loop();
            }
        },
    }
}

/// The initiator's side of one pair.
struct Pinger<'a> {
    line: &'a Line,
    timer: &'a Timer,
    wait: Wait,
    next: u64,
}

/// A stalled partner, on one try.
const STALLED: PairFailure = PairFailure::Stalled { tries: 1 };

/// The shared line holds a value neither side wrote.
fn line_changed() -> PairFailure {
    PairFailure::Broken("the shared line changed unexpectedly".to_string())
}

impl Pinger<'_> {
    /// One sample of `round_trips` round trips: one-way latency in ns.
    fn sample(&mut self, round_trips: u32) -> Result<f64, PairFailure> {
        let started = Instant::now();
        let t0 = self.timer.now();
        let mut spins: u32 = 0;
        for _ in 0..round_trips {
            let v = self.next;
            match self.wait {
                Wait::Cas => {
                    // Waits for its turn (v) by retrying the swap: the round trip ends
                    // when the next swap succeeds.
                    loop {
                        match self.line.0.compare_exchange(
                            v,
                            v + 1,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => break,
                            Err(x) if x & 1 == 0 && x != v => return Err(line_changed()),
                            Err(_) => {
                                std::hint::spin_loop();
                                spins = spins.wrapping_add(1);
                                if spins.is_multiple_of(4096) && started.elapsed() > STALL {
                                    return Err(STALLED);
                                }
                            }
                        }
                    }
                }
                Wait::Load => {
                    if self
                        .line
                        .0
                        .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
                        .is_err()
                    {
                        return Err(line_changed());
                    }
                    while self.line.0.load(Ordering::Acquire) != v + 2 {
                        std::hint::spin_loop();
                        spins = spins.wrapping_add(1);
                        if spins.is_multiple_of(4096) && started.elapsed() > STALL {
                            return Err(STALLED);
                        }
                    }
                }
            }
            self.next = v + 2;
        }
        if self.wait == Wait::Cas {
            // The last swap started a round trip whose answer no further swap waits for:
            // wait for it with loads, so that the sample holds whole round trips and the
            // next one starts on its turn.
            let want = self.next;
            while self.line.0.load(Ordering::Acquire) != want {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && started.elapsed() > STALL {
                    return Err(STALLED);
                }
            }
        }
        let t1 = self.timer.now();
        Ok(self.timer.ticks_to_ns(t1.saturating_sub(t0)) / (2.0 * f64::from(round_trips)))
    }

    /// `count` samples.
    fn batch(&mut self, count: usize, round_trips: u32) -> Result<Vec<f64>, PairFailure> {
        (0..count).map(|_| self.sample(round_trips)).collect()
    }
}

/// Runs the initiator on the current thread (already pinned, line first-touched here).
fn initiate(
    line: &Line,
    timer: &Timer,
    config: &ProbeConfig,
) -> Result<PairMeasurement, PairFailure> {
    let mut p = Pinger {
        line,
        timer,
        wait: config.wait,
        next: 0,
    };
    // Round trips per sample: from a short probe sample.
    let round_trips = match config.round_trips {
        Some(r) => r.max(1),
        None => {
            let probe = p.sample(64)?;
            let per_round_trip = (2.0 * probe).max(1.0);
            (config.sample_ns / per_round_trip).clamp(16.0, 100_000.0) as u32
        }
    };
    let mut warm = WarmUp::default();
    if config.warm_up {
        loop {
            let b = p.batch(WARMUP_BATCH, round_trips)?;
            if warm.observe(median(&b).unwrap_or(0.0)) {
                break;
            }
        }
    }
    let mut adaptive = Adaptive::new(config.policy);
    loop {
        let b = p.batch(config.policy.reps.max(3), round_trips)?;
        let (summary, batches, noisy) = match adaptive.judge(&b) {
            Verdict::Retry => continue,
            Verdict::Done(summary, batches) => (summary, batches, None),
            Verdict::Noisy {
                best,
                batches,
                limit,
            } => (best, batches, Some(Noisy { limit, batches })),
            Verdict::NoSample { batches } => return Err(PairFailure::NoSample { batches }),
        };
        return Ok(PairMeasurement {
            a: 0,
            b: 0,
            summary,
            round_trips,
            batches,
            warmup_batches: warm.batches(),
            ramp: warm.ramp(),
            noisy,
        });
    }
}

/// Measures one pair with two threads pinned to `a` and `b`.
fn ping_pong(
    timer: &Timer,
    a: u32,
    b: u32,
    config: &ProbeConfig,
) -> Result<PairMeasurement, PairFailure> {
    let (tx, rx) = mpsc::channel::<Arc<Line>>();
    let start = Barrier::new(2);
    let partner_failed = AtomicBool::new(false);
    let (start, partner_failed) = (&start, &partner_failed);
    let wait = config.wait;
    std::thread::scope(|s| {
        let responder = s.spawn(move || -> Result<(), PairFailure> {
            let pinned = affinity::pin_current_thread(b);
            let Ok(line) = rx.recv() else {
                return Ok(());
            };
            if pinned.is_err() {
                partner_failed.store(true, Ordering::Release);
            }
            start.wait();
            match pinned {
                Ok(()) => {
                    respond(&line, wait);
                    Ok(())
                }
                Err(e) => Err(PairFailure::Pin(e.to_string())),
            }
        });
        let initiator = s.spawn(move || -> Result<PairMeasurement, PairFailure> {
            let pinned = affinity::pin_current_thread(a);
            // First touch by this thread, after pinning.
            let line = Arc::new(Line(AtomicU64::new(0)));
            if tx.send(Arc::clone(&line)).is_err() {
                return Err(PairFailure::Broken(
                    "the partner thread ended early".to_string(),
                ));
            }
            start.wait();
            let result = match pinned {
                Err(e) => Err(PairFailure::Pin(e.to_string())),
                Ok(()) if partner_failed.load(Ordering::Acquire) => Err(PairFailure::Pin(
                    "the partner thread could not be pinned".to_string(),
                )),
                Ok(()) => initiate(&line, timer, config),
            };
            line.0.store(STOP, Ordering::Release);
            result
        });
        let measured = initiator
            .join()
            .map_err(|_| PairFailure::Broken("the measuring thread panicked".to_string()))?;
        let answered = responder
            .join()
            .map_err(|_| PairFailure::Broken("the partner thread panicked".to_string()))?;
        answered?;
        measured.map(|m| PairMeasurement { a, b, ..m })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_of_this_machine_is_measured() {
        let cpus = affinity::allowed_cpus().expect("cpus").to_vec();
        let (a, b) = (cpus[0], *cpus.last().expect("cpu"));
        let mut probe = PairProbe::new(
            Timer::calibrate(),
            cpus.clone(),
            ProbeConfig {
                policy: RepetitionPolicy {
                    // A loaded test machine may be noisy: this test checks the mechanics.
                    max_stdev: 0.5,
                    max_stdev_limit: 1.0,
                    ..RepetitionPolicy::default()
                },
                ..ProbeConfig::default()
            },
        );
        if a == b {
            assert!(probe.measure_cpus(a, b).is_err());
            return;
        }
        let m = probe.measure_cpus(a, b).expect("pair");
        assert!(
            m.summary.median > 0.0 && m.summary.median < 100_000.0,
            "{m:?}"
        );
        assert!(m.summary.min <= m.summary.median);
        assert!(m.round_trips >= 16);
    }

    #[test]
    fn both_ways_of_waiting_measure_the_pair() {
        let cpus = affinity::allowed_cpus().expect("cpus").to_vec();
        let (a, b) = (cpus[0], *cpus.last().expect("cpu"));
        if a == b {
            return;
        }
        for wait in [Wait::Cas, Wait::Load] {
            let mut probe = PairProbe::new(
                Timer::calibrate(),
                cpus.clone(),
                ProbeConfig {
                    policy: RepetitionPolicy {
                        reps: 5,
                        max_stdev: 0.5,
                        max_stdev_limit: 1.0,
                        ..RepetitionPolicy::default()
                    },
                    round_trips: Some(200),
                    warm_up: false,
                    wait,
                    ..ProbeConfig::default()
                },
            );
            let m = probe.measure_cpus(a, b).expect("pair");
            assert!(m.summary.median > 0.0, "{wait:?}: {m:?}");
            assert_eq!(m.round_trips, 200);
        }
    }

    #[test]
    fn a_pair_that_never_settles_is_kept_and_flagged() {
        let cpus = affinity::allowed_cpus().expect("cpus").to_vec();
        let (a, b) = (cpus[0], *cpus.last().expect("cpu"));
        if a == b {
            return;
        }
        // A limit no real pair meets: every batch is too noisy.
        let limit = 1e-9;
        let mut probe = PairProbe::new(
            Timer::calibrate(),
            vec![a, b],
            ProbeConfig {
                policy: RepetitionPolicy {
                    reps: 5,
                    max_stdev: limit,
                    max_stdev_limit: limit,
                    attempts: 2,
                },
                round_trips: Some(100),
                warm_up: false,
                ..ProbeConfig::default()
            },
        );
        let m = probe.measure_cpus(a, b).expect("kept, not failed");
        if m.summary.spread <= limit {
            // Five identical samples (a coarse timer): nothing to flag.
            assert_eq!(m.noisy, None);
            return;
        }
        assert_eq!(m.noisy, Some(Noisy { limit, batches: 2 }));
        assert_eq!(m.batches, 2);
        let note = m.noise_note().expect("note");
        assert!(note.contains("limit after 2 batches"), "{note}");
        match probe.measure_pair(0, 1).expect("reading") {
            PairReading::Sample(s) => assert!(s.is_noisy() && s.median > 0.0, "{s:?}"),
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn a_missing_cpu_is_a_clear_error() {
        let mut probe =
            PairProbe::new(Timer::calibrate(), vec![0, 100_000], ProbeConfig::default());
        let e = probe.measure(0, 1).unwrap_err();
        assert!(e.0.contains("100000"), "{}", e.0);
        assert!(probe.measure(0, 7).is_err());
    }
}
