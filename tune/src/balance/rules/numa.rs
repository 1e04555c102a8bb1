//! Keep threads next to their memory: when most of a process's resident pages are on one
//! node, its busy threads running on another node move to the least loaded allowed CPU of
//! that node, if it has room.

use super::{destinations, move_to, Pressure, Proposal, Rule};
use crate::balance::layout::Layout;
use crate::balance::sample::Snapshot;

/// The NUMA-pages rule.
#[derive(Debug, Clone, Copy)]
pub struct NumaPages {
    /// Share of the process's pages a node must hold to be its home (default 0.6).
    pub home_share: f64,
    /// Least resident memory worth following, in bytes (default 16 MiB).
    pub min_bytes: u64,
    /// Least CPU time per second of a thread worth moving (default 0.1).
    pub min_run: f64,
    /// Most load (over capacity) the destination may have with the thread (default 1.0).
    pub max_load: f64,
}

impl Default for NumaPages {
    fn default() -> Self {
        Self {
            home_share: 0.6,
            min_bytes: 16 << 20,
            min_run: 0.1,
            max_load: 1.0,
        }
    }
}

impl Rule for NumaPages {
    fn name(&self) -> &'static str {
        "numa"
    }

    fn propose(&self, snap: &Snapshot, layout: &Layout) -> Vec<Proposal> {
        let p = Pressure::new(snap, layout);
        let mut out = Vec::new();
        for proc in &snap.procs {
            let total: u64 = proc.node_bytes.values().sum();
            if total < self.min_bytes {
                continue;
            }
            let Some((&home, &bytes)) = proc.node_bytes.iter().max_by_key(|(_, &b)| b) else {
                continue;
            };
            let share = bytes as f64 / total as f64;
            if share < self.home_share {
                continue;
            }
            let home_cpus = layout.node_cpus(home);
            for t in snap
                .threads
                .iter()
                .filter(|t| t.pid == proc.pid && !t.fresh && t.run >= self.min_run)
            {
                let here = layout.place(t.cpu).and_then(|pl| pl.node);
                if here == Some(home) || here.is_none() {
                    continue;
                }
                let best = destinations(t, layout, t.cpu)
                    .into_iter()
                    .filter(|c| home_cpus.contains(c))
                    .map(|c| (c, p.worst_after(layout, c, Some(t.cpu), t.demand())))
                    .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                let Some((dst, load)) = best else {
                    continue;
                };
                if load > self.max_load {
                    continue;
                }
                out.push(Proposal {
                    rule: self.name(),
                    moves: vec![move_to(t, dst)],
                    reason: format!(
                        "numa: {:.0}% of process {}'s {} are on node {home}; the thread runs on node {} (CPU {}); CPU {dst} of node {home} would have load {load:.2}",
                        share * 100.0,
                        proc.pid,
                        topoprobe_model::size_text(total),
                        here.unwrap_or(0),
                        t.cpu
                    ),
                    gain: share * t.run,
                });
            }
        }
        out.sort_by(|a, b| b.gain.total_cmp(&a.gain));
        out
    }
}
