//! Model checking of mutual exclusion with loom: every interleaving (up to a
//! preemption bound of 3, 1 with three threads) of threads taking each lock and changing a value that loom checks for
//! unsynchronized access, for every lock kind.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p topoprobe-sync --release --test loom`
//! (`scripts/loom.sh`); without `--cfg loom` this file is empty.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use topoprobe_sync::locks::{RawClh, RawCohort, RawMcs, RawTas, RawTicket, RawTtas};
use topoprobe_sync::Wait;

/// The operations every raw lock has.
trait Raw: Send + Sync + 'static {
    fn make() -> Self;
    fn lock(&self);
    fn try_lock(&self) -> bool;
    /// # Safety
    /// The caller holds the lock.
    unsafe fn unlock(&self);
}

macro_rules! raw {
    ($t:ty) => {
        impl Raw for $t {
            fn make() -> Self {
                <$t>::new(Wait::NONE)
            }
            fn lock(&self) {
                self.acquire()
            }
            fn try_lock(&self) -> bool {
                self.try_acquire()
            }
            unsafe fn unlock(&self) {
                // SAFETY: forwarded from the caller.
                unsafe { self.release() }
            }
        }
    };
}
raw!(RawTas);
raw!(RawTtas);
raw!(RawTicket);
raw!(RawMcs);
raw!(RawClh);

/// A cohort lock whose two cohorts are named by the threads (thread `i` in cohort `i % 2`).
struct Cohort(RawCohort);
loom::thread_local! { static COHORT: std::cell::Cell<usize> = std::cell::Cell::new(0); }
impl Raw for Cohort {
    fn make() -> Self {
        Self(RawCohort::with_cohorts(&[vec![0], vec![1]], Wait::NONE))
    }
    fn lock(&self) {
        self.0.acquire_in(COHORT.with(std::cell::Cell::get));
    }
    fn try_lock(&self) -> bool {
        self.0.try_acquire_in(COHORT.with(std::cell::Cell::get))
    }
    unsafe fn unlock(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.release() }
    }
}

struct Shared<L> {
    lock: L,
    value: UnsafeCell<u32>,
}

// SAFETY: `value` is only accessed under `lock` (which is what the model checks).
unsafe impl<L: Sync> Sync for Shared<L> {}

/// `threads` threads each take the lock `rounds` times (the last `tries` threads with
/// try_lock) and increment the value; the final value counts every section.
fn model<L: Raw>(threads: usize, rounds: usize, tries: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(if threads > 2 { 1 } else { 3 });
    // Spinning threads yield at every look, which makes long (but finite) paths.
    b.max_branches = 100_000;
    b.check(move || {
        let s = Arc::new(Shared {
            lock: L::make(),
            value: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let s = s.clone();
                thread::spawn(move || {
                    COHORT.with(|c| c.set(t % 2));
                    let mut done = 0;
                    for _ in 0..rounds {
                        let got = if t + tries >= threads {
                            s.lock.try_lock()
                        } else {
                            s.lock.lock();
                            true
                        };
                        if got {
                            // SAFETY: under the lock; loom reports any concurrent access.
                            s.value.with_mut(|v| unsafe { *v += 1 });
                            done += 1;
                            // SAFETY: this thread holds the lock.
                            unsafe { s.lock.unlock() };
                        }
                    }
                    done
                })
            })
            .collect();
        let total: u32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        s.lock.lock();
        // SAFETY: under the lock.
        let v = s.value.with(|v| unsafe { *v });
        // SAFETY: this thread holds the lock.
        unsafe { s.lock.unlock() };
        assert_eq!(v, total);
    });
}

macro_rules! checks {
    ($($name:ident: $t:ty;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn two_threads_twice() {
                model::<$t>(2, 2, 0);
            }
            #[test]
            fn three_threads() {
                model::<$t>(3, 1, 0);
            }
            #[test]
            fn try_lock_against_lock() {
                model::<$t>(2, 2, 1);
            }
        }
    )*};
}

checks! {
    tas: RawTas;
    ttas: RawTtas;
    ticket: RawTicket;
    mcs: RawMcs;
    clh: RawClh;
    cohort: Cohort;
}
