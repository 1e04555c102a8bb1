//! Topology-aware synchronization for topoprobe (paper `mctop-eurosys17` §5 and §7.1).
//!
//! - [`locks`]: TAS, TTAS, ticket, MCS, CLH and cohort spin locks, each with a [`Backoff`]:
//!   none, crossbeam's fixed constants, or *educated* waits in nanoseconds derived from the
//!   measured latencies between contexts; all of them work as `lock_api` mutexes.
//! - [`mod@bench`]: the contention experiments behind `topoprobe bench` (lock throughput,
//!   false sharing, cache-line operations by state and distance).
//!
//! Waits and experiments are timed with topoprobe's one calibrated clock,
//! [`topoprobe_sys::clock::Clock`]. The parallel algorithms (sort, steal orders, reduction
//! trees, pools, OpenMP places) are in `topoprobe-parallel`. Nothing here measures the
//! topology: it is given (see `topoprobe_machine::load`).

pub mod backoff;
#[cfg(not(loom))]
pub mod bench;
mod error;
pub mod locks;
mod prim;

pub use backoff::{Backoff, BackoffKind, Educated, Wait};
pub use error::SyncError;
pub use locks::LockKind;
