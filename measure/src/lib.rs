//! topoprobe-measure: everything that reads the hardware.
//!
//! - [`affinity`]: pinning a thread to one hardware context, the online CPU list.
//! - [`timer`]: a calibrated cycle counter (TSC on x86_64, the generic counter on aarch64)
//!   with granularity checks, and `CLOCK_MONOTONIC` as the fallback.
//! - [`stats`]: outlier rejection, adaptive repetitions and DVFS warm-up detection.
//! - [`pair`]: the core-to-core latency probe (CAS ping-pong), a
//!   [`PairLatency`](topoprobe_infer::PairLatency) the inference collects tables from.
//! - [`smt`]: SMT detection by the slowdown of two compute-bound siblings.
//! - [`description`]: this machine's description file: default place, fingerprint, loading.
//! - [`os`]: the operating system's view of the machine (sysfs), with a configurable root.
//!
//! All `unsafe` code of topoprobe's measurement lives in this crate; every block says why it
//! is sound.

pub mod affinity;
pub mod description;
pub mod os;
pub mod pair;
pub mod smt;
pub mod stats;
pub mod timer;
