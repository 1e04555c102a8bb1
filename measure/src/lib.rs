//! topoprobe-measure: everything that reads the hardware.
//!
//! - [`plan`]: the cost plan of a probe, from the shape of the machine, within a budget.
//! - [`timer`]: a calibrated cycle counter (TSC on x86_64, the generic counter on aarch64)
//!   with granularity checks, and `CLOCK_MONOTONIC` as the fallback.
//! - [`stats`]: outlier rejection, adaptive repetitions and DVFS warm-up detection.
//! - [`steady`]: repeating a throughput measurement until its last rounds agree.
//! - [`pair`]: the core-to-core latency probe (CAS ping-pong), a
//!   [`PairLatency`](topoprobe_model::PairLatency) the inference collects tables from.
//! - [`smt`]: SMT detection by the slowdown of two compute-bound siblings.
//! - [`cache`]: cache sizes and latencies (Servet's mcalibrator and probabilistic
//!   algorithm) and which contexts share each level.
//! - [`memory`]: memory latency (random pointer chase) and read/write/copy bandwidth
//!   from every socket to every node.
//! - [`cache_to_cache`]: cache-to-cache transfers: the cache-line kernels (ccbench-style
//!   latency of an operation on a line by its coherence state, the distance of its owner
//!   and its home node) that `topoprobe bench line-ops` and `topoprobe mem --c2c` both run,
//!   and `mem --c2c`'s plan of them over a whole topology within a budget.
//! - [`contention`]: memory-access overhead groups and bandwidth scalability (Servet).
//! - [`power`]: RAPL power under libmctop's load states (powercap or the perf `power` PMU);
//!   [`power::measure_power`] gives the description's power section, or says why power is
//!   unavailable.
//! - [`pages`]: whether the huge pages a probe asked for were granted (`/proc/self/smaps`).
//! - [`os`]: the operating system's view of the machine (sysfs), with a configurable root.
//!
//! Pinning, CPU sets and node-bound buffers come from `topoprobe-sys`; the `unsafe` code
//! here is the measurement's own (timers, vector kernels, the perf interface), each block
//! saying why it is sound.

pub mod cache;
pub mod cache_to_cache;
pub mod contention;
pub mod memory;
pub mod os;
pub mod pages;
pub mod pair;
pub mod plan;
pub mod power;
pub mod smt;
pub mod stats;
pub mod steady;
mod this_machine;

pub use this_machine::this_machine_speed;
pub mod timer;
