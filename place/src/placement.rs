//! The placement object: threads take the next free context of a plan, in order.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use topoprobe_model::results::placement::{PlacementResult, ThreadInfo};
use topoprobe_model::Topology;
use topoprobe_sys::{affinity, CpuSet};

use crate::error::PlaceError;
use crate::plan::{plan, Plan, Request};
use crate::result::describe;
use crate::summary::Summary;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The state of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// No thread holds it.
    Free,
    /// A thread holds it.
    Taken,
    /// The kernel refused its CPU: it is skipped from then on.
    Unusable,
}

/// The slots of a placement, shared with the threads that hold them.
type Slots = Arc<Mutex<Vec<Slot>>>;

/// The slots of a placement, as a thread that holds one sees them.
type WeakSlots = Weak<Mutex<Vec<Slot>>>;

/// The slots a thread holds: given back when the thread exits, pinned or not.
struct Held(Vec<(u64, usize, WeakSlots)>);

impl Drop for Held {
    fn drop(&mut self) {
        for (_, slot, slots) in self.0.drain(..) {
            if let Some(slots) = slots.upgrade() {
                let mut s = slots.lock().unwrap_or_else(PoisonError::into_inner);
                if s[slot] == Slot::Taken {
                    s[slot] = Slot::Free;
                }
            }
        }
    }
}

thread_local! {
    /// `(placement id, slot, slots)` of every placement that pinned this thread.
    static PINNED: RefCell<Held> = const { RefCell::new(Held(Vec::new())) };
}

/// A placement: a plan, the state of its slots, and per-thread information.
///
/// [`Placement::pin`] pins the calling thread to the next free context (in the policy's
/// order) and [`Placement::unpin`] gives it back. It is `Sync`: threads share it.
#[derive(Debug)]
pub struct Placement {
    id: u64,
    plan: Plan,
    infos: Vec<ThreadInfo>,
    summary: Summary,
    result: PlacementResult,
    taken: Slots,
    restore: CpuSet,
}

impl Placement {
    /// Plans `req` over `topo`.
    ///
    /// # Errors
    ///
    /// See [`plan`](crate::plan::plan), and [`PlaceError::Affinity`] when this thread's
    /// affinity (restored by [`Placement::unpin`]) cannot be read.
    pub fn new(topo: &Topology, req: &Request) -> Result<Self, PlaceError> {
        Self::from_plan(topo, plan(topo, req)?)
    }

    /// A placement of an existing plan.
    ///
    /// # Errors
    ///
    /// [`PlaceError::Affinity`] when this thread's affinity cannot be read.
    pub fn from_plan(topo: &Topology, plan: Plan) -> Result<Self, PlaceError> {
        let restore = affinity::allowed_cpus()?;
        Ok(Self::with_restore(topo, plan, restore))
    }

    /// A placement that restores `restore` on unpin (pure: does not read the affinity).
    #[must_use]
    pub fn with_restore(topo: &Topology, plan: Plan, restore: impl Into<CpuSet>) -> Self {
        let restore = restore.into();
        let result = describe(topo, &plan);
        let infos = result.slots.clone();
        let summary = Summary::from_data(result.summary.clone());
        let slots = infos.len();
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            plan,
            infos,
            summary,
            result,
            taken: Arc::new(Mutex::new(vec![Slot::Free; slots])),
            restore,
        }
    }

    /// The plan.
    #[must_use]
    pub const fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The summary (paper Figure 7).
    #[must_use]
    pub const fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Information on every slot, in placement order (empty for an unpinned policy).
    #[must_use]
    pub fn threads(&self) -> &[ThreadInfo] {
        &self.infos
    }

    /// The slot this thread holds in this placement.
    #[must_use]
    pub fn current(&self) -> Option<ThreadInfo> {
        self.held().map(|s| self.infos[s])
    }

    /// Pins the calling thread to the next free context and returns its information;
    /// `Ok(None)` when every context is taken or the policy does not pin. A thread that
    /// already holds a slot keeps it. A slot is given back when its thread exits, even
    /// without [`Placement::unpin`].
    ///
    /// # Errors
    ///
    /// [`PlaceError::Affinity`] when the kernel refuses the CPU of the next slot (a CPU
    /// taken offline or outside this process's cpuset): that slot is skipped from then on,
    /// so the error is reported once and the next call moves on to the following slot.
    pub fn pin(&self) -> Result<Option<ThreadInfo>, PlaceError> {
        if let Some(info) = self.current() {
            return Ok(Some(info));
        }
        let slot = {
            let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(slot) = taken.iter().position(|t| *t == Slot::Free) else {
                return Ok(None);
            };
            taken[slot] = Slot::Taken;
            slot
        };
        if let Err(e) = affinity::pin_current_thread(self.infos[slot].context) {
            self.set(slot, Slot::Unusable);
            return Err(e.into());
        }
        let id = self.id;
        let slots = Arc::downgrade(&self.taken);
        PINNED.with(|p| p.borrow_mut().0.push((id, slot, slots)));
        Ok(Some(self.infos[slot]))
    }

    /// Pins the calling thread to slot `slot` (the `slot`-th context in the policy's
    /// order) and returns its information: the way to give thread `i` of a team (OpenMP's
    /// `omp_get_thread_num()`) the `i`-th context whatever order the threads arrive in,
    /// which [`Placement::pin`] cannot. A thread that holds another slot of this placement
    /// gives it back; one that holds this slot keeps it. `Ok(None)` when there is no such
    /// slot, another thread holds it, its CPU was refused before, or the policy does not
    /// pin.
    ///
    /// # Errors
    ///
    /// [`PlaceError::Affinity`] when the kernel refuses the slot's CPU (the slot is
    /// unusable from then on, as with [`Placement::pin`]).
    pub fn pin_slot(&self, slot: usize) -> Result<Option<ThreadInfo>, PlaceError> {
        if self.held() == Some(slot) {
            return Ok(Some(self.infos[slot]));
        }
        {
            let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
            match taken.get_mut(slot) {
                Some(s) if *s == Slot::Free => *s = Slot::Taken,
                _ => return Ok(None),
            }
        }
        self.leave();
        if let Err(e) = affinity::pin_current_thread(self.infos[slot].context) {
            self.set(slot, Slot::Unusable);
            return Err(e.into());
        }
        let id = self.id;
        let slots = Arc::downgrade(&self.taken);
        PINNED.with(|p| p.borrow_mut().0.push((id, slot, slots)));
        Ok(Some(self.infos[slot]))
    }

    /// The slot the calling thread holds in this placement.
    fn held(&self) -> Option<usize> {
        let id = self.id;
        PINNED.with(|p| {
            p.borrow()
                .0
                .iter()
                .find(|(pid, _, _)| *pid == id)
                .map(|&(_, s, _)| s)
        })
    }

    fn set(&self, slot: usize, state: Slot) {
        let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        taken[slot] = state;
    }

    /// The slots skipped because the kernel refused their CPU, in placement order.
    #[must_use]
    pub fn unusable(&self) -> Vec<ThreadInfo> {
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        taken
            .iter()
            .zip(&self.infos)
            .filter(|(t, _)| **t == Slot::Unusable)
            .map(|(_, i)| *i)
            .collect()
    }

    /// Gives this thread's slot back without touching its affinity; whether it held one.
    pub(crate) fn leave(&self) -> bool {
        let id = self.id;
        let slot = PINNED.with(|p| {
            let mut p = p.borrow_mut();
            let i = p.0.iter().position(|(pid, _, _)| *pid == id)?;
            Some(p.0.swap_remove(i).1)
        });
        slot.inspect(|&s| self.set(s, Slot::Free)).is_some()
    }

    /// Gives this thread's context back and lets it run on the CPUs it was allowed when
    /// the placement was made; whether it held a slot.
    ///
    /// # Errors
    ///
    /// [`PlaceError::Affinity`] when the kernel refuses the old CPU set.
    pub fn unpin(&self) -> Result<bool, PlaceError> {
        if !self.leave() {
            return Ok(false);
        }
        affinity::set_current_thread_affinity(&self.restore)?;
        Ok(true)
    }

    /// Number of free slots.
    #[must_use]
    pub fn free(&self) -> usize {
        self.taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|t| **t == Slot::Free)
            .count()
    }

    /// The placement as data: its CPUs, every slot, the summary and the OpenMP
    /// environment (what `topoprobe place --json` writes).
    #[must_use]
    pub const fn result(&self) -> &PlacementResult {
        &self.result
    }

    /// [`Placement::result`] as a JSON value.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.result).unwrap_or(serde_json::Value::Null)
    }
}
