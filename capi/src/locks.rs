//! The locks of `topoprobe-sync` in C: TAS, TTAS, ticket, MCS, CLH and cohort spin locks
//! with no, fixed or educated backoff (waits derived from a topology's measured latencies).

use std::ffi::c_int;

use topoprobe_sync::locks::{RawClh, RawCohort, RawMcs, RawTas, RawTicket, RawTtas};
use topoprobe_sync::{Backoff, Wait};

use crate::{deref, recorded, set_error, TpTopology};

/// Test-and-set lock.
pub const TP_LOCK_TAS: c_int = 0;
/// Test-and-test-and-set lock.
pub const TP_LOCK_TTAS: c_int = 1;
/// Ticket lock (FIFO).
pub const TP_LOCK_TICKET: c_int = 2;
/// MCS queue lock (FIFO, each waiter spins on its own line).
pub const TP_LOCK_MCS: c_int = 3;
/// CLH queue lock (FIFO, each waiter spins on its predecessor's line).
pub const TP_LOCK_CLH: c_int = 4;
/// Cohort lock over the topology's sockets (or groups): needs a topology.
pub const TP_LOCK_COHORT: c_int = 5;

/// No backoff.
pub const TP_BACKOFF_NONE: c_int = 0;
/// Crossbeam's fixed constants.
pub const TP_BACKOFF_FIXED: c_int = 1;
/// Waits derived from the topology's measured latencies: needs a topology.
pub const TP_BACKOFF_EDUCATED: c_int = 2;

/// A spin lock.
pub struct TpLock(Lock);

impl std::fmt::Debug for TpLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpLock").finish_non_exhaustive()
    }
}

#[allow(clippy::large_enum_variant)] // one allocation per lock, boxed as a whole
enum Lock {
    Tas(RawTas),
    Ttas(RawTtas),
    Ticket(RawTicket),
    Mcs(RawMcs),
    Clh(RawClh),
    Cohort(RawCohort),
}

/// Creates a free lock of `kind` (`TP_LOCK_*`) with `backoff` (`TP_BACKOFF_*`); `topo` is
/// needed for educated backoff and the cohort lock, and may be NULL otherwise. NULL on
/// failure (unknown kind or backoff, missing topology, a topology in cycles without a
/// recorded frequency).
///
/// # Safety
///
/// `topo` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_lock_create(
    kind: c_int,
    backoff: c_int,
    topo: *const TpTopology,
) -> *mut TpLock {
    crate::clear_error();
    // SAFETY: the caller passes NULL or a live topology.
    let topo = unsafe { topo.as_ref() }.map(|t| &t.0);
    let needs_topology = |what: &str| {
        set_error(format!("{what} needs a topology (topo is NULL)"));
        std::ptr::null_mut()
    };
    let b = match (backoff, topo) {
        (TP_BACKOFF_NONE, _) => Backoff::None,
        (TP_BACKOFF_FIXED, _) => Backoff::Fixed,
        (TP_BACKOFF_EDUCATED, Some(t)) => Backoff::Educated(t),
        (TP_BACKOFF_EDUCATED, None) => return needs_topology("educated backoff"),
        (b, _) => {
            set_error(format!("unknown backoff number {b} (0 to 2)"));
            return std::ptr::null_mut();
        }
    };
    let Some(wait) = recorded(Wait::new(&b)) else {
        return std::ptr::null_mut();
    };
    let lock = match kind {
        TP_LOCK_TAS => Lock::Tas(RawTas::new(wait)),
        TP_LOCK_TTAS => Lock::Ttas(RawTtas::new(wait)),
        TP_LOCK_TICKET => Lock::Ticket(RawTicket::new(wait)),
        TP_LOCK_MCS => Lock::Mcs(RawMcs::new(wait)),
        TP_LOCK_CLH => Lock::Clh(RawClh::new(wait)),
        TP_LOCK_COHORT => match topo {
            Some(t) => Lock::Cohort(RawCohort::new(t, wait)),
            None => return needs_topology("the cohort lock"),
        },
        k => {
            set_error(format!("unknown lock number {k} (0 to 5)"));
            return std::ptr::null_mut();
        }
    };
    Box::into_raw(Box::new(TpLock(lock)))
}

/// Takes the lock, waiting as long as needed; -1 when `lock` is NULL, else 0.
///
/// # Safety
///
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn tp_lock_acquire(lock: *const TpLock) -> c_int {
    crate::clear_error();
    // SAFETY: the caller passes NULL or a live lock.
    let Some(l) = (unsafe { deref(lock, "lock") }) else {
        return -1;
    };
    match &l.0 {
        Lock::Tas(x) => x.acquire(),
        Lock::Ttas(x) => x.acquire(),
        Lock::Ticket(x) => x.acquire(),
        Lock::Mcs(x) => x.acquire(),
        Lock::Clh(x) => x.acquire(),
        Lock::Cohort(x) => x.acquire(),
    }
    0
}

/// Takes the lock if it is free: 1 when taken, 0 when not, -1 when `lock` is NULL.
///
/// # Safety
///
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn tp_lock_try_acquire(lock: *const TpLock) -> c_int {
    crate::clear_error();
    // SAFETY: the caller passes NULL or a live lock.
    let Some(l) = (unsafe { deref(lock, "lock") }) else {
        return -1;
    };
    c_int::from(match &l.0 {
        Lock::Tas(x) => x.try_acquire(),
        Lock::Ttas(x) => x.try_acquire(),
        Lock::Ticket(x) => x.try_acquire(),
        Lock::Mcs(x) => x.try_acquire(),
        Lock::Clh(x) => x.try_acquire(),
        Lock::Cohort(x) => x.try_acquire(),
    })
}

/// Releases the lock; 0, or -1 when `lock` is NULL or nobody holds it (nor waits for
/// it): nothing is done then, and [`tp_last_error`](crate::tp_last_error) says so.
///
/// # Safety
///
/// `lock` is NULL or a live lock that the calling thread holds (releasing a lock another
/// thread holds breaks it).
#[no_mangle]
pub unsafe extern "C" fn tp_lock_release(lock: *const TpLock) -> c_int {
    crate::clear_error();
    // SAFETY: the caller passes NULL or a live lock.
    let Some(l) = (unsafe { deref(lock, "lock") }) else {
        return -1;
    };
    let held = match &l.0 {
        Lock::Tas(x) => x.locked(),
        Lock::Ttas(x) => x.locked(),
        Lock::Ticket(x) => x.locked(),
        Lock::Mcs(x) => x.locked(),
        Lock::Clh(x) => x.locked(),
        Lock::Cohort(x) => x.locked(),
    };
    if !held {
        crate::set_error(
            "tp_lock_release: the lock is not held (release it from the thread that acquired it)",
        );
        return -1;
    }
    // SAFETY: the caller holds the lock (it is held; that this thread holds it is the
    // caller's promise).
    unsafe {
        match &l.0 {
            Lock::Tas(x) => x.release(),
            Lock::Ttas(x) => x.release(),
            Lock::Ticket(x) => x.release(),
            Lock::Mcs(x) => x.release(),
            Lock::Clh(x) => x.release(),
            Lock::Cohort(x) => x.release(),
        }
    }
    0
}

/// Frees a lock (NULL is ignored).
///
/// # Safety
///
/// `lock` is NULL or a live lock that no thread holds or waits for; it is not used again.
#[no_mangle]
pub unsafe extern "C" fn tp_lock_free(lock: *mut TpLock) {
    crate::clear_error();
    if !lock.is_null() {
        // SAFETY: the caller passes a live lock of Box::into_raw that nobody uses.
        drop(unsafe { Box::from_raw(lock) });
    }
}
