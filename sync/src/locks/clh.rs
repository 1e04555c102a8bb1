//! The CLH queue lock (Craig, Landin and Hagersten).
//!
//! Mutual exclusion: `tail.swap` orders the arrivals; each thread waits until its
//! predecessor's node shows `locked == false`, which the predecessor stores only in
//! `release` (`Release`, read with `Acquire`). A thread that found the queue empty holds
//! the lock at once.
//!
//! Node lifetime: a releasing thread that is still the tail takes the queue back to empty
//! (CAS to null) and keeps its node; otherwise its node now belongs to its successor, which
//! spins on it. Either way the releasing thread has finished with its predecessor's node
//! (nobody else refers to it once its owner released) and takes it into its pool: nodes
//! migrate between threads, none is freed while referenced. The node a lock holds when it
//! is dropped (impossible while a thread holds or waits) is freed by `Drop`.

use std::ptr;

use super::nodes::{give_clh, take_clh, ClhNode};
use super::{raw_mutex, LockKind, WithWait};
use crate::backoff::Wait;
use crate::prim::{AtomicPtr, Ordering};

/// A CLH queue lock: FIFO, each waiter spins on its predecessor's node; with educated
/// backoff it looks once per latency between the predecessor's context and its own.
#[derive(Debug)]
pub struct RawClh {
    tail: AtomicPtr<ClhNode>,
    /// The holder's node.
    head: AtomicPtr<ClhNode>,
    /// The holder's predecessor's node (null when it found the queue empty).
    pred: AtomicPtr<ClhNode>,
    wait: Wait,
}

impl WithWait for RawClh {
    const KIND: LockKind = LockKind::Clh;
    fn with_wait(wait: Wait) -> Self {
        Self::new(wait)
    }
}

impl RawClh {
    /// A free lock.
    #[must_use]
    pub fn new(wait: Wait) -> Self {
        Self {
            tail: AtomicPtr::new(ptr::null_mut()),
            head: AtomicPtr::new(ptr::null_mut()),
            pred: AtomicPtr::new(ptr::null_mut()),
            wait,
        }
    }

    /// Takes the lock, waiting as long as needed.
    #[inline]
    pub fn acquire(&self) {
        let node = take_clh();
        let mut pause = self.wait.start();
        // SAFETY: `node` is ours alone until the swap below publishes it.
        let n = unsafe { &*node };
        n.locked.store(true, Ordering::Relaxed);
        if let Some(cpu) = pause.educated_cpu() {
            n.cpu.store(cpu, Ordering::Relaxed);
        }
        let pred = self.tail.swap(node, Ordering::AcqRel);
        if !pred.is_null() {
            // SAFETY: the predecessor's node is not recycled before we take it over in
            // our release: its owner hands it to us by clearing `locked`.
            let p = unsafe { &*pred };
            let pred_cpu = p.cpu.load(Ordering::Relaxed);
            while p.locked.load(Ordering::Acquire) {
                pause.pause(|e, me| e.latency_ns(pred_cpu, me));
            }
        }
        self.head.store(node, Ordering::Relaxed);
        self.pred.store(pred, Ordering::Relaxed);
    }

    /// Takes the lock if nobody holds or waits for it.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let node = take_clh();
        // SAFETY: `node` is ours alone until the CAS below publishes it.
        unsafe { &*node }.locked.store(true, Ordering::Relaxed);
        if self
            .tail
            .compare_exchange(ptr::null_mut(), node, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.head.store(node, Ordering::Relaxed);
            self.pred.store(ptr::null_mut(), Ordering::Relaxed);
            true
        } else {
            // SAFETY: the CAS failed, so no lock refers to the node.
            unsafe { give_clh(node) };
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
        let node = self.head.load(Ordering::Relaxed);
        let pred = self.pred.load(Ordering::Relaxed);
        if !pred.is_null() {
            // SAFETY: the predecessor released before we acquired; nobody else refers to
            // its node (its successor is us).
            unsafe { give_clh(pred) };
        }
        if self
            .tail
            .compare_exchange(node, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: nobody queued behind us: nothing refers to our node.
            unsafe { give_clh(node) };
        } else {
            // SAFETY: the node is alive: the successor spins on it and takes it over.
            unsafe { &*node }.locked.store(false, Ordering::Release);
        }
    }

    /// Whether the lock is held or waited for.
    #[must_use]
    pub fn locked(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }
}

impl Drop for RawClh {
    fn drop(&mut self) {
        let t = self.tail.load(Ordering::Relaxed);
        if !t.is_null() {
            // SAFETY: `&mut self`: no thread holds or waits, so the tail node is the last
            // released one, which nobody else refers to.
            drop(unsafe { Box::from_raw(t) });
        }
    }
}

raw_mutex!(
    RawClh,
    RawClh {
        tail: AtomicPtr::new(ptr::null_mut()),
        head: AtomicPtr::new(ptr::null_mut()),
        pred: AtomicPtr::new(ptr::null_mut()),
        wait: Wait::NONE
    }
);
