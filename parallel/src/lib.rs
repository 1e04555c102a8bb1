//! Topology-aware parallel algorithms for topoprobe (paper `mctop-eurosys17` §5 and §7.2–7.4).
//!
//! - [`sort`]: a parallel sort laid out along the measured reduction tree (radix and
//!   comparison paths), calibrated on the machine.
//! - [`trees`]: steal orders and reduction (merge) trees over placed workers, as data.
//! - [`pool`]: a work-stealing pool that steals in the topology's order, and rayon pools
//!   whose threads are placed by a policy.
//! - [`omp`]: the OpenMP environment (`OMP_PLACES`, `OMP_PROC_BIND`) of each region of a
//!   program from its placement policy.
//! - [`mod@bench`]: the sort and reduction experiments behind `topoprobe bench sort` and
//!   `topoprobe bench reduce`, as library calls that return data.
//!
//! Synchronization (locks, backoff, the contention experiments) is in `topoprobe-sync`;
//! nothing here measures the topology: it is given (see `topoprobe_machine::load`).

pub mod bench;
mod error;
pub mod omp;
pub mod pool;
pub mod sort;
pub mod trees;

pub use error::ParallelError;
