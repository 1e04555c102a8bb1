//! The deadlines of a run: the clock they are read on ([`Clock`], [`WallClock`]), how far
//! a timed step may overrun its plan ([`STEP_SLACK`]), and a plugin's share of the time
//! left ([`share_of_time_left`]). The plan ([`crate::plan`]) sets the deadlines; the latency
//! pairs ([`crate::pairs`]) and the plugins ([`crate::plugins`]) keep to them.

use std::time::Instant;

/// A clock the deadlines are read on: seconds since the measurement started. The live
/// run reads the wall clock ([`WallClock`]); tests give a simulated one.
pub trait Clock {
    /// Seconds since the start.
    fn now(&self) -> f64;
}

/// The wall clock, from an instant.
#[derive(Debug, Clone, Copy)]
pub struct WallClock(Instant);

impl WallClock {
    /// A clock started now.
    #[must_use]
    pub fn start() -> Self {
        Self(Instant::now())
    }

    /// A clock started at `at`.
    #[must_use]
    pub fn since(at: Instant) -> Self {
        Self(at)
    }
}

impl Clock for WallClock {
    fn now(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// A timed step may run this many times its plan (the plan's own estimate after
/// calibration) before it is stopped.
pub const STEP_SLACK: f64 = 1.5;

/// A plugin's share of the time left: `shares` are the planned shares of this plugin and
/// those after it, `left` the seconds left until
/// [`MeasurePlan::plugins_end`](crate::plan::MeasurePlan::plugins_end). The shares shrink
/// in proportion when the time left cannot hold them all (the steps before ran
/// slower than planned); `None` when this plugin's share is gone, or is less than
/// `least` seconds, the least it can do: it is then left out and said. A plugin planned
/// at no cost keeps its zero share.
#[must_use]
pub fn share_of_time_left(shares: &[f64], left: f64, least: f64) -> Option<f64> {
    let mine = *shares.first()?;
    if mine <= 0.0 {
        // Planned to cost nothing (its hardware is missing): it runs to say so.
        return Some(0.0);
    }
    let total: f64 = shares.iter().sum();
    let given = if total > left && total > 0.0 {
        mine * left.max(0.0) / total
    } else {
        mine
    };
    (given > 0.0 && given >= least).then_some(given)
}
