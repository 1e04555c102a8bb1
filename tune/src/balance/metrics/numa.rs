//! Resident memory of every monitored process per memory node (`numa_maps`): where a
//! process's pages are, so that its threads can run next to them.

use topoprobe_sys::proc::numa_maps::node_memory;
use topoprobe_sys::proc::ProcError;

use super::Metric;
use crate::balance::sample::Snapshot;

/// The NUMA-pages metric.
#[derive(Debug, Default)]
pub struct Numa;

impl Metric for Numa {
    fn name(&self) -> &'static str {
        "numa-pages"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        for p in &mut snap.procs {
            match node_memory(p.pid) {
                Ok(m) => p.node_bytes = m,
                Err(ProcError::Gone { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }
}
