//! The ticket lock.
//!
//! Mutual exclusion: tickets are handed out by `fetch_add` on `next`, so no two threads
//! hold the same ticket; only the thread whose ticket equals `serving` holds the lock, and
//! only the holder advances `serving` (with `Release`, read with `Acquire` by the next).
//! Counters wrap around: fewer than 2³² threads can wait at once.

use crossbeam_utils::CachePadded;

use super::{raw_mutex, LockKind, WithWait};
use crate::backoff::Wait;
use crate::prim::{AtomicU32, Ordering};

/// A ticket spin lock (FIFO); with educated backoff a waiter waits its distance to the head
/// of the queue times the latency between the holder's context and its own.
#[derive(Debug)]
pub struct RawTicket {
    next: AtomicU32,
    serving: AtomicU32,
    /// The holder's CPU (written only with educated backoff), on its own line so that the
    /// holder's write does not disturb the waiters reading `serving`.
    owner: CachePadded<AtomicU32>,
    wait: Wait,
}

impl WithWait for RawTicket {
    const KIND: LockKind = LockKind::Ticket;
    fn with_wait(wait: Wait) -> Self {
        Self::new(wait)
    }
}

impl RawTicket {
    /// A free lock.
    #[must_use]
    pub fn new(wait: Wait) -> Self {
        Self {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            owner: CachePadded::new(AtomicU32::new(u32::MAX)),
            wait,
        }
    }

    /// Takes the lock, waiting as long as needed.
    #[inline]
    pub fn acquire(&self) {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let mut serving = self.serving.load(Ordering::Acquire);
        if serving == ticket {
            self.note_owner(None);
            return;
        }
        let mut pause = self.wait.start();
        let mut holder = u32::MAX;
        let mut seen = serving.wrapping_sub(1);
        loop {
            let distance = ticket.wrapping_sub(serving);
            if serving != seen {
                // The head moved: the holder changed (read only with educated backoff).
                seen = serving;
                if pause.educated_cpu().is_some() {
                    holder = self.owner.load(Ordering::Relaxed);
                }
            }
            pause.pause(|e, me| e.ticket_ns(distance, holder, me));
            serving = self.serving.load(Ordering::Acquire);
            if serving == ticket {
                self.note_owner(pause.educated_cpu());
                return;
            }
        }
    }

    /// Records the holder's CPU for waiters' educated backoff.
    #[inline]
    fn note_owner(&self, cpu: Option<u32>) {
        if self.wait.educated().is_some() {
            let cpu = cpu.or_else(topoprobe_sys::affinity::current_cpu);
            self.owner.store(cpu.unwrap_or(u32::MAX), Ordering::Relaxed);
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let serving = self.serving.load(Ordering::Acquire);
        let ok = self
            .next
            .compare_exchange(
                serving,
                serving.wrapping_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        if ok {
            self.note_owner(None);
        }
        ok
    }

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock (or received its guard).
    #[inline]
    pub unsafe fn release(&self) {
        let s = self.serving.load(Ordering::Relaxed);
        self.serving.store(s.wrapping_add(1), Ordering::Release);
    }

    /// Whether the lock is held.
    #[must_use]
    pub fn locked(&self) -> bool {
        self.next.load(Ordering::Relaxed) != self.serving.load(Ordering::Relaxed)
    }

    /// Threads queued behind the holder (call while holding the lock).
    #[inline]
    pub(crate) fn waiters(&self) -> u32 {
        let serving = self.serving.load(Ordering::Relaxed);
        self.next
            .load(Ordering::Relaxed)
            .wrapping_sub(serving)
            .saturating_sub(1)
    }

    /// A free lock without backoff, in constant context.
    #[cfg(not(loom))]
    pub(crate) const fn init() -> Self {
        Self {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            owner: CachePadded::new(AtomicU32::new(u32::MAX)),
            wait: Wait::NONE,
        }
    }
}

raw_mutex!(RawTicket, RawTicket::init());
