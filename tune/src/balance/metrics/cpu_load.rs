//! Busy time of every CPU (`/proc/stat`), all processes included: how much of a CPU the
//! monitored threads would have to share with others.

use topoprobe_sys::proc::cpu_stat::cpu_times;

use super::{Metric, Rates};
use crate::balance::sample::Snapshot;

/// The CPU-load metric.
#[derive(Debug, Default)]
pub struct CpuLoad {
    rates: Rates<u32>,
}

impl Metric for CpuLoad {
    fn name(&self) -> &'static str {
        "cpu-load"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        for c in cpu_times().map_err(|e| e.to_string())? {
            if let Some(r) = self.rates.rate(&c.cpu, &[c.busy, c.idle], 1.0) {
                let total = r[0] + r[1];
                if total > 0.0 {
                    snap.busy.insert(c.cpu, r[0] / total);
                }
            }
        }
        Ok(())
    }
}
