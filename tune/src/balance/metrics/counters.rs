//! Last-level cache misses and instructions per thread from hardware counters, where the
//! machine has them (`unavailable: <reason>` otherwise).

use std::collections::HashMap;

use super::Metric;
use crate::balance::sample::Snapshot;
use crate::perf::{available, Event, ThreadCounters};

/// The hardware-counter metric.
#[derive(Debug, Default)]
pub struct Counters {
    state: Option<(ThreadCounters, ThreadCounters)>,
    last: HashMap<i32, (u64, u64)>,
}

impl Metric for Counters {
    fn name(&self) -> &'static str {
        "counters"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        if self.state.is_none() {
            available(Event::CacheMisses)?;
            available(Event::Instructions)?;
            self.state = Some((
                ThreadCounters::new(Event::CacheMisses),
                ThreadCounters::new(Event::Instructions),
            ));
        }
        let Some((misses, instr)) = self.state.as_mut() else {
            return Ok(());
        };
        let tids: Vec<i32> = snap.threads.iter().map(|t| t.tid).collect();
        let m_all = misses.per_thread(&tids)?;
        let i_all = instr.per_thread(&tids)?;
        self.last.retain(|k, _| tids.contains(k));
        for t in &mut snap.threads {
            let (Some(&m), Some(&i)) = (m_all.get(&t.tid), i_all.get(&t.tid)) else {
                continue;
            };
            if let Some((pm, pi)) = self.last.insert(t.tid, (m, i)) {
                let dt = snap.interval_s.max(1e-9);
                t.llc_misses = Some(m.saturating_sub(pm) as f64 / dt);
                t.instructions = Some(i.saturating_sub(pi) as f64 / dt);
            }
        }
        Ok(())
    }
}
