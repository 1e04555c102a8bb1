//! A clock for waits and timings in nanoseconds: the cycle counter (`topoprobe_sys::counter`)
//! calibrated against [`Instant`], or [`Instant`] itself where the counter is not invariant.
//!
//! Educated backoff waits a number of nanoseconds derived from measured latencies; this is
//! what turns them into a busy wait of the right length on any CPU, whatever a `pause`
//! instruction costs there (~10 cycles on older x86 cores, ~140 on newer ones).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use topoprobe_sys::counter;

/// A calibrated clock; [`Clock::get`] gives the process's one.
#[derive(Debug)]
pub struct Clock {
    /// Counter ticks per nanosecond; `None` when [`Instant`] is used.
    ticks_per_ns: Option<f64>,
    /// Why the counter is not used.
    fallback: Option<String>,
    /// Origin of readings of [`Instant`].
    epoch: Instant,
}

/// Length of one calibration round.
const ROUND: Duration = Duration::from_millis(3);
/// Calibration rounds (the median rate is kept).
const ROUNDS: usize = 3;

static CLOCK: OnceLock<Clock> = OnceLock::new();

impl Clock {
    /// The process's clock, calibrated on first use (about 10 ms).
    #[must_use]
    pub fn get() -> &'static Self {
        CLOCK.get_or_init(Self::calibrate)
    }

    fn calibrate() -> Self {
        let epoch = Instant::now();
        match counter::probe() {
            Ok(_) => {
                let mut rates: Vec<f64> = (0..ROUNDS)
                    .map(|_| {
                        let t0 = Instant::now();
                        let c0 = counter::read();
                        while t0.elapsed() < ROUND {
                            std::hint::spin_loop();
                        }
                        let c1 = counter::read();
                        c1.wrapping_sub(c0) as f64 / t0.elapsed().as_nanos().max(1) as f64
                    })
                    .collect();
                rates.sort_by(f64::total_cmp);
                let rate = rates[ROUNDS / 2];
                if rate.is_finite() && rate > 0.0 {
                    Self {
                        ticks_per_ns: Some(rate),
                        fallback: None,
                        epoch,
                    }
                } else {
                    Self::instant("the cycle counter did not advance".into(), epoch)
                }
            }
            Err(why) => Self::instant(why, epoch),
        }
    }

    fn instant(why: String, epoch: Instant) -> Self {
        Self {
            ticks_per_ns: None,
            fallback: Some(why),
            epoch,
        }
    }

    /// The current reading in ticks.
    #[inline]
    #[must_use]
    pub fn now(&self) -> u64 {
        if self.ticks_per_ns.is_some() {
            counter::read()
        } else {
            u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    }

    /// Ticks per nanosecond (1 for [`Instant`]).
    #[must_use]
    pub fn ticks_per_ns(&self) -> f64 {
        self.ticks_per_ns.unwrap_or(1.0)
    }

    /// Ticks between two readings, in nanoseconds.
    #[must_use]
    pub fn ns_between(&self, start: u64, end: u64) -> f64 {
        end.wrapping_sub(start) as f64 / self.ticks_per_ns()
    }

    /// Busy-waits `ns` nanoseconds (a spin-loop hint between readings).
    #[inline]
    pub fn spin_ns(&self, ns: f64) {
        if ns <= 0.0 {
            return;
        }
        #[cfg(loom)]
        {
            loom::thread::yield_now();
        }
        #[cfg(not(loom))]
        {
            let ticks = (ns * self.ticks_per_ns()) as u64;
            let start = self.now();
            while self.now().wrapping_sub(start) < ticks {
                std::hint::spin_loop();
            }
        }
    }

    /// What the clock reads, e.g. `cycle counter at 2.596 GHz`.
    #[must_use]
    pub fn describe(&self) -> String {
        match (self.ticks_per_ns, &self.fallback) {
            (Some(r), _) => format!("cycle counter at {r:.3} GHz"),
            (None, Some(why)) => format!("clock_monotonic (cycle counter not used: {why})"),
            (None, None) => "clock_monotonic".into(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

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
        let a = c.now();
        std::thread::sleep(Duration::from_millis(1));
        assert!(c.ns_between(a, c.now()) >= 900_000.0);
    }
}
