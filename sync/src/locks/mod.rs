//! Spin locks with a choice of backoff: TAS, TTAS, ticket, MCS, CLH and a cohort lock built
//! from the measured socket/group structure.
//!
//! Every raw lock has `acquire`, `try_acquire` and `release` and implements
//! [`lock_api::RawMutex`], so that it works as a `Mutex<T>` with a safe API:
//!
//! ```
//! use topoprobe_sync::locks::{mutex, TicketMutex};
//! use topoprobe_sync::Backoff;
//!
//! let m: TicketMutex<Vec<u32>> = mutex(Vec::new(), &Backoff::Fixed)?;
//! m.lock().push(1);
//! assert_eq!(*m.lock(), [1]);
//! # Ok::<(), topoprobe_sync::SyncError>(())
//! ```
//!
//! `lock_api`'s `INIT` (and `Mutex::new`) gives a lock without backoff and, for the cohort
//! lock, a single cohort; [`mutex`] and [`cohort_mutex`] give the backoff asked for.

mod clh;
mod cohort;
mod mcs;
mod nodes;
mod tas;
mod ticket;

pub use clh::RawClh;
pub use cohort::{cohorts_of, RawCohort};
pub use mcs::RawMcs;
pub use tas::{RawTas, RawTtas};
pub use ticket::RawTicket;

#[cfg(not(loom))]
use topoprobe_model::Topology;

#[cfg(not(loom))]
use crate::backoff::Backoff;
use crate::backoff::Wait;
#[cfg(not(loom))]
use crate::error::SyncError;

/// The lock algorithms.
///
/// With the `clap` feature it is a command-line value (`topoprobe bench locks --kinds`):
/// the first paragraph of each variant's documentation is its help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// Test-and-set.
    ///
    /// `swap` until it returns free.
    Tas,
    /// Test-and-test-and-set.
    ///
    /// Read until free, then `swap`.
    Ttas,
    /// Ticket lock.
    ///
    /// FIFO by a counter, everybody reads one line.
    Ticket,
    /// MCS queue lock.
    ///
    /// Each waiter spins on its own node.
    Mcs,
    /// CLH queue lock.
    ///
    /// Each waiter spins on its predecessor's node.
    Clh,
    /// Cohort lock over the measured sockets or groups.
    ///
    /// A ticket lock per socket (or group) and a global ticket lock, the global one passed
    /// within a cohort up to a bound.
    Cohort,
}

impl LockKind {
    /// Every kind, in the order output lists them.
    pub const ALL: [Self; 6] = [
        Self::Tas,
        Self::Ttas,
        Self::Ticket,
        Self::Mcs,
        Self::Clh,
        Self::Cohort,
    ];

    /// The name in output.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tas => "tas",
            Self::Ttas => "ttas",
            Self::Ticket => "ticket",
            Self::Mcs => "mcs",
            Self::Clh => "clh",
            Self::Cohort => "cohort",
        }
    }
}

/// A raw lock made from a prepared backoff alone (every kind except the cohort lock, which
/// also needs the topology's structure).
pub trait WithWait: Sized {
    /// The kind.
    const KIND: LockKind;
    /// A free lock using `wait`.
    fn with_wait(wait: Wait) -> Self;
}

/// A `Mutex<T>` over a TAS lock.
pub type TasMutex<T> = lock_api::Mutex<RawTas, T>;
/// A `Mutex<T>` over a TTAS lock.
pub type TtasMutex<T> = lock_api::Mutex<RawTtas, T>;
/// A `Mutex<T>` over a ticket lock.
pub type TicketMutex<T> = lock_api::Mutex<RawTicket, T>;
/// A `Mutex<T>` over an MCS lock.
pub type McsMutex<T> = lock_api::Mutex<RawMcs, T>;
/// A `Mutex<T>` over a CLH lock.
pub type ClhMutex<T> = lock_api::Mutex<RawClh, T>;
/// A `Mutex<T>` over a cohort lock.
pub type CohortMutex<T> = lock_api::Mutex<RawCohort, T>;

/// A mutex holding `value`, its lock using `backoff`.
///
/// # Errors
///
/// When an educated backoff cannot be prepared (see [`Wait::new`]).
#[cfg(not(loom))]
pub fn mutex<R, T>(value: T, backoff: &Backoff<'_>) -> Result<lock_api::Mutex<R, T>, SyncError>
where
    R: WithWait + lock_api::RawMutex,
{
    Ok(lock_api::Mutex::from_raw(
        R::with_wait(Wait::new(backoff)?),
        value,
    ))
}

/// A mutex holding `value`, over a cohort lock whose cohorts are `topo`'s sockets (or its
/// groups on a one-socket machine), using `backoff`.
///
/// # Errors
///
/// When an educated backoff cannot be prepared (see [`Wait::new`]).
#[cfg(not(loom))]
pub fn cohort_mutex<T>(
    value: T,
    topo: &Topology,
    backoff: &Backoff<'_>,
) -> Result<CohortMutex<T>, SyncError> {
    Ok(lock_api::Mutex::from_raw(
        RawCohort::new(topo, Wait::new(backoff)?),
        value,
    ))
}

/// Implements `lock_api::RawMutex` over the inherent `acquire`/`try_acquire`/`release`.
macro_rules! raw_mutex {
    ($t:ty, $init:expr) => {
        #[cfg(not(loom))]
        // SAFETY: `acquire` returns only once the calling thread holds the lock exclusively
        // (each lock's module argues why), `try_acquire` returns true only then, and
        // `release` is called only by the holder (lock_api's contract on `unlock`).
        unsafe impl lock_api::RawMutex for $t {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = $init;
            type GuardMarker = lock_api::GuardSend;

            #[inline]
            fn lock(&self) {
                self.acquire();
            }

            #[inline]
            fn try_lock(&self) -> bool {
                self.try_acquire()
            }

            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: lock_api calls unlock only for the holder.
                unsafe { self.release() }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.locked()
            }
        }
    };
}
pub(crate) use raw_mutex;
