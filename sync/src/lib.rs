//! Topology-aware synchronization for topoprobe (paper `mctop-eurosys17` §5 and §7).
//!
//! - [`locks`]: TAS, TTAS, ticket, MCS, CLH and cohort spin locks, each with a [`Backoff`]:
//!   none, crossbeam's fixed constants, or *educated* waits in nanoseconds derived from the
//!   measured latencies between contexts; all of them work as `lock_api` mutexes.
//! - [`clock`]: the calibrated clock the waits and the experiments use.
//! - [`mod@bench`]: the contention experiments behind `topoprobe bench` (lock throughput,
//!   false sharing, cache-line operations by state and distance).
//!
//! Nothing here measures the topology: it is given (see `topoprobe_machine::load`).

pub mod backoff;
#[cfg(not(loom))]
pub mod bench;
pub mod clock;
mod error;
pub mod locks;
pub mod omp;
pub mod pool;
mod prim;
pub mod sort;
pub mod trees;

pub use backoff::{Backoff, BackoffKind, Educated, Wait};
pub use error::SyncError;
pub use locks::LockKind;
