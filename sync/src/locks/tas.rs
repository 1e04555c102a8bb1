//! Test-and-set and test-and-test-and-set locks.
//!
//! Mutual exclusion: the lock is held by whoever turned `state` from free to held with an
//! atomic `swap` (only one `swap` can see it free between two releases); `release` stores
//! free with `Release`, pairing with the `Acquire` of the next successful `swap`.

use super::{raw_mutex, LockKind, WithWait};
use crate::backoff::Wait;
use crate::prim::{AtomicU32, Ordering};

const FREE: u32 = 0;
const HELD: u32 = 1;

/// Sets the lock word to held; true when it was free. A `swap`; under `--cfg loom` the
/// compare-and-swap it is equivalent to (a swap of held over held changes nothing), because
/// loom 0.7 lets a plain store fall between the read and the write of a `swap`
/// (tokio-rs/loom#254) and would report executions no machine can have.
#[inline]
fn test_and_set(state: &AtomicU32) -> bool {
    #[cfg(loom)]
    {
        state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    #[cfg(not(loom))]
    {
        state.swap(HELD, Ordering::Acquire) == FREE
    }
}

/// A test-and-set spin lock: every attempt is a `swap` on the lock's line.
#[derive(Debug)]
pub struct RawTas {
    state: AtomicU32,
    wait: Wait,
}

/// A test-and-test-and-set spin lock: waiters read until the lock looks free, then `swap`.
#[derive(Debug)]
pub struct RawTtas {
    state: AtomicU32,
    wait: Wait,
}

impl WithWait for RawTas {
    const KIND: LockKind = LockKind::Tas;
    fn with_wait(wait: Wait) -> Self {
        Self::new(wait)
    }
}

impl WithWait for RawTtas {
    const KIND: LockKind = LockKind::Ttas;
    fn with_wait(wait: Wait) -> Self {
        Self::new(wait)
    }
}

impl RawTas {
    /// A free lock.
    #[must_use]
    pub fn new(wait: Wait) -> Self {
        Self {
            state: AtomicU32::new(FREE),
            wait,
        }
    }

    /// Takes the lock, waiting as long as needed.
    #[inline]
    pub fn acquire(&self) {
        if test_and_set(&self.state) {
            return;
        }
        let mut pause = self.wait.start();
        let mut failures = 0u32;
        loop {
            pause.pause(|e, _| e.exponential_ns(failures));
            failures = failures.saturating_add(1);
            if test_and_set(&self.state) {
                return;
            }
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        test_and_set(&self.state)
    }

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock (or received its guard).
    #[inline]
    pub unsafe fn release(&self) {
        self.state.store(FREE, Ordering::Release);
    }

    /// Whether the lock is held.
    #[must_use]
    pub fn locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == HELD
    }
}

impl RawTtas {
    /// A free lock.
    #[must_use]
    pub fn new(wait: Wait) -> Self {
        Self {
            state: AtomicU32::new(FREE),
            wait,
        }
    }

    /// Takes the lock, waiting as long as needed.
    #[inline]
    pub fn acquire(&self) {
        if test_and_set(&self.state) {
            return;
        }
        let mut pause = self.wait.start();
        let mut failures = 0u32;
        loop {
            while self.state.load(Ordering::Relaxed) == HELD {
                pause.pause(|e, _| e.exponential_ns(failures));
                failures = failures.saturating_add(1);
            }
            if test_and_set(&self.state) {
                return;
            }
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        self.state.load(Ordering::Relaxed) == FREE && test_and_set(&self.state)
    }

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock (or received its guard).
    #[inline]
    pub unsafe fn release(&self) {
        self.state.store(FREE, Ordering::Release);
    }

    /// Whether the lock is held.
    #[must_use]
    pub fn locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == HELD
    }
}

raw_mutex!(
    RawTas,
    RawTas {
        state: AtomicU32::new(FREE),
        wait: Wait::NONE
    }
);
raw_mutex!(
    RawTtas,
    RawTtas {
        state: AtomicU32::new(FREE),
        wait: Wait::NONE
    }
);
