//! Timers: the probes' name for topoprobe's one calibrated clock,
//! [`topoprobe_sys::clock`]: a calibrated cycle counter where there is a trustworthy one,
//! `CLOCK_MONOTONIC` otherwise.
//!
//! On x86_64 the TSC is read with `rdtsc` and calibrated against `CLOCK_MONOTONIC`; it is
//! used only when the kernel reports it invariant (`constant_tsc` and `nonstop_tsc`) and the
//! calibration rounds agree. On aarch64 the generic timer's virtual counter (`cntvct_el0`)
//! is used. Inside virtual machines the counter can step coarsely (deltas in steps of ~24
//! ticks): the granularity is measured and reported, and the latency probe times many round
//! trips per sample so that a step is negligible.
//!
//! [`Timer::calibrate`] calibrates a new timer; [`Timer::cycle_ghz`] is the one rule for
//! every figure given in cycles.

/// A calibrated timer: [`topoprobe_sys::clock::Clock`].
pub use topoprobe_sys::clock::Clock as Timer;
/// Which counter a [`Timer`] reads: [`topoprobe_sys::clock::ClockKind`].
pub use topoprobe_sys::clock::ClockKind as TimerKind;
pub use topoprobe_sys::clock::{fit_rate, granularity};
