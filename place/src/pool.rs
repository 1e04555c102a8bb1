//! A pool of placements whose current policy changes at run time (paper §6): threads
//! re-pin at their next pin point, for example at the start of an OpenMP parallel region.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use topoprobe_model::Topology;

use crate::error::PlaceError;
use crate::placement::Placement;
use crate::plan::Request;
use crate::policy::Policy;
use topoprobe_model::results::placement::ThreadInfo;

/// Several placements, one current.
#[derive(Debug)]
pub struct Pool {
    topo: Topology,
    template: Request,
    placements: Mutex<Vec<Arc<Placement>>>,
    current: AtomicUsize,
}

impl Pool {
    /// A pool whose placements share `template`'s thread count, socket count and filters;
    /// its first current policy is `template.policy`.
    ///
    /// # Errors
    ///
    /// Those of [`Placement::new`] for the first policy.
    pub fn new(topo: Topology, template: Request) -> Result<Self, PlaceError> {
        let first = Arc::new(Placement::new(&topo, &template)?);
        Ok(Self {
            topo,
            template,
            placements: Mutex::new(vec![first]),
            current: AtomicUsize::new(0),
        })
    }

    /// Makes `policy` current (its placement is made on first use and kept). Threads move
    /// at their next [`Pool::pin`].
    ///
    /// # Errors
    ///
    /// Those of [`Placement::new`]; the current policy is unchanged then.
    pub fn set_policy(&self, policy: Policy) -> Result<(), PlaceError> {
        let mut all = self
            .placements
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let i = match all.iter().position(|p| p.plan().policy == policy) {
            Some(i) => i,
            None => {
                let req = Request {
                    policy,
                    ..self.template.clone()
                };
                all.push(Arc::new(Placement::new(&self.topo, &req)?));
                all.len() - 1
            }
        };
        self.current.store(i, Ordering::Release);
        Ok(())
    }

    /// The current placement.
    #[must_use]
    pub fn current(&self) -> Arc<Placement> {
        let all = self
            .placements
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let i = self.current.load(Ordering::Acquire).min(all.len() - 1);
        Arc::clone(&all[i])
    }

    /// The current policy.
    #[must_use]
    pub fn policy(&self) -> Policy {
        self.current().plan().policy
    }

    /// A pin point: the calling thread leaves the slot it holds in another placement of the
    /// pool and pins by the current one (keeping its slot when it already has one there).
    ///
    /// # Errors
    ///
    /// Those of [`Placement::pin`].
    pub fn pin(&self) -> Result<Option<ThreadInfo>, PlaceError> {
        let cur = self.current();
        self.leave_others(&cur);
        cur.pin()
    }

    /// A pin point that gives the calling thread slot `slot` of the current placement
    /// (thread `i` of a team on the `i`-th context: [`Placement::pin_slot`]), leaving the
    /// slot it holds in another placement of the pool.
    ///
    /// # Errors
    ///
    /// Those of [`Placement::pin_slot`].
    pub fn pin_slot(&self, slot: usize) -> Result<Option<ThreadInfo>, PlaceError> {
        let cur = self.current();
        self.leave_others(&cur);
        cur.pin_slot(slot)
    }

    /// Gives back the slots the calling thread holds in placements other than `cur`.
    fn leave_others(&self, cur: &Arc<Placement>) {
        let others: Vec<Arc<Placement>> = self
            .placements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for p in &others {
            if !Arc::ptr_eq(p, cur) {
                p.leave();
            }
        }
    }

    /// Unpins the calling thread from whichever placement of the pool holds it.
    ///
    /// # Errors
    ///
    /// Those of [`Placement::unpin`].
    pub fn unpin(&self) -> Result<bool, PlaceError> {
        let all: Vec<Arc<Placement>> = self
            .placements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut any = false;
        for p in &all {
            any |= p.unpin()?;
        }
        Ok(any)
    }

    /// The topology.
    #[must_use]
    pub const fn topology(&self) -> &Topology {
        &self.topo
    }
}
