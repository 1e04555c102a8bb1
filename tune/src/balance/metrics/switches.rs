//! Context switches (voluntary: the thread blocked; involuntary: it was preempted) from
//! `status`, and migrations between CPUs from `sched` where the kernel has it.

use topoprobe_sys::proc::{self, ProcError};

use super::{Metric, Rates};
use crate::balance::sample::Snapshot;

/// The context-switch and migration metric.
#[derive(Debug, Default)]
pub struct Switches {
    rates: Rates<i32>,
    migrations: Rates<i32>,
}

impl Metric for Switches {
    fn name(&self) -> &'static str {
        "switches"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        let dt = snap.interval_s;
        for t in &mut snap.threads {
            match proc::task_status(t.pid, Some(t.tid)) {
                Ok(s) => {
                    let now = [s.voluntary_switches, s.involuntary_switches];
                    if let Some(r) = self.rates.rate(&t.tid, &now, dt) {
                        t.voluntary = r[0];
                        t.involuntary = r[1];
                    }
                }
                Err(ProcError::Gone { .. }) => continue,
                Err(e) => return Err(e.to_string()),
            }
            if let Ok(Some(m)) = proc::sched::migrations(t.pid, t.tid) {
                if let Some(r) = self.migrations.rate(&t.tid, &[m], dt) {
                    t.migrations = r[0];
                }
            }
        }
        let live: Vec<i32> = snap.threads.iter().map(|t| t.tid).collect();
        self.rates.retain(|k| live.contains(k));
        self.migrations.retain(|k| live.contains(k));
        Ok(())
    }
}
