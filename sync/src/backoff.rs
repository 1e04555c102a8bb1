//! Backoff: what a waiting thread does between two looks at a busy lock.
//!
//! - [`Backoff::None`]: look again at once (one spin-loop hint, `pause`, per look).
//! - [`Backoff::Fixed`]: crossbeam's [`crossbeam_utils::Backoff::snooze`], the constants
//!   of today's libraries (spin 2⁰…2⁶ `pause`s, then yield to the scheduler): the baseline.
//! - [`Backoff::Educated`]: waits in nanoseconds derived from the measured topology
//!   (libmctop's educated backoff, paper §5 and §7.1): a cache line travels between two
//!   contexts in the latency measured between them, so looking again sooner is wasted
//!   coherence traffic. How each lock uses it is in `docs/SYNC.md`:
//!   - ticket: the distance to the head of the queue × the latency between the holder's
//!     context and the waiter's;
//!   - TAS/TTAS: capped exponential from the cheapest core-to-core latency level, capped at
//!     [`CAP_QUANTA`] × the largest level (cross-socket where there are sockets);
//!   - MCS/CLH: one latency between the predecessor's context and the waiter's per look at
//!     the waiter's own flag;
//!   - cohort: the ticket rule inside a cohort and across cohorts.
//!
//! Waits are timed with topoprobe's calibrated clock ([`topoprobe_sys::clock::Clock`]), not
//! counted in `pause`s.

use std::sync::Arc;

use topoprobe_model::{LatencyUnit, Role, Topology};

use crate::error::SyncError;
#[cfg(not(loom))]
use topoprobe_sys::clock::Clock;

/// The TAS/TTAS cap, in multiples of the largest latency level.
pub const CAP_QUANTA: f64 = 8.0;

/// The backoff a lock uses.
#[derive(Debug, Clone, Copy)]
pub enum Backoff<'a> {
    /// No backoff: look again at once.
    None,
    /// Crossbeam's fixed constants (spin up to 2⁶ `pause`s, then yield).
    Fixed,
    /// Waits derived from this topology's measured latencies.
    Educated(&'a Topology),
}

/// The kind of a backoff, as named in output (`none`, `fixed`, `educated`).
///
/// With the `clap` feature it is a command-line value (`topoprobe bench locks
/// --backoffs`): the first paragraph of each variant's documentation is its help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackoffKind {
    /// No backoff.
    ///
    /// [`Backoff::None`].
    None,
    /// Crossbeam's fixed constants.
    ///
    /// [`Backoff::Fixed`].
    Fixed,
    /// Waits from the measured latencies.
    ///
    /// [`Backoff::Educated`].
    Educated,
}

impl BackoffKind {
    /// The name in output.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Fixed => "fixed",
            Self::Educated => "educated",
        }
    }
}

/// A backoff ready to use: [`Backoff`] with the topology's latencies turned into a table of
/// nanoseconds. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Wait(WaitKind);

#[derive(Debug, Clone, Default)]
enum WaitKind {
    #[default]
    None,
    Fixed,
    Educated(Arc<Educated>),
}

impl Wait {
    /// No backoff (what a lock made by `lock_api`'s `INIT` has).
    pub const NONE: Self = Self(WaitKind::None);

    /// Prepares a backoff.
    ///
    /// # Errors
    ///
    /// For [`Backoff::Educated`], when the topology's latencies are in cycles without a
    /// recorded clock frequency ([`SyncError::NoFrequency`]) or it has no latency between
    /// two contexts ([`SyncError::NoLatencies`]).
    pub fn new(backoff: &Backoff<'_>) -> Result<Self, SyncError> {
        Ok(Self(match backoff {
            Backoff::None => WaitKind::None,
            Backoff::Fixed => WaitKind::Fixed,
            Backoff::Educated(t) => WaitKind::Educated(Arc::new(Educated::new(t)?)),
        }))
    }

    /// Which backoff this is.
    #[must_use]
    pub fn kind(&self) -> BackoffKind {
        match self.0 {
            WaitKind::None => BackoffKind::None,
            WaitKind::Fixed => BackoffKind::Fixed,
            WaitKind::Educated(_) => BackoffKind::Educated,
        }
    }

    /// The educated waits, when this is an educated backoff.
    #[must_use]
    pub fn educated(&self) -> Option<&Educated> {
        match &self.0 {
            WaitKind::Educated(e) => Some(e),
            _ => None,
        }
    }

    /// Starts one wait for a lock: call [`Pause::pause`] between looks.
    #[inline]
    pub(crate) fn start(&self) -> Pause<'_> {
        let how = match &self.0 {
            WaitKind::None => How::Spin,
            WaitKind::Fixed => How::Fixed(crossbeam_utils::Backoff::new()),
            WaitKind::Educated(e) => How::Educated { e, me: None },
        };
        Pause {
            how,
            waits: 0,
            waited_ns: 0.0,
        }
    }
}

/// Waits after which a waiter also yields its CPU at every wait: with more threads than
/// CPUs, a queue lock's next owner (or its holder) may be descheduled, and a waiter that
/// only spins keeps it so for whole time slices (64 threads on 2 CPUs once took minutes
/// for what takes milliseconds). With one thread per CPU a wait this long is rare, and
/// `yield` returns at once when nothing else may run.
pub(crate) const YIELD_AFTER: u32 = 1 << 10;

/// Nanoseconds of educated waiting after which a waiter also yields at every wait (the
/// same reason as [`YIELD_AFTER`], for waits that are long one by one).
#[cfg_attr(loom, allow(dead_code))]
const YIELD_AFTER_NS: f64 = 20_000.0;

/// The waiting state of one acquisition (under loom every wait is a yield, so the states
/// are kept but not read).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Pause<'a> {
    how: How<'a>,
    /// Waits so far.
    waits: u32,
    /// Nanoseconds of educated waits so far.
    waited_ns: f64,
}

/// How a waiter waits once.
#[cfg_attr(loom, allow(dead_code))]
enum How<'a> {
    Spin,
    Fixed(crossbeam_utils::Backoff),
    Educated { e: &'a Educated, me: Option<u32> },
}

impl Pause<'_> {
    /// Waits once: a spin hint, crossbeam's snooze, or `ns(educated, my_cpu)` nanoseconds;
    /// after [`YIELD_AFTER`] waits, yields the CPU too.
    #[inline]
    pub(crate) fn pause(&mut self, ns: impl FnOnce(&Educated, u32) -> f64) {
        #[cfg(loom)]
        {
            let _ = ns;
            loom::thread::yield_now();
        }
        #[cfg(not(loom))]
        {
            match &mut self.how {
                How::Spin => std::hint::spin_loop(),
                How::Fixed(b) => b.snooze(),
                How::Educated { e, me } => {
                    let cpu = *me.get_or_insert_with(|| {
                        topoprobe_sys::affinity::current_cpu().unwrap_or(u32::MAX)
                    });
                    let wait = ns(e, cpu);
                    Clock::get().spin_ns(wait);
                    self.waited_ns += wait;
                }
            }
            if self.waits >= YIELD_AFTER || self.waited_ns >= YIELD_AFTER_NS {
                std::thread::yield_now();
            } else {
                self.waits += 1;
            }
        }
    }

    /// The calling thread's CPU when the wait is educated (read once per acquisition).
    #[inline]
    pub(crate) fn educated_cpu(&mut self) -> Option<u32> {
        match &mut self.how {
            How::Educated { me, .. } => {
                Some(*me.get_or_insert_with(|| {
                    topoprobe_sys::affinity::current_cpu().unwrap_or(u32::MAX)
                }))
            }
            _ => None,
        }
    }
}

/// The waits of an educated backoff, in nanoseconds, from a topology's latencies.
#[derive(Debug, Clone)]
pub struct Educated {
    /// Dense index of each OS CPU number (`u32::MAX`: not in the topology).
    index: Vec<u32>,
    /// Contexts.
    n: usize,
    /// Latency between contexts `i` and `j` at `i * n + j`, ns.
    latency_ns: Vec<f32>,
    /// The cheapest latency between two cores, ns (start of the TAS/TTAS exponential).
    base_ns: f64,
    /// The largest latency between any two contexts, ns (libmctop's backoff quantum).
    quantum_ns: f64,
    /// TAS/TTAS cap, ns.
    cap_ns: f64,
}

impl Educated {
    /// The waits of `topo`.
    ///
    /// # Errors
    ///
    /// [`SyncError::NoFrequency`] or [`SyncError::BadFrequency`] for latencies in cycles
    /// without a usable `ghz` parameter; [`SyncError::NoLatencies`] when no two contexts
    /// have a latency.
    pub fn new(topo: &Topology) -> Result<Self, SyncError> {
        let ns_per_unit = match topo.units() {
            LatencyUnit::Ns => 1.0,
            LatencyUnit::Cycles => {
                let g = topo
                    .provenance()
                    .parameters
                    .get("ghz")
                    .ok_or(SyncError::NoFrequency)?;
                match g.trim().parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => 1.0 / v,
                    _ => return Err(SyncError::BadFrequency(g.clone())),
                }
            }
        };
        let ctxs = topo.contexts();
        let n = ctxs.len();
        let max_os = ctxs.iter().map(|c| c.os_id).max().unwrap_or(0) as usize;
        let mut index = vec![u32::MAX; max_os + 1];
        for (i, c) in ctxs.iter().enumerate() {
            index[c.os_id as usize] = u32::try_from(i).unwrap_or(u32::MAX);
        }
        let mut latency_ns = vec![f32::NAN; n * n];
        let mut top = 0.0f64;
        for a in ctxs {
            for b in ctxs {
                if a.id == b.id {
                    latency_ns[a.id.0 * n + b.id.0] = 0.0;
                } else if let Some(l) = topo.context_latency(a.id, b.id) {
                    let v = l * ns_per_unit;
                    top = top.max(v);
                    latency_ns[a.id.0 * n + b.id.0] = v as f32;
                }
            }
        }
        if top <= 0.0 {
            return Err(SyncError::NoLatencies);
        }
        let levels = topo.levels();
        let base = levels
            .iter()
            .filter(|l| l.role != Role::Smt)
            .chain(levels.iter())
            .map(|l| l.latency.median * ns_per_unit)
            .find(|&v| v > 0.0)
            .unwrap_or(top);
        let largest = levels
            .iter()
            .map(|l| l.latency.median * ns_per_unit)
            .fold(0.0, f64::max)
            .max(base);
        Ok(Self {
            index,
            n,
            latency_ns,
            base_ns: base,
            quantum_ns: top,
            cap_ns: CAP_QUANTA * largest,
        })
    }

    /// Latency between two OS CPUs in ns; the quantum when either is unknown, the cheapest
    /// core-to-core latency for a CPU with itself.
    #[inline]
    #[must_use]
    pub fn latency_ns(&self, a: u32, b: u32) -> f64 {
        let ix = |c: u32| {
            self.index
                .get(c as usize)
                .copied()
                .filter(|&i| i != u32::MAX)
        };
        match (ix(a), ix(b)) {
            (Some(i), Some(j)) if i == j => self.base_ns,
            (Some(i), Some(j)) => {
                let v = self.latency_ns[i as usize * self.n + j as usize];
                if v.is_nan() {
                    self.quantum_ns
                } else {
                    f64::from(v)
                }
            }
            _ => self.quantum_ns,
        }
    }

    /// The cheapest latency between two cores, ns.
    #[must_use]
    pub fn base_ns(&self) -> f64 {
        self.base_ns
    }

    /// The largest latency between two contexts, ns (libmctop's quantum).
    #[must_use]
    pub fn quantum_ns(&self) -> f64 {
        self.quantum_ns
    }

    /// The TAS/TTAS cap, ns.
    #[must_use]
    pub fn cap_ns(&self) -> f64 {
        self.cap_ns
    }

    /// The TAS/TTAS wait after `failures` failed attempts: `base × 2^failures`, capped.
    #[inline]
    #[must_use]
    pub fn exponential_ns(&self, failures: u32) -> f64 {
        (self.base_ns * f64::from(1u32 << failures.min(24))).min(self.cap_ns)
    }

    /// The ticket wait: `distance` places from the head × the latency between the
    /// holder's CPU and the waiter's.
    #[inline]
    #[must_use]
    pub fn ticket_ns(&self, distance: u32, holder: u32, me: u32) -> f64 {
        f64::from(distance.max(1)) * self.latency_ns(holder, me)
    }
}
