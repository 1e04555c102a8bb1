//! The thin operating-system layer of topoprobe (Linux).
//!
//! - [`CpuSet`], [`NodeSet`]: sets of CPUs and memory nodes in the kernel's mask layout,
//!   of any size; every crate passes CPUs and nodes to the kernel through them.
//! - [`affinity`]: pinning the calling thread or any thread (`tid`) to CPUs, reading
//!   affinity masks, the CPU a thread runs on.
//! - [`buffer`]: page-aligned buffers bound to a memory node (`mbind`), with or without
//!   transparent huge pages.
//! - [`counter`]: the cycle counter and cache-line flushes (timing and cache-state
//!   experiments).
//! - [`clock`]: the one calibrated clock (cycle counter or `CLOCK_MONOTONIC`) that probes,
//!   waits and experiments read.
//! - [`memory`]: memory policies (`set_mempolicy`) and the kernel's online nodes.
//! - [`launch`]: running a command with signals passed on and its exit status kept.
//! - [`pin_env`]: the environment variables of the preload library.
//! - [`heartbeat`]: application heartbeats in shared memory (a count and a phase a tuner
//!   reads, with no system call per beat).
//! - [`proc`]: `/proc` readers for processes and their threads (scheduler statistics, CPU
//!   time, last CPU, context switches, affinity).
//! - [`started`]: when this process started (the clock a command's budget counts on).
//! - [`usage`]: this process's own peak and current resident memory.
//!
//! Most of topoprobe's `unsafe` code lives here; every block says why it is sound.

mod id_set;
mod sets;

pub mod affinity;
pub mod buffer;
pub mod clock;
pub mod counter;
pub mod elf;
pub mod heartbeat;
pub mod here;
pub mod launch;
pub mod memory;
pub mod pin_env;
pub mod proc;
pub mod started;
pub mod temps;
pub mod usage;

pub use sets::{CpuSet, NodeSet};
