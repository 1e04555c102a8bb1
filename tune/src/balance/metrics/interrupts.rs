//! Interrupts and softirqs handled by every CPU per second (`/proc/interrupts`,
//! `/proc/softirqs`): which cores are slowed by interrupt and protocol processing.

use topoprobe_sys::proc::interrupts::{interrupts, softirqs};

use super::{Metric, Rates};
use crate::balance::sample::Snapshot;

/// The interrupt metric.
#[derive(Debug, Default)]
pub struct Interrupts {
    rates: Rates<u32>,
}

impl Metric for Interrupts {
    fn name(&self) -> &'static str {
        "interrupts"
    }

    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String> {
        let hard = interrupts().map_err(|e| e.to_string())?;
        let soft = softirqs().ok();
        let mut totals = hard.per_cpu();
        if let Some(s) = soft {
            for (cpu, n) in s.per_cpu() {
                if let Some(t) = totals.iter_mut().find(|(c, _)| *c == cpu) {
                    t.1 = t.1.saturating_add(n);
                }
            }
        }
        for (cpu, n) in totals {
            if let Some(r) = self.rates.rate(&cpu, &[n], snap.interval_s) {
                snap.irq.insert(cpu, r[0]);
            }
        }
        Ok(())
    }
}
