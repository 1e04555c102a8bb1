//! Spread threads that contend: a thread that waits for its CPU, core or cache group
//! (more work there than it can run) moves to the allowed CPU where the load, with it
//! added, is lowest, when that is clearly lower.

use super::{destinations, move_to, Pressure, Proposal, Rule};
use crate::balance::layout::Layout;
use crate::balance::sample::Snapshot;

/// The contention rule.
#[derive(Debug, Clone, Copy)]
pub struct Contention {
    /// Load over capacity above which a CPU, core or group is contended (default 1.25).
    pub threshold: f64,
    /// How much lower the destination's load must be (default 0.25 CPUs).
    pub margin: f64,
    /// Least run-queue wait of a thread worth moving, in seconds per second (default 0.05).
    pub min_wait: f64,
}

impl Default for Contention {
    fn default() -> Self {
        Self {
            threshold: 1.25,
            margin: 0.25,
            min_wait: 0.05,
        }
    }
}

impl Rule for Contention {
    fn name(&self) -> &'static str {
        "contention"
    }

    fn propose(&self, snap: &Snapshot, layout: &Layout) -> Vec<Proposal> {
        let p = Pressure::new(snap, layout);
        let mut out = Vec::new();
        for t in snap.threads.iter().filter(|t| !t.fresh) {
            if t.wait < self.min_wait || t.demand() < 0.2 {
                continue;
            }
            let src = t.cpu;
            let here = p.worst(layout, src);
            if here <= self.threshold {
                continue;
            }
            let best = destinations(t, layout, src)
                .into_iter()
                .map(|c| (c, p.worst_after(layout, c, Some(src), t.demand())))
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let Some((dst, there)) = best else {
                continue;
            };
            if there + self.margin >= here {
                continue;
            }
            out.push(Proposal {
                rule: self.name(),
                moves: vec![move_to(t, dst)],
                reason: format!(
                    "contention: CPU {src} has {:.2} CPUs of work (load {here:.2} of its CPU, core or group); the thread waits {:.2} s/s; CPU {dst} would have {there:.2}",
                    p.cpu(src),
                    t.wait
                ),
                gain: here - there,
            });
        }
        out.sort_by(|a, b| {
            b.gain
                .total_cmp(&a.gain)
                .then(a.moves[0].tid.cmp(&b.moves[0].tid))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::sample::ThreadSample;
    use topoprobe_sys::CpuSet;

    fn busy(pid: i32, cpu: u32, run: f64, wait: f64) -> ThreadSample {
        let mut t = ThreadSample::new(pid, pid, CpuSet::from([cpu]), [0, 1, 2, 3].into(), cpu);
        t.fresh = false;
        t.run = run;
        t.wait = wait;
        t
    }

    #[test]
    fn two_threads_on_one_cpu_are_spread_and_then_left_alone() {
        let layout = Layout::flat(&[0, 1]);
        let mut snap = Snapshot {
            interval_s: 0.5,
            threads: vec![busy(10, 0, 0.5, 0.5), busy(11, 0, 0.5, 0.5)],
            ..Snapshot::default()
        };
        for t in &mut snap.threads {
            t.allowed = [0, 1].into();
        }
        snap.busy = [(0, 1.0), (1, 0.0)].into();
        let props = Contention::default().propose(&snap, &layout);
        assert_eq!(props.len(), 2, "either thread may go");
        assert_eq!(props[0].moves[0].tid, 10);
        assert_eq!(props[0].moves[0].to.to_vec(), vec![1]);
        assert!(
            props[0].reason.contains("CPU 0 has 2.00 CPUs of work"),
            "{}",
            props[0].reason
        );
        // After the move each has its CPU: nothing more to do.
        snap.threads = vec![busy(10, 1, 1.0, 0.0), busy(11, 0, 1.0, 0.0)];
        for t in &mut snap.threads {
            t.allowed = [0, 1].into();
        }
        snap.busy = [(0, 1.0), (1, 1.0)].into();
        assert!(Contention::default().propose(&snap, &layout).is_empty());
    }

    #[test]
    fn smt_siblings_count_as_one_core() {
        // Two cores with two contexts each: 0/2 and 1/3 are siblings.
        use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0), ContextId(2)]);
        let c1 = b.core(vec![ContextId(1), ContextId(3)]);
        b.socket(vec![Member::Core(c0), Member::Core(c1)]);
        let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.0 } else { 40.0 }));
        b.latencies(lat.clone(), lat);
        let layout = Layout::from_topology(&b.build().expect("topology"));
        let mut snap = Snapshot {
            interval_s: 0.5,
            threads: vec![busy(10, 0, 0.9, 0.1), busy(11, 2, 0.9, 0.1)],
            ..Snapshot::default()
        };
        snap.busy = [(0, 1.0), (2, 1.0)].into();
        let props = Contention::default().propose(&snap, &layout);
        let to = props[0].moves[0].to.to_vec()[0];
        assert!(to == 1 || to == 3, "to the idle core, got {to}");
    }
}
