//! Timers.
