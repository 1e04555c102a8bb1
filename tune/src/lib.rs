//! Tuning running programs over a measured topology.
//!
//! - [`autopin`]: find the best pinning of a running program by trying candidate
//!   pinnings from the topology on it and measuring each (heartbeats, instructions
//!   retired, or CPU time), then keep the best.
//! - [`heartbeat`]: the program's side of application heartbeats (count work, declare
//!   phases), re-exported from the OS layer.
//! - [`threads`]: following a program's threads in creation order.
//! - [`perf`]: hardware counters per thread, detected.
//!
//! A tuner changes a running program: it never loses its exit status or signals, and
//! leaves it with a valid placement when it stops.

pub mod autopin;
pub mod balance;
mod error;
pub mod perf;
pub mod stats;
pub mod threads;

pub use error::{check_owner, TuneError};

/// Application heartbeats: call [`heartbeat::beat`] for every unit of work (and
/// [`heartbeat::phase`] when the program's behaviour changes); with `TOPOPROBE_HEARTBEAT`
/// set (autopin sets it), a tuner reads them from shared memory. No system call per beat.
pub mod heartbeat {
    pub use topoprobe_sys::heartbeat::{beat, enabled, phase, HEARTBEAT_VAR};
}
