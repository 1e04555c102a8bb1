//! Resident memory of every monitored process per memory node (`numa_maps`): where a
//! process's pages are, so that its threads can run next to them. Reading `numa_maps`
//! walks the process's page tables, and pages move slowly: it is read every
//! [`Numa::EVERY`]-th interval, the last values standing in between.

use topoprobe_sys::proc::numa_maps::node_memory;
use topoprobe_sys::proc::ProcError;

use super::Metric;
use crate::balance::sample::Snapshot;

/// The NUMA-pages metric.
#[derive(Debug, Default)]
pub struct Numa {
    calls: u64,
    last: std::collections::HashMap<i32, topoprobe_sys::proc::numa_maps::NodeMemory>,
}

impl Numa {
    /// Intervals between two reads of a process's `numa_maps`.
    pub const EVERY: u64 = 8;
}

impl Metric for Numa {
    fn name(&self) -> &'static str {
        "numa-pages"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        let read_now = self.calls.is_multiple_of(Self::EVERY);
        self.calls += 1;
        for p in &mut snap.procs {
            if read_now || !self.last.contains_key(&p.pid) {
                match node_memory(p.pid) {
                    Ok(m) => {
                        self.last.insert(p.pid, m);
                    }
                    Err(ProcError::Gone { .. }) => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
            if let Some(m) = self.last.get(&p.pid) {
                p.node_bytes = m.clone();
            }
        }
        let live: Vec<i32> = snap.procs.iter().map(|p| p.pid).collect();
        self.last.retain(|k, _| live.contains(k));
        Ok(())
    }
}
