//! The one calibrated clock of topoprobe: the cycle counter ([`counter`])
//! where there is a trustworthy one, `CLOCK_MONOTONIC` otherwise. The probes of
//! `topoprobe-measure` (as `timer::Timer`) and the waits and experiments of
//! `topoprobe-sync` read it.
//!
//! On x86_64 the TSC is calibrated against `CLOCK_MONOTONIC`; it is used only when the
//! kernel reports it invariant (`constant_tsc` and `nonstop_tsc`) and the calibration
//! rounds agree within 1%. On aarch64 the generic timer's virtual counter is used. Inside
//! virtual machines the counter can step coarsely (deltas in steps of ~24 ticks): the
//! granularity is measured and reported, and callers time many operations per reading so
//! that a step is negligible.
//!
//! [`Clock::calibrate`] calibrates a new clock (about 20 ms); [`Clock::get`] is the
//! process's clock, calibrated once on first use, for code that reads the clock often
//! (a backoff that waits a number of nanoseconds).
//!
//! ```
//! use topoprobe_sys::clock::Clock;
//!
//! let clock = Clock::get();
//! let start = clock.now();
//! clock.spin_ns(1000.0);
//! assert!(clock.ns_between(start, clock.now()) >= 900.0);
//! ```

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::counter::{self, CounterKind};

/// Which counter a [`Clock`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    /// x86_64 time-stamp counter.
    Tsc,
    /// aarch64 generic timer (virtual count register).
    ArmCounter,
    /// `CLOCK_MONOTONIC` through [`Instant`] (ticks are nanoseconds).
    Monotonic,
}

impl std::fmt::Display for ClockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Tsc => "tsc",
            Self::ArmCounter => "arm-counter",
            Self::Monotonic => "clock_monotonic",
        })
    }
}

/// A calibrated clock.
#[derive(Debug, Clone)]
pub struct Clock {
    kind: ClockKind,
    /// Counter ticks per nanosecond.
    ticks_per_ns: f64,
    /// Smallest step between two different readings, in ticks.
    granularity: u64,
    /// Why the counter was not used, when the clock fell back to `CLOCK_MONOTONIC`.
    fallback_reason: Option<String>,
    /// Origin of [`Clock::now`] for the monotonic clock.
    epoch: Instant,
}

/// Rounds of calibration against `CLOCK_MONOTONIC`.
const CALIBRATION_ROUNDS: usize = 5;
/// Length of one calibration round.
const CALIBRATION_ROUND: Duration = Duration::from_millis(4);
/// Largest relative disagreement between calibration rounds for a trusted counter.
const CALIBRATION_TOLERANCE: f64 = 0.01;
/// Consecutive readings taken to measure the granularity.
const GRANULARITY_READINGS: usize = 4096;

/// The process's clock.
static CLOCK: OnceLock<Clock> = OnceLock::new();

impl Clock {
    /// The process's clock, calibrated by [`Clock::calibrate`] on first use.
    #[must_use]
    pub fn get() -> &'static Self {
        CLOCK.get_or_init(Self::calibrate)
    }

    /// Chooses and calibrates the best clock of this machine; never fails (the monotonic
    /// clock is the fallback, with the reason recorded).
    #[must_use]
    pub fn calibrate() -> Self {
        match counter::probe() {
            Ok(kind) => {
                let kind = match kind {
                    CounterKind::Tsc => ClockKind::Tsc,
                    CounterKind::ArmCounter => ClockKind::ArmCounter,
                };
                match fit_rate(&calibration_rounds()) {
                    Ok(ticks_per_ns) => Self {
                        kind,
                        ticks_per_ns,
                        granularity: granularity(&deltas(counter::read)),
                        fallback_reason: None,
                        epoch: Instant::now(),
                    },
                    Err(reason) => Self::monotonic(Some(format!("{kind}: {reason}"))),
                }
            }
            Err(reason) => Self::monotonic(Some(reason)),
        }
    }

    /// The `CLOCK_MONOTONIC` clock (ticks are nanoseconds); `fallback_reason` says why the
    /// cycle counter is not used, if that is why.
    #[must_use]
    pub fn monotonic(fallback_reason: Option<String>) -> Self {
        let mut c = Self {
            kind: ClockKind::Monotonic,
            ticks_per_ns: 1.0,
            granularity: 1,
            fallback_reason,
            epoch: Instant::now(),
        };
        let steps = {
            let epoch = c.epoch;
            let mut last = 0;
            (0..GRANULARITY_READINGS)
                .map(|_| {
                    let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    let d = now.saturating_sub(last);
                    last = now;
                    d
                })
                .skip(1)
                .collect::<Vec<u64>>()
        };
        c.granularity = granularity(&steps);
        c
    }

    /// The current reading, in ticks.
    #[inline]
    #[must_use]
    pub fn now(&self) -> u64 {
        match self.kind {
            ClockKind::Monotonic => {
                u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
            }
            _ => counter::read(),
        }
    }

    /// Converts ticks into nanoseconds.
    #[must_use]
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }

    /// Nanoseconds between two readings of [`Clock::now`].
    #[inline]
    #[must_use]
    pub fn ns_between(&self, start: u64, end: u64) -> f64 {
        self.ticks_to_ns(end.wrapping_sub(start))
    }

    /// Busy-waits `ns` nanoseconds (a spin-loop hint between readings).
    #[inline]
    pub fn spin_ns(&self, ns: f64) {
        if ns <= 0.0 {
            return;
        }
        let ticks = (ns * self.ticks_per_ns) as u64;
        let start = self.now();
        while self.now().wrapping_sub(start) < ticks {
            std::hint::spin_loop();
        }
    }

    /// The counter read.
    #[must_use]
    pub fn kind(&self) -> ClockKind {
        self.kind
    }

    /// Counter frequency in GHz (ticks per nanosecond; 1 for the monotonic clock).
    #[must_use]
    pub fn ghz(&self) -> f64 {
        self.ticks_per_ns
    }

    /// Ticks per nanosecond (the same figure as [`Clock::ghz`]).
    #[must_use]
    pub fn ticks_per_ns(&self) -> f64 {
        self.ticks_per_ns
    }

    /// Smallest step between two different readings, in nanoseconds.
    #[must_use]
    pub fn granularity_ns(&self) -> f64 {
        self.ticks_to_ns(self.granularity)
    }

    /// Why the cycle counter was not used, when it was not.
    #[must_use]
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The frequency that turns this machine's cycles into nanoseconds and back: the
    /// counter's, when the clock reads a cycle counter; `None` with the monotonic clock,
    /// whose ticks are not cycles. The one rule for every figure given in cycles.
    #[must_use]
    pub fn cycle_ghz(&self) -> Option<f64> {
        (self.kind != ClockKind::Monotonic).then_some(self.ticks_per_ns)
    }

    /// A one-line description, e.g. `tsc at 2.445 GHz, steps of 9.8 ns`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = match self.kind {
            ClockKind::Monotonic => "clock_monotonic".to_string(),
            k => format!("{k} at {:.3} GHz", self.ticks_per_ns),
        };
        s.push_str(&format!(", steps of {:.1} ns", self.granularity_ns()));
        if let Some(r) = &self.fallback_reason {
            s.push_str(&format!(" (cycle counter not used: {r})"));
        }
        s
    }
}

/// Pairs of (ticks, nanoseconds) elapsed over [`CALIBRATION_ROUNDS`] rounds.
fn calibration_rounds() -> Vec<(u64, u64)> {
    (0..CALIBRATION_ROUNDS)
        .map(|_| {
            let t0 = Instant::now();
            let c0 = counter::read();
            while t0.elapsed() < CALIBRATION_ROUND {
                std::hint::spin_loop();
            }
            let c1 = counter::read();
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            (c1.wrapping_sub(c0), ns)
        })
        .collect()
}

/// Deltas between consecutive readings of `read`.
fn deltas(read: fn() -> u64) -> Vec<u64> {
    let mut last = read();
    (0..GRANULARITY_READINGS)
        .map(|_| {
            let now = read();
            let d = now.wrapping_sub(last);
            last = now;
            d
        })
        .collect()
}

/// Ticks per nanosecond from calibration rounds `(ticks, ns)`: the median rate, accepted
/// when every round agrees with it within 1%.
///
/// # Errors
///
/// Returns a reason when there are no usable rounds, the counter does not advance or
/// goes backwards, or the rounds disagree (the counter's rate changes: not invariant).
pub fn fit_rate(rounds: &[(u64, u64)]) -> Result<f64, String> {
    let mut rates: Vec<f64> = rounds
        .iter()
        .filter(|&&(_, ns)| ns > 0)
        .map(|&(ticks, ns)| ticks as f64 / ns as f64)
        .collect();
    if rates.is_empty() {
        return Err("no calibration round completed".to_string());
    }
    if rates.iter().any(|&r| !(r > 0.0 && r.is_finite())) {
        return Err("the counter did not advance during calibration".to_string());
    }
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    let worst = rates
        .iter()
        .map(|r| (r / median - 1.0).abs())
        .fold(0.0, f64::max);
    if worst > CALIBRATION_TOLERANCE {
        return Err(format!(
            "calibration rounds disagree by {:.1}% (rate {:.3} to {:.3} ticks/ns): the counter's rate is not constant",
            worst * 100.0,
            rates[0],
            rates[rates.len() - 1]
        ));
    }
    Ok(median)
}

/// The clock's granularity in ticks from deltas between consecutive readings: the
/// smallest non-zero delta (a counter that steps coarsely shows zero deltas and then one
/// step), at least 1.
#[must_use]
pub fn granularity(deltas: &[u64]) -> u64 {
    deltas.iter().copied().filter(|&d| d > 0).min().unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_counter_is_calibrated() {
        let rounds: Vec<(u64, u64)> = (0..5).map(|i| (9_780_000 + i * 100, 4_000_000)).collect();
        let r = fit_rate(&rounds).expect("steady");
        assert!((r - 2.445).abs() < 0.001, "{r}");
    }

    #[test]
    fn a_counter_whose_rate_changes_is_rejected() {
        let rounds = [
            (8_000_000, 4_000_000),
            (9_780_000, 4_000_000),
            (9_780_000, 4_000_000),
        ];
        let e = fit_rate(&rounds).unwrap_err();
        assert!(e.contains("not constant"), "{e}");
        assert!(fit_rate(&[(0, 4_000_000)]).unwrap_err().contains("advance"));
        assert!(fit_rate(&[]).is_err());
        assert!(fit_rate(&[(5, 0)]).is_err());
    }

    #[test]
    fn coarse_steps_are_the_granularity() {
        // A counter stepping by 24 ticks inside a VM: most deltas are 0 or 24.
        let deltas = [0, 0, 24, 0, 24, 48, 0, 24];
        assert_eq!(granularity(&deltas), 24);
        assert_eq!(granularity(&[0, 0]), 1);
        assert_eq!(granularity(&[]), 1);
    }

    #[test]
    fn this_machine_has_a_working_clock() {
        let c = Clock::calibrate();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(2));
        let ns = c.ns_between(a, c.now());
        assert!(ns >= 1.9e6, "{ns} ns for a 2 ms sleep ({})", c.describe());
        assert!(c.ghz() > 0.0);
        assert_eq!(c.cycle_ghz().is_some(), c.kind() != ClockKind::Monotonic);
    }

    #[test]
    fn a_wait_lasts_at_least_its_length() {
        let c = Clock::get();
        let t0 = Instant::now();
        c.spin_ns(2_000_000.0);
        assert!(
            t0.elapsed() >= Duration::from_micros(1_900),
            "{}",
            c.describe()
        );
    }

    #[test]
    fn the_monotonic_clock_counts_nanoseconds() {
        let c = Clock::monotonic(Some("test".into()));
        assert_eq!(c.kind(), ClockKind::Monotonic);
        assert_eq!(c.cycle_ghz(), None);
        assert!(c.describe().contains("cycle counter not used: test"));
        let a = c.now();
        std::thread::sleep(Duration::from_millis(1));
        assert!(c.ns_between(a, c.now()) >= 900_000.0);
    }
}
