//! topoprobe-measure: everything that reads the hardware.
//!
//! - [`affinity`]: pinning a thread to one hardware context, the online CPU list.
//! - [`timer`]: a calibrated cycle counter (TSC on x86_64, the generic counter on aarch64)
//!   with granularity checks, and `CLOCK_MONOTONIC` as the fallback.
//! - [`os`]: the operating system's view of the machine (sysfs), with a configurable root.
//!
//! All `unsafe` code of topoprobe's measurement lives in this crate; every block says why it
//! is sound.

pub mod affinity;
pub mod os;
pub mod timer;
