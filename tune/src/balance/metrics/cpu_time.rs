//! CPU time and run-queue wait per thread, from `/proc/<pid>/task/<tid>/schedstat`.

use topoprobe_sys::proc::{self, ProcError};

use super::{Metric, Rates};
use crate::balance::sample::Snapshot;

/// The CPU-time metric.
#[derive(Debug, Default)]
pub struct CpuTime {
    rates: Rates<i32>,
}

impl Metric for CpuTime {
    fn name(&self) -> &'static str {
        "cpu-time"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        let dt = snap.interval_s;
        for t in &mut snap.threads {
            match proc::schedstat(t.pid, Some(t.tid)) {
                Ok(s) => {
                    if let Some(r) = self.rates.rate(&t.tid, &[s.run_ns, s.wait_ns], dt) {
                        t.run = (r[0] / 1e9).min(1.0);
                        t.wait = (r[1] / 1e9).min(1.0);
                    }
                }
                Err(ProcError::Gone { .. }) => {}
                Err(e @ ProcError::Parse { .. }) => {
                    return Err(format!("{e} (the kernel needs schedstat support)"))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let live: Vec<i32> = snap.threads.iter().map(|t| t.tid).collect();
        self.rates.retain(|k| live.contains(k));
        Ok(())
    }
}
