//! The balancer's metrics: each reads one kind of counter for the monitored threads,
//! processes or CPUs and fills its part of the [`Snapshot`] as rates over the interval.
//! A metric that cannot work on this machine says why once and is left out.
//!
//! - [`cpu_time`]: CPU time and run-queue wait per thread (schedstat).
//! - [`switches`]: voluntary and involuntary context switches and migrations per thread.
//! - [`interrupts`]: interrupts and softirqs per CPU.
//! - [`cpu_load`]: busy time per CPU, all processes included.
//! - [`numa`]: resident memory per node per process (`numa_maps`).
//! - [`faults`]: page faults per process.
//! - [`counters`]: LLC misses and instructions per thread (hardware counters).

pub mod counters;
pub mod cpu_load;
pub mod cpu_time;
pub mod faults;
pub mod interrupts;
pub mod numa;
pub mod switches;

use std::collections::HashMap;

use super::sample::Snapshot;

/// A source of the balancer's measurements.
pub trait Metric {
    /// Its name (`cpu-time`, `interrupts`, …).
    fn name(&self) -> &'static str;

    /// Fills this metric's fields of `snap`, whose threads and processes the monitor has
    /// listed, from the counters read now and those kept from the previous interval.
    ///
    /// # Errors
    ///
    /// Why the metric cannot work (it is then left out, said once); a thread or process
    /// that exited meanwhile is not an error.
    fn collect(&mut self, snap: &mut Snapshot) -> Result<(), String>;
}

/// The metrics the balancer uses by default: all of them (those this machine lacks say
/// so when first collected).
#[must_use]
pub fn all() -> Vec<Box<dyn Metric>> {
    vec![
        Box::new(cpu_time::CpuTime::default()),
        Box::new(switches::Switches::default()),
        Box::new(interrupts::Interrupts::default()),
        Box::new(cpu_load::CpuLoad::default()),
        Box::new(numa::Numa::default()),
        Box::new(faults::Faults::default()),
        Box::new(counters::Counters::default()),
    ]
}

/// Per-key cumulative counters turned into rates: `rate(key, now)` is the increase per
/// second since the previous call for that key (`None` the first time).
#[derive(Debug, Default)]
pub(crate) struct Rates<K> {
    last: HashMap<K, Vec<u64>>,
}

impl<K: std::hash::Hash + Eq + Clone> Rates<K> {
    /// Records `now` for `key`; returns the rates per second over `dt` of each value.
    pub(crate) fn rate(&mut self, key: &K, now: &[u64], dt: f64) -> Option<Vec<f64>> {
        let prev = self.last.insert(key.clone(), now.to_vec());
        let prev = prev?;
        if dt <= 0.0 || prev.len() != now.len() {
            return None;
        }
        Some(
            now.iter()
                .zip(&prev)
                .map(|(&n, &p)| n.saturating_sub(p) as f64 / dt)
                .collect(),
        )
    }

    /// Forgets keys not in `keep`.
    pub(crate) fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        self.last.retain(|k, _| keep(k));
    }
}
