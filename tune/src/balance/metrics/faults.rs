//! Page faults per process per second (`stat`: minor and major).

use topoprobe_sys::proc::{self, ProcError};

use super::{Metric, Rates};
use crate::balance::sample::Snapshot;

/// The page-fault metric.
#[derive(Debug, Default)]
pub struct Faults {
    rates: Rates<i32>,
}

impl Metric for Faults {
    fn name(&self) -> &'static str {
        "faults"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        for p in &mut snap.procs {
            match proc::task_stat(p.pid, None) {
                Ok(s) => {
                    let now = [s.minor_faults.saturating_add(s.major_faults)];
                    if let Some(r) = self.rates.rate(&p.pid, &now, snap.interval_s) {
                        p.faults = r[0];
                    }
                }
                Err(ProcError::Gone { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }
}
