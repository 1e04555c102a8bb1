//! The MCS queue lock (Mellor-Crummey and Scott).
//!
//! Mutual exclusion: `tail.swap` orders the arrivals; a thread that found a predecessor
//! waits until the predecessor clears its `locked` flag, which the predecessor does only
//! in `release`, after its critical section (`Release`, read with `Acquire`). A thread that
//! found the queue empty holds the lock at once. The holder's node is remembered in `head`
//! for `release`.
//!
//! Node lifetime: a node is referenced by the lock (`tail`, `head`), by its predecessor
//! (which writes `locked`) and by its successor (which writes `next`). When its owner
//! releases, the predecessor is done with it (it cleared `locked`), and the successor is
//! either linked (already wrote `next`) or absent (the `tail` CAS to null succeeded); so the
//! owner returns it to its pool.

use std::ptr;

use super::nodes::{give_mcs, take_mcs, McsNode};
use super::{raw_mutex, LockKind, WithWait};
use crate::backoff::Wait;
use crate::prim::{spin_hint, AtomicPtr, Ordering};

/// An MCS queue lock: FIFO, each waiter spins on its own cache line; with educated backoff
/// a waiter looks at its flag once per latency between its predecessor's context and its
/// own.
#[derive(Debug)]
pub struct RawMcs {
    tail: AtomicPtr<McsNode>,
    /// The holder's node.
    head: AtomicPtr<McsNode>,
    wait: Wait,
}

impl WithWait for RawMcs {
    const KIND: LockKind = LockKind::Mcs;
    fn with_wait(wait: Wait) -> Self {
        Self::new(wait)
    }
}

impl RawMcs {
    /// A free lock.
    #[must_use]
    pub fn new(wait: Wait) -> Self {
        Self {
            tail: AtomicPtr::new(ptr::null_mut()),
            head: AtomicPtr::new(ptr::null_mut()),
            wait,
        }
    }

    /// Takes the lock, waiting as long as needed.
    #[inline]
    pub fn acquire(&self) {
        let node = take_mcs();
        let mut pause = self.wait.start();
        // SAFETY: `node` is ours alone until the swap below publishes it.
        let n = unsafe { &*node };
        n.next.store(ptr::null_mut(), Ordering::Relaxed);
        n.locked.store(true, Ordering::Relaxed);
        if let Some(cpu) = pause.educated_cpu() {
            n.cpu.store(cpu, Ordering::Relaxed);
        }
        let pred = self.tail.swap(node, Ordering::AcqRel);
        if !pred.is_null() {
            // SAFETY: the predecessor's node stays alive until its owner hands over to us,
            // which cannot happen before we link ourselves (it waits for `next`).
            let p = unsafe { &*pred };
            let pred_cpu = p.cpu.load(Ordering::Relaxed);
            p.next.store(node, Ordering::Release);
            while n.locked.load(Ordering::Acquire) {
                pause.pause(|e, me| e.latency_ns(pred_cpu, me));
            }
        }
        self.head.store(node, Ordering::Relaxed);
    }

    /// Takes the lock if nobody holds or waits for it.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let node = take_mcs();
        // SAFETY: `node` is ours alone until the CAS below publishes it.
        let n = unsafe { &*node };
        n.next.store(ptr::null_mut(), Ordering::Relaxed);
        n.locked.store(true, Ordering::Relaxed);
        if self
            .tail
            .compare_exchange(ptr::null_mut(), node, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.head.store(node, Ordering::Relaxed);
            true
        } else {
            // SAFETY: the CAS failed, so no lock refers to the node.
            unsafe { give_mcs(node) };
            false
        }
    }

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock (or received its guard).
    #[inline]
    pub unsafe fn release(&self) {
        // Taken out before the lock is handed over: the next holder records its own node
        // after it is handed the lock (ordered by `locked`'s Release and Acquire). A
        // release with no holder recorded (a caller breaking the contract, such as a C
        // program releasing a lock nobody holds) finds none and does nothing.
        let node = self.head.swap(ptr::null_mut(), Ordering::Relaxed);
        if node.is_null() {
            return;
        }
        // SAFETY: the holder's node is alive: only its owner's release frees it.
        let n = unsafe { &*node };
        let mut next = n.next.load(Ordering::Acquire);
        if next.is_null() {
            if self
                .tail
                .compare_exchange(node, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: no successor and the queue is empty: nothing refers to the node.
                unsafe { give_mcs(node) };
                return;
            }
            // A successor swapped itself in and is about to link (if it was descheduled
            // in between, yield to let it run).
            let mut waits = 0_u32;
            loop {
                next = n.next.load(Ordering::Acquire);
                if !next.is_null() {
                    break;
                }
                if waits >= crate::backoff::YIELD_AFTER {
                    crate::prim::yield_now();
                } else {
                    waits += 1;
                    spin_hint();
                }
            }
        }
        // SAFETY: the successor's node is alive: its owner waits for this store.
        unsafe { &*next }.locked.store(false, Ordering::Release);
        // SAFETY: the predecessor is done with the node and the successor linked itself
        // (it wrote `next`) and now waits on its own node: nothing refers to ours.
        unsafe { give_mcs(node) };
    }

    /// Whether the lock is held or waited for.
    #[must_use]
    pub fn locked(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }
}

raw_mutex!(
    RawMcs,
    RawMcs {
        tail: AtomicPtr::new(ptr::null_mut()),
        head: AtomicPtr::new(ptr::null_mut()),
        wait: Wait::NONE
    }
);
