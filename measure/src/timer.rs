//! Timers: a calibrated cycle counter where there is a trustworthy one, `CLOCK_MONOTONIC`
//! otherwise.
//!
//! On x86_64 the TSC is read with `rdtsc` and calibrated against `CLOCK_MONOTONIC`; it is
//! used only when the kernel reports it invariant (`constant_tsc` and `nonstop_tsc`) and the
//! calibration rounds agree. On aarch64 the generic timer's virtual counter (`cntvct_el0`)
//! is used with its architected frequency. Inside virtual machines the counter can step
//! coarsely (deltas in steps of ~24 ticks): the granularity is measured and reported, and
//! the latency probe times many round trips per sample so that a step is negligible.

use std::time::{Duration, Instant};

/// Which counter a [`Timer`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// x86_64 time-stamp counter.
    Tsc,
    /// aarch64 generic timer (virtual count register).
    ArmCounter,
    /// `CLOCK_MONOTONIC` through [`Instant`] (ticks are nanoseconds).
    Monotonic,
}

impl std::fmt::Display for TimerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Tsc => "tsc",
            Self::ArmCounter => "arm-counter",
            Self::Monotonic => "clock_monotonic",
        })
    }
}

/// A calibrated timer.
#[derive(Debug, Clone)]
pub struct Timer {
    kind: TimerKind,
    /// Counter ticks per nanosecond.
    ticks_per_ns: f64,
    /// Smallest step between two different readings, in ticks.
    granularity: u64,
    /// Why the counter was not used, when the timer fell back to `CLOCK_MONOTONIC`.
    fallback_reason: Option<String>,
    /// Origin of [`Timer::now`] for the monotonic clock.
    epoch: Instant,
}

/// A function reading a counter.
type Reader = fn() -> u64;

/// Rounds of calibration against `CLOCK_MONOTONIC`.
const CALIBRATION_ROUNDS: usize = 5;
/// Length of one calibration round.
const CALIBRATION_ROUND: Duration = Duration::from_millis(4);
/// Largest relative disagreement between calibration rounds for a trusted counter.
const CALIBRATION_TOLERANCE: f64 = 0.01;

impl Timer {
    /// Chooses and calibrates the best timer of this machine; never fails (the monotonic
    /// clock is the fallback, with the reason recorded).
    #[must_use]
    pub fn calibrate() -> Self {
        match counter::probe() {
            Ok((kind, read)) => {
                let rounds = calibration_rounds(read);
                match fit_rate(&rounds) {
                    Ok(ticks_per_ns) => Self {
                        kind,
                        ticks_per_ns,
                        granularity: granularity(&consecutive_deltas(read, 4096)),
                        fallback_reason: None,
                        epoch: Instant::now(),
                    },
                    Err(reason) => Self::monotonic(Some(format!("{kind}: {reason}"))),
                }
            }
            Err(reason) => Self::monotonic(Some(reason)),
        }
    }

    /// The `CLOCK_MONOTONIC` timer (ticks are nanoseconds).
    #[must_use]
    pub fn monotonic(fallback_reason: Option<String>) -> Self {
        let epoch = Instant::now();
        let mut t = Self {
            kind: TimerKind::Monotonic,
            ticks_per_ns: 1.0,
            granularity: 1,
            fallback_reason,
            epoch,
        };
        let deltas: Vec<u64> = {
            let mut last = t.now();
            (0..4096)
                .map(|_| {
                    let now = t.now();
                    let d = now.saturating_sub(last);
                    last = now;
                    d
                })
                .collect()
        };
        t.granularity = granularity(&deltas);
        t
    }

    /// The current reading, in ticks.
    #[inline]
    #[must_use]
    pub fn now(&self) -> u64 {
        match self.kind {
            TimerKind::Monotonic => {
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

    /// The counter read.
    #[must_use]
    pub fn kind(&self) -> TimerKind {
        self.kind
    }

    /// Counter frequency in GHz (ticks per nanosecond).
    #[must_use]
    pub fn ghz(&self) -> f64 {
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
    /// TSC's, when the timer reads the TSC; `None` with the monotonic clock, whose ticks
    /// are not cycles. The one rule for every figure given in cycles.
    #[must_use]
    pub fn cycle_ghz(&self) -> Option<f64> {
        (self.kind != TimerKind::Monotonic).then(|| self.ghz())
    }

    /// A one-line description, e.g. `tsc at 2.445 GHz, steps of 9.8 ns`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = match self.kind {
            TimerKind::Monotonic => "clock_monotonic".to_string(),
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
fn calibration_rounds(read: Reader) -> Vec<(u64, u64)> {
    (0..CALIBRATION_ROUNDS)
        .map(|_| {
            let t0 = Instant::now();
            let c0 = read();
            while t0.elapsed() < CALIBRATION_ROUND {
                std::hint::spin_loop();
            }
            let c1 = read();
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            (c1.wrapping_sub(c0), ns)
        })
        .collect()
}

/// Deltas between `count` consecutive readings.
fn consecutive_deltas(read: Reader, count: usize) -> Vec<u64> {
    let mut last = read();
    (0..count)
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

/// The timer's granularity in ticks from deltas between consecutive readings: the
/// smallest non-zero delta (a counter that steps coarsely shows zero deltas and then one
/// step), at least 1.
#[must_use]
pub fn granularity(deltas: &[u64]) -> u64 {
    deltas.iter().copied().filter(|&d| d > 0).min().unwrap_or(1)
}

/// The cycle counter of `topoprobe_sys::counter`, as this module reads it.
mod counter {
    use super::{Reader, TimerKind};
    use topoprobe_sys::counter::{self as sys, CounterKind};

    /// Reads the counter.
    #[inline]
    pub(super) fn read() -> u64 {
        sys::read()
    }

    /// The counter, when it runs at a constant rate.
    pub(super) fn probe() -> Result<(TimerKind, Reader), String> {
        let kind = match sys::probe()? {
            CounterKind::Tsc => TimerKind::Tsc,
            CounterKind::ArmCounter => TimerKind::ArmCounter,
        };
        Ok((kind, read))
    }
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
    fn this_machine_has_a_working_timer() {
        let t = Timer::calibrate();
        let a = t.now();
        std::thread::sleep(Duration::from_millis(2));
        let b = t.now();
        let ns = t.ticks_to_ns(b - a);
        assert!(ns >= 1.9e6, "{ns} ns for a 2 ms sleep ({})", t.describe());
        assert!(t.ghz() > 0.0);
    }
}
