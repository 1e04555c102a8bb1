//! SyMMer's interrupt rule: a CPU that handles far more interrupts and softirqs than the
//! others has less to give. A compute-bound thread there moves away — swapped with a
//! communication thread (one that mostly blocks, as a process waiting for messages does)
//! when there is one, since protocol processing costs it little and its data arrive in
//! that CPU's cache; otherwise to the allowed CPU with the fewest interrupts. A
//! communication thread elsewhere moves onto a quiet interrupt CPU.

use super::{destinations, move_to, Pressure, Proposal, Rule};
use crate::balance::layout::Layout;
use crate::balance::sample::{Snapshot, ThreadSample};

/// The interrupt-core rule.
#[derive(Debug, Clone, Copy)]
pub struct InterruptCore {
    /// How many times the median rate an interrupt-heavy CPU handles (default 4).
    pub factor: f64,
    /// Least interrupts per second of an interrupt-heavy CPU (default 2000).
    pub min_rate: f64,
    /// Least CPU time per second of a compute-bound thread (default 0.7).
    pub compute_run: f64,
    /// Most CPU time per second of a communication thread (default 0.5) ...
    pub comm_run: f64,
    /// ... and its least voluntary switches per second (default 50).
    pub comm_switches: f64,
}

impl Default for InterruptCore {
    fn default() -> Self {
        Self {
            factor: 4.0,
            min_rate: 2000.0,
            compute_run: 0.7,
            comm_run: 0.5,
            comm_switches: 50.0,
        }
    }
}

impl InterruptCore {
    fn compute(&self, t: &ThreadSample) -> bool {
        t.run >= self.compute_run
    }

    fn communication(&self, t: &ThreadSample) -> bool {
        t.run < self.comm_run && t.voluntary >= self.comm_switches
    }
}

/// Whether a thread is pinned to exactly `cpu`.
fn pinned_to(t: &ThreadSample, cpu: u32) -> bool {
    t.mask.len() == 1 && t.mask.contains(cpu)
}

impl Rule for InterruptCore {
    fn name(&self) -> &'static str {
        "interrupts"
    }

    fn propose(&self, snap: &Snapshot, layout: &Layout) -> Vec<Proposal> {
        let mut rates: Vec<f64> = layout
            .cpus()
            .iter()
            .map(|c| snap.irq.get(c).copied().unwrap_or(0.0))
            .collect();
        if rates.is_empty() {
            return Vec::new();
        }
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        let p = Pressure::new(snap, layout);
        let mut out = Vec::new();
        let live = snap.threads.iter().filter(|t| !t.fresh);
        for (&heavy, &rate) in &snap.irq {
            if rate < self.min_rate || rate < self.factor * median.max(1.0) {
                continue;
            }
            let on_heavy: Vec<&ThreadSample> = live.clone().filter(|t| t.cpu == heavy).collect();
            let comm_elsewhere: Vec<&ThreadSample> = live
                .clone()
                .filter(|t| t.cpu != heavy && self.communication(t) && t.allowed.contains(heavy))
                .collect();
            let sufferer = on_heavy
                .iter()
                .filter(|t| self.compute(t))
                .max_by(|a, b| a.run.total_cmp(&b.run).then(b.tid.cmp(&a.tid)));
            let quietest = |t: &ThreadSample| {
                destinations(t, layout, heavy)
                    .into_iter()
                    .map(|c| (c, snap.irq.get(&c).copied().unwrap_or(0.0)))
                    .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            };
            match (sufferer, comm_elsewhere.first()) {
                (Some(c), Some(m)) if c.allowed.contains(m.cpu) => out.push(Proposal {
                    rule: self.name(),
                    moves: vec![move_to(c, m.cpu), move_to(m, heavy)],
                    reason: format!(
                        "interrupts: CPU {heavy} handles {rate:.0} interrupts/s ({:.1}x the median); swap compute thread {} (runs {:.2} s/s) with communication thread {} on CPU {} ({:.0} blocking switches/s, runs {:.2} s/s)",
                        rate / median.max(1.0),
                        c.tid,
                        c.run,
                        m.tid,
                        m.cpu,
                        m.voluntary,
                        m.run
                    ),
                    gain: c.run - m.run,
                }),
                (Some(c), _) => {
                    if let Some((dst, dst_rate)) = quietest(c) {
                        let load = p.worst_after(layout, dst, Some(heavy), c.demand());
                        if dst_rate * self.factor <= rate && load <= 1.0 {
                            out.push(Proposal {
                                rule: self.name(),
                                moves: vec![move_to(c, dst)],
                                reason: format!(
                                    "interrupts: CPU {heavy} handles {rate:.0} interrupts/s; compute thread {} (runs {:.2} s/s) moves to CPU {dst} ({dst_rate:.0}/s, load {load:.2})",
                                    c.tid, c.run
                                ),
                                gain: c.run * (1.0 - dst_rate / rate),
                            });
                        }
                    }
                }
                (None, Some(m)) => {
                    let busy_there = on_heavy.iter().any(|t| self.compute(t));
                    if !busy_there && !pinned_to(m, heavy) {
                        out.push(Proposal {
                            rule: self.name(),
                            moves: vec![move_to(m, heavy)],
                            reason: format!(
                                "interrupts: communication thread {} ({:.0} blocking switches/s) moves onto CPU {heavy}, which handles its {rate:.0} interrupts/s",
                                m.tid, m.voluntary
                            ),
                            gain: 0.1,
                        });
                    }
                }
                (None, None) => {}
            }
        }
        out.sort_by(|a, b| b.gain.total_cmp(&a.gain));
        out
    }
}
