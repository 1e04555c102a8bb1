//! Following the threads of a running program: creation order, each thread's position in
//! a pinning (thread `i` of the program → position `i`), threads not to pin, and the
//! masks they had before the tuner touched them.

use std::collections::HashSet;

use topoprobe_sys::affinity::{self, AffinityError};
use topoprobe_sys::proc::{self, ProcError};
use topoprobe_sys::CpuSet;

use crate::error::{affinity_error, TuneError};

/// One thread of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    /// Its thread id.
    pub tid: i32,
    /// Its position in a pinning (`None`: skipped, it may run on any CPU of the pinning).
    pub position: Option<usize>,
    /// Its affinity mask when first seen.
    pub original: Option<CpuSet>,
}

/// The threads of one process, in creation order, found by polling
/// `/proc/<pid>/task`: the main thread has position 0; the `k`-th thread created after
/// it (counted from 0) is skipped when bit `k` of the skip mask is set (as `run --skip`
/// and `likwid-pin -s`), otherwise it takes the next position. Threads created between
/// two polls are ordered by thread id (the kernel hands ids out in increasing order until
/// they wrap).
#[derive(Debug)]
pub struct ThreadTracker {
    pid: i32,
    skip: u128,
    created: usize,
    next_position: usize,
    live: Vec<Tracked>,
    seen: HashSet<i32>,
}

impl ThreadTracker {
    /// A tracker of process `pid` with the skip mask `skip`; nothing is read yet.
    #[must_use]
    pub fn new(pid: i32, skip: u128) -> Self {
        Self {
            pid,
            skip,
            created: 0,
            next_position: 0,
            live: Vec::new(),
            seen: HashSet::new(),
        }
    }

    /// The process.
    #[must_use]
    pub const fn pid(&self) -> i32 {
        self.pid
    }

    /// Reads the process's threads: records new ones (returned, in creation order) and
    /// forgets those that exited.
    ///
    /// # Errors
    ///
    /// [`ProcError::Gone`] when the process has exited.
    pub fn poll(&mut self) -> Result<Vec<Tracked>, ProcError> {
        let tids = proc::threads(self.pid)?;
        let now: HashSet<i32> = tids.iter().copied().collect();
        self.live.retain(|t| now.contains(&t.tid));
        let mut fresh: Vec<i32> = tids
            .into_iter()
            .filter(|t| !self.seen.contains(t))
            .collect();
        // The main thread first, then by id.
        fresh.sort_by_key(|&t| (t != self.pid, t));
        let mut out = Vec::new();
        for tid in fresh {
            self.seen.insert(tid);
            let position = if tid == self.pid {
                Some(self.take_position())
            } else {
                let k = self.created;
                self.created += 1;
                if k < 128 && self.skip & (1 << k) != 0 {
                    None
                } else {
                    Some(self.take_position())
                }
            };
            let original = affinity::thread_affinity(tid).ok();
            let t = Tracked {
                tid,
                position,
                original,
            };
            self.live.push(t.clone());
            out.push(t);
        }
        Ok(out)
    }

    fn take_position(&mut self) -> usize {
        let p = self.next_position;
        self.next_position += 1;
        p
    }

    /// The live threads, in creation order.
    #[must_use]
    pub fn live(&self) -> &[Tracked] {
        &self.live
    }

    /// The live thread ids.
    #[must_use]
    pub fn tids(&self) -> Vec<i32> {
        self.live.iter().map(|t| t.tid).collect()
    }

    /// Keeps positions for the threads in `active` only: they take positions 0, 1, … in
    /// creation order, and the other positioned threads lose theirs (they may run on any
    /// CPU of a pinning, as skipped ones do). Threads seen later take the following
    /// positions. Returns the threads that lost their position.
    pub fn keep_positions_for(&mut self, active: &HashSet<i32>) -> Vec<i32> {
        let mut next = 0;
        let mut dropped = Vec::new();
        for t in &mut self.live {
            if t.position.is_none() {
                continue;
            }
            if active.contains(&t.tid) {
                t.position = Some(next);
                next += 1;
            } else {
                t.position = None;
                dropped.push(t.tid);
            }
        }
        self.next_position = next;
        dropped
    }

    /// Number of live threads that take a position (not skipped).
    #[must_use]
    pub fn positioned(&self) -> usize {
        self.live.iter().filter(|t| t.position.is_some()).count()
    }

    /// Forgets a thread that exited.
    pub fn forget(&mut self, tid: i32) {
        self.live.retain(|t| t.tid != tid);
    }

    /// Pins every live thread by `cpus` ([`mask_for`]); threads that exited meanwhile are
    /// forgotten.
    ///
    /// # Errors
    ///
    /// [`TuneError::NotPermitted`] when the kernel refuses (another user's thread);
    /// [`TuneError::Affinity`] when a CPU is not allowed.
    pub fn pin_all(&mut self, cpus: &[u32]) -> Result<(), TuneError> {
        let threads = self.live.clone();
        for t in &threads {
            self.pin_one(t, cpus)?;
        }
        Ok(())
    }

    /// Pins one thread by `cpus`; a thread that exited is forgotten.
    ///
    /// # Errors
    ///
    /// As [`ThreadTracker::pin_all`].
    pub fn pin_one(&mut self, t: &Tracked, cpus: &[u32]) -> Result<(), TuneError> {
        let mask = mask_for(cpus, t.position);
        match affinity::set_thread_affinity(t.tid, &mask) {
            Ok(()) => Ok(()),
            Err(e) if is_gone(&e) => {
                self.forget(t.tid);
                Ok(())
            }
            Err(e) => Err(affinity_error(self.pid, t.tid, e)),
        }
    }

    /// Gives every live thread back the mask it had when first seen (best effort: returns
    /// how many could not be restored).
    pub fn restore(&mut self) -> usize {
        let mut failed = 0;
        for t in &self.live {
            if let Some(m) = &t.original {
                if let Err(e) = affinity::set_thread_affinity(t.tid, m) {
                    if !is_gone(&e) {
                        failed += 1;
                    }
                }
            }
        }
        failed
    }
}

/// Whether an affinity failure means the thread has exited.
fn is_gone(e: &AffinityError) -> bool {
    e.os_error().and_then(std::io::Error::raw_os_error) == Some(libc::ESRCH)
}

/// The mask of a thread at `position` of the pinning `cpus`: its CPU, or every CPU of the
/// pinning for a skipped thread or one beyond the list.
#[must_use]
pub fn mask_for(cpus: &[u32], position: Option<usize>) -> CpuSet {
    match position.and_then(|p| cpus.get(p)) {
        Some(&c) => CpuSet::from([c]),
        None => cpus.iter().copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_creation_order_and_skip() {
        let pid = i32::try_from(std::process::id()).expect("pid");
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let mut t = ThreadTracker::new(pid, 0b1);
        let first = t.poll().expect("poll");
        assert_eq!(first[0].tid, pid);
        assert_eq!(first[0].position, Some(0));
        let before = t.live().len();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let rx = std::sync::Arc::clone(&rx);
                std::thread::spawn(move || {
                    let _ = rx.lock().map(|r| r.recv());
                })
            })
            .collect();
        let fresh = t.poll().expect("poll");
        assert!(fresh.len() >= 2, "{fresh:?}");
        assert_eq!(t.live().len(), before + fresh.len());
        // The first thread created after the main one (bit 0) is skipped only when it is
        // the first ever seen after it; here the test harness's threads came first.
        let positions: Vec<_> = t.live().iter().map(|x| x.position).collect();
        assert_eq!(positions.iter().filter(|p| p.is_none()).count(), 1);
        for _ in &handles {
            tx.send(()).expect("send");
        }
        for h in handles {
            h.join().expect("join");
        }
        t.poll().expect("poll");
        assert_eq!(t.live().len(), before);
        assert!(matches!(
            ThreadTracker::new(i32::MAX, 0).poll(),
            Err(ProcError::Gone { .. })
        ));
    }

    #[test]
    fn only_active_threads_keep_positions() {
        let pid = i32::try_from(std::process::id()).expect("pid");
        let mut t = ThreadTracker::new(pid, 0);
        t.poll().expect("poll");
        let all: Vec<i32> = t.tids();
        // Keep the main thread only: it takes position 0, the others none.
        let dropped = t.keep_positions_for(&HashSet::from([pid]));
        assert_eq!(dropped.len(), all.len() - 1);
        assert!(!dropped.contains(&pid));
        let main = t.live().iter().find(|x| x.tid == pid).expect("main");
        assert_eq!(main.position, Some(0));
        assert_eq!(t.positioned(), 1);
        // A thread seen later takes the next position.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let fresh = t.poll().expect("poll");
        assert!(fresh.iter().any(|x| x.position == Some(1)), "{fresh:?}");
        tx.send(()).expect("send");
        h.join().expect("join");
    }

    #[test]
    fn masks_of_positions() {
        assert_eq!(mask_for(&[3, 1], Some(1)).to_vec(), vec![1]);
        assert_eq!(mask_for(&[3, 1], Some(2)).to_vec(), vec![1, 3]);
        assert_eq!(mask_for(&[3, 1], None).to_vec(), vec![1, 3]);
    }
}
