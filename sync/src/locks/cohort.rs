//! The cohort lock (Dice, Marathe and Shavit's lock cohorting, C-TKT-TKT): a ticket lock
//! per cohort and a global ticket lock. A thread takes its cohort's lock, then the global
//! one unless the previous holder of its cohort passed it on; a releasing thread passes the
//! global lock to the next waiter of its cohort, up to [`MAX_PASSES`] times in a row, so
//! that the lock's data stays inside one socket (or group) for a while.
//!
//! Cohorts come from the measured structure ([`cohorts_of`]): the sockets, or on a
//! one-socket machine the groups directly below the socket (CCXs, clusters), or one cohort.
//!
//! Mutual exclusion: the holder holds its cohort's lock, and the global lock is held on
//! behalf of exactly one cohort (`global_held` is read and written only under the cohort's
//! lock); two holders would need two cohorts to hold the global lock at once.

use crossbeam_utils::CachePadded;
use topoprobe_model::{Member, Topology};

use super::raw_mutex;
use super::ticket::RawTicket;
use crate::backoff::Wait;
use crate::prim::{AtomicBool, AtomicU32, Ordering};

/// Hand-overs of the global lock inside one cohort before it is released to others.
pub const MAX_PASSES: u32 = 64;

/// One cohort's lock.
#[derive(Debug)]
struct Local {
    lock: RawTicket,
    /// Whether this cohort holds the global lock (under `lock`).
    global_held: AtomicBool,
    /// Consecutive hand-overs inside the cohort (under `lock`).
    passes: AtomicU32,
}

impl Local {
    fn new(wait: Wait) -> Self {
        Self {
            lock: RawTicket::new(wait),
            global_held: AtomicBool::new(false),
            passes: AtomicU32::new(0),
        }
    }
}

/// A cohort lock over ticket locks (see the module documentation).
#[derive(Debug)]
pub struct RawCohort {
    global: RawTicket,
    first: CachePadded<Local>,
    others: Vec<CachePadded<Local>>,
    /// Cohort of each OS CPU (CPUs past the end: cohort 0).
    cohort_of: Vec<u16>,
    /// The holder's cohort (under the lock).
    holder: AtomicU32,
}

/// The cohorts of a topology as lists of OS CPU numbers: its sockets when there are several,
/// else the groups directly inside its socket when there are several, else one cohort.
#[must_use]
pub fn cohorts_of(topo: &Topology) -> Vec<Vec<u32>> {
    let os = |ctxs: &[topoprobe_model::ContextId]| -> Vec<u32> {
        ctxs.iter().map(|c| topo.contexts()[c.0].os_id).collect()
    };
    if topo.num_sockets() > 1 {
        return topo.sockets().iter().map(|s| os(&s.contexts)).collect();
    }
    if let Some(s) = topo.sockets().first() {
        let groups: Vec<Vec<u32>> = s
            .members
            .iter()
            .filter_map(|m| match m {
                Member::Group(g) => Some(os(&topo.groups()[g.0].contexts)),
                Member::Core(_) => None,
            })
            .collect();
        if groups.len() > 1 && groups.iter().map(Vec::len).sum::<usize>() == s.contexts.len() {
            return groups;
        }
    }
    vec![topo.contexts().iter().map(|c| c.os_id).collect()]
}

impl RawCohort {
    /// A free lock whose cohorts are `topo`'s ([`cohorts_of`]).
    #[must_use]
    pub fn new(topo: &Topology, wait: Wait) -> Self {
        Self::with_cohorts(&cohorts_of(topo), wait)
    }

    /// A free lock with the given cohorts (lists of OS CPU numbers; CPUs in none belong to
    /// the first).
    #[must_use]
    pub fn with_cohorts(cohorts: &[Vec<u32>], wait: Wait) -> Self {
        let max = cohorts.iter().flatten().copied().max().unwrap_or(0) as usize;
        let mut cohort_of = vec![0u16; max + 1];
        for (i, c) in cohorts.iter().enumerate() {
            for &cpu in c {
                cohort_of[cpu as usize] = u16::try_from(i).unwrap_or(0);
            }
        }
        let n = cohorts.len().clamp(1, usize::from(u16::MAX));
        Self {
            global: RawTicket::new(wait.clone()),
            first: CachePadded::new(Local::new(wait.clone())),
            others: (1..n)
                .map(|_| CachePadded::new(Local::new(wait.clone())))
                .collect(),
            cohort_of,
            holder: AtomicU32::new(0),
        }
    }

    /// Number of cohorts.
    #[must_use]
    pub fn cohorts(&self) -> usize {
        1 + self.others.len()
    }

    fn local(&self, cohort: usize) -> &Local {
        if cohort == 0 {
            &self.first
        } else {
            self.others.get(cohort - 1).map_or(&*self.first, |l| &**l)
        }
    }

    /// The calling thread's cohort.
    #[inline]
    fn my_cohort(&self) -> usize {
        if self.others.is_empty() {
            return 0;
        }
        topoprobe_sys::affinity::current_cpu()
            .and_then(|c| self.cohort_of.get(c as usize))
            .map_or(0, |&c| usize::from(c))
    }

    /// Takes the lock, waiting as long as needed, as a member of the calling thread's
    /// cohort (the one of the CPU it runs on).
    #[inline]
    pub fn acquire(&self) {
        self.acquire_in(self.my_cohort());
    }

    /// Takes the lock as a member of `cohort` (any thread may name any cohort: the cohort
    /// decides performance, not correctness; out of range means the first).
    pub fn acquire_in(&self, cohort: usize) {
        let cohort = if cohort < self.cohorts() { cohort } else { 0 };
        let local = self.local(cohort);
        local.lock.acquire();
        if !local.global_held.load(Ordering::Relaxed) {
            self.global.acquire();
            local.global_held.store(true, Ordering::Relaxed);
        }
        self.holder
            .store(u32::try_from(cohort).unwrap_or(0), Ordering::Relaxed);
    }

    /// Takes the lock if it is free for the calling thread's cohort.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        self.try_acquire_in(self.my_cohort())
    }

    /// Takes the lock if it is free for a member of `cohort` (out of range: the first).
    pub fn try_acquire_in(&self, cohort: usize) -> bool {
        let cohort = if cohort < self.cohorts() { cohort } else { 0 };
        let local = self.local(cohort);
        if !local.lock.try_acquire() {
            return false;
        }
        if !local.global_held.load(Ordering::Relaxed) {
            if !self.global.try_acquire() {
                // SAFETY: we took the cohort's lock just above.
                unsafe { local.lock.release() };
                return false;
            }
            local.global_held.store(true, Ordering::Relaxed);
        }
        self.holder
            .store(u32::try_from(cohort).unwrap_or(0), Ordering::Relaxed);
        true
    }

    /// Releases the lock: to the next waiter of the holder's cohort when there is one and
    /// the cohort has not passed it `MAX_PASSES` (64) times in a row, else to everybody.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock (or received its guard).
    #[inline]
    pub unsafe fn release(&self) {
        let local = self.local(self.holder.load(Ordering::Relaxed) as usize);
        let passes = local.passes.load(Ordering::Relaxed);
        if local.lock.waiters() > 0 && passes < MAX_PASSES {
            local.passes.store(passes + 1, Ordering::Relaxed);
        } else {
            local.passes.store(0, Ordering::Relaxed);
            local.global_held.store(false, Ordering::Relaxed);
            // SAFETY: the holder's cohort holds the global lock.
            unsafe { self.global.release() };
        }
        // SAFETY: the holder holds its cohort's lock.
        unsafe { local.lock.release() };
    }

    /// Whether the lock is held (by any cohort).
    #[must_use]
    pub fn locked(&self) -> bool {
        self.global.locked()
    }
}

raw_mutex!(
    RawCohort,
    RawCohort {
        global: RawTicket::init(),
        first: CachePadded::new(Local {
            lock: RawTicket::init(),
            global_held: AtomicBool::new(false),
            passes: AtomicU32::new(0),
        }),
        others: Vec::new(),
        cohort_of: Vec::new(),
        holder: AtomicU32::new(0),
    }
);
