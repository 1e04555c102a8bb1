//! Deciding which proposals are applied: a proposal must hold over several intervals
//! (hysteresis), moves are capped per minute, a moved thread rests for a while, two moves
//! in one interval never touch the same CPUs or threads, and a change after which the
//! moved threads together run less is rolled back (and not tried again for a while).
//! Pure: the moves are made through a [`Mover`], so that scripted streams test it.

use std::collections::{HashMap, HashSet, VecDeque};

use topoprobe_sys::CpuSet;

use super::layout::Layout;
use super::rules::{Move, Proposal, Rule};
use super::sample::Snapshot;

/// How the engine decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineOptions {
    /// Consecutive intervals a proposal must be made before it is applied (default 2).
    pub hold: usize,
    /// Most thread moves in any 60 s (default 6).
    pub max_moves_per_minute: usize,
    /// Seconds a moved thread is left alone (default 5).
    pub cooldown_s: f64,
    /// A change is rolled back when the moved threads then run this much less (default
    /// 0.05: 5%).
    pub worse_by: f64,
    /// Seconds a rolled-back or failed proposal is not tried again (default 60).
    pub ban_s: f64,
    /// Only advise: report decisions, apply none.
    pub advise: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            hold: 2,
            max_moves_per_minute: 6,
            cooldown_s: 5.0,
            worse_by: 0.05,
            ban_s: 60.0,
            advise: false,
        }
    }
}

/// Makes moves.
pub trait Mover {
    /// Gives thread `tid` of `pid` the mask `to`.
    ///
    /// # Errors
    ///
    /// Why not, in words (the thread exited, another user's, a CPU not allowed).
    fn set_mask(&mut self, pid: i32, tid: i32, to: &CpuSet) -> Result<(), String>;
}

pub use topoprobe_model::results::balance::{Kind, Record};

/// A change applied, watched for a rollback.
#[derive(Debug, Clone)]
struct Watch {
    key: String,
    pattern: String,
    rule: &'static str,
    moves: Vec<Move>,
    before: f64,
    after: Vec<f64>,
}

/// The engine's state.
#[derive(Debug, Default)]
pub struct Engine {
    opts: EngineOptions,
    pending: HashMap<String, usize>,
    history: VecDeque<f64>,
    cooldown: HashMap<i32, f64>,
    banned: HashMap<String, f64>,
    watching: Vec<Watch>,
    advised: HashSet<String>,
    runs: HashMap<i32, VecDeque<f64>>,
    capped: HashSet<String>,
    notes: Vec<String>,
    rolled_back: usize,
    interval: usize,
    counts: Counts,
}

/// What the engine saw over a run: how far proposals got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Proposals made by the rules for threads that could move (summed over intervals).
    pub proposed: usize,
    /// Proposals called for in enough consecutive intervals to be applied.
    pub held: usize,
    /// Held proposals not applied because of the cap on moves per minute.
    pub capped: usize,
    /// Moves the operating system refused.
    pub failed: usize,
}

impl Engine {
    /// A new engine.
    #[must_use]
    pub fn new(opts: EngineOptions) -> Self {
        Self {
            opts,
            ..Self::default()
        }
    }

    /// Changes made and then undone so far.
    #[must_use]
    pub const fn rolled_back(&self) -> usize {
        self.rolled_back
    }

    /// How far proposals got so far.
    #[must_use]
    pub const fn counts(&self) -> Counts {
        self.counts
    }

    /// Notes since the last call (moves that failed, the cap reached), to print.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Leaves thread `tid` alone until `until_s` (it changed its own affinity).
    pub fn hands_off(&mut self, tid: i32, until_s: f64) {
        self.cooldown.insert(tid, until_s);
        self.watching
            .retain(|w| !w.moves.iter().any(|m| m.tid == tid));
    }

    /// Mean CPU time per second of `tid` over its last `hold` intervals.
    fn recent_run(&self, tid: i32) -> f64 {
        self.runs
            .get(&tid)
            .filter(|v| !v.is_empty())
            .map_or(0.0, |v| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn records(
        &self,
        p: &[Move],
        time_s: f64,
        reason: &str,
        rule: &str,
        kind: Kind,
    ) -> Vec<Record> {
        p.iter()
            .map(|m| Record {
                time_s,
                interval: self.interval,
                pid: m.pid,
                tid: m.tid,
                from: m.from.to_vec(),
                to: m.to.to_vec(),
                reason: reason.to_string(),
                rule: rule.to_string(),
                kind,
                swap_with: p.iter().find(|o| o.tid != m.tid).map(|o| o.tid),
            })
            .collect()
    }

    /// One interval: judges the changes being watched, asks the rules, applies what held
    /// long enough. Returns the decisions.
    pub fn step(
        &mut self,
        snap: &Snapshot,
        layout: &Layout,
        rules: &[Box<dyn Rule>],
        mover: &mut dyn Mover,
    ) -> Vec<Record> {
        let now = snap.time_s;
        self.interval += 1;
        let hold = self.opts.hold.max(1);
        let live: HashMap<i32, f64> = snap
            .threads
            .iter()
            .filter(|t| !t.fresh)
            .map(|t| (t.tid, t.run))
            .collect();
        self.runs.retain(|t, _| live.contains_key(t));
        for (&tid, &run) in &live {
            let v = self.runs.entry(tid).or_default();
            v.push_back(run);
            while v.len() > hold {
                v.pop_front();
            }
        }
        self.cooldown.retain(|_, &mut until| until > now);
        self.banned.retain(|_, &mut until| until > now);
        while self.history.front().is_some_and(|&t| now - t >= 60.0) {
            self.history.pop_front();
        }
        let mut out = self.judge(now, &live, mover);
        // Proposals of threads that may move now.
        let props: Vec<Proposal> = rules
            .iter()
            .flat_map(|r| r.propose(snap, layout))
            .filter(|p| {
                !self.banned.contains_key(&p.key()) && !self.banned.contains_key(&p.pattern())
            })
            .filter(|p| {
                p.moves.iter().all(|m| {
                    !self.cooldown.contains_key(&m.tid)
                        && !self
                            .watching
                            .iter()
                            .any(|w| w.moves.iter().any(|x| x.tid == m.tid))
                        && !m.to.is_empty()
                        && m.to != m.from
                })
            })
            .collect();
        self.counts.proposed += props.len();
        let keys: HashSet<String> = props.iter().map(Proposal::key).collect();
        self.pending.retain(|k, _| keys.contains(k));
        for k in &keys {
            *self.pending.entry(k.clone()).or_insert(0) += 1;
        }
        let mut touched_cpus: HashSet<u32> = HashSet::new();
        let mut touched_tids: HashSet<i32> = HashSet::new();
        for p in props {
            let key = p.key();
            let pattern = p.pattern();
            if self.pending.get(&key).copied().unwrap_or(0) < hold {
                continue;
            }
            self.counts.held += 1;
            let cpus: Vec<u32> = p
                .moves
                .iter()
                .flat_map(|m| m.from.iter().chain(m.to.iter()))
                .collect();
            if p.moves.iter().any(|m| touched_tids.contains(&m.tid))
                || cpus.iter().any(|c| touched_cpus.contains(c))
            {
                continue;
            }
            if self.opts.advise {
                // The advice stands for the move: the same change with another thread is
                // not advised again.
                if self.advised.insert(pattern.clone()) && self.advised.insert(key) {
                    out.extend(self.records(&p.moves, now, &p.reason, p.rule, Kind::Advice));
                }
                touched_cpus.extend(cpus);
                touched_tids.extend(p.moves.iter().map(|m| m.tid));
                continue;
            }
            if self.history.len() + p.moves.len() > self.opts.max_moves_per_minute {
                self.counts.capped += 1;
                if self.capped.insert(key) {
                    self.notes.push(format!(
                        "not applied yet, {} moves per minute reached: {}",
                        self.opts.max_moves_per_minute, p.reason
                    ));
                }
                continue;
            }
            let mut done: Vec<&Move> = Vec::new();
            let mut failed = None;
            for m in &p.moves {
                match mover.set_mask(m.pid, m.tid, &m.to) {
                    Ok(()) => done.push(m),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                self.counts.failed += 1;
                for m in done {
                    let _ = mover.set_mask(m.pid, m.tid, &m.from);
                }
                self.notes
                    .push(format!("move not made ({e}): {}", p.reason));
                self.banned.insert(key, now + self.opts.ban_s);
                self.banned.insert(pattern, now + self.opts.ban_s);
                continue;
            }
            let before: f64 = p.moves.iter().map(|m| self.recent_run(m.tid)).sum();
            for m in &p.moves {
                self.history.push_back(now);
                self.cooldown.insert(m.tid, now + self.opts.cooldown_s);
            }
            touched_cpus.extend(cpus);
            touched_tids.extend(p.moves.iter().map(|m| m.tid));
            out.extend(self.records(&p.moves, now, &p.reason, p.rule, Kind::Move));
            self.pending.remove(&key);
            self.watching.push(Watch {
                key,
                pattern: p.pattern(),
                rule: p.rule,
                moves: p.moves,
                before,
                after: Vec::new(),
            });
        }
        out
    }

    /// Judges the watched changes: rolls back those after which the moved threads ran
    /// less.
    fn judge(&mut self, now: f64, live: &HashMap<i32, f64>, mover: &mut dyn Mover) -> Vec<Record> {
        let hold = self.opts.hold.max(1);
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for mut w in std::mem::take(&mut self.watching) {
            let runs: Option<Vec<f64>> =
                w.moves.iter().map(|m| live.get(&m.tid).copied()).collect();
            let Some(runs) = runs else {
                continue; // a thread exited: nothing to judge
            };
            w.after.push(runs.iter().sum());
            if w.after.len() < hold {
                keep.push(w);
                continue;
            }
            let after = w.after.iter().sum::<f64>() / w.after.len() as f64;
            if after < w.before * (1.0 - self.opts.worse_by) {
                for m in &w.moves {
                    let _ = mover.set_mask(m.pid, m.tid, &m.from);
                    self.history.push_back(now);
                    self.cooldown.insert(m.tid, now + self.opts.cooldown_s);
                }
                let undo: Vec<Move> = w
                    .moves
                    .iter()
                    .map(|m| Move {
                        pid: m.pid,
                        tid: m.tid,
                        from: m.to.clone(),
                        to: m.from.clone(),
                    })
                    .collect();
                let reason = format!(
                    "rollback: after the move the threads ran {after:.2} s/s, before {:.2} s/s",
                    w.before
                );
                out.extend(self.records(&undo, now, &reason, w.rule, Kind::Rollback));
                self.rolled_back += 1;
                self.banned.insert(w.key, now + self.opts.ban_s);
                self.banned.insert(w.pattern, now + self.opts.ban_s);
            }
        }
        self.watching = keep;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::rules::contention::Contention;
    use crate::balance::rules::interrupts::InterruptCore;
    use crate::balance::rules::numa::NumaPages;
    use crate::balance::sample::{ProcSample, ThreadSample};

    /// Records the masks it is asked to set.
    #[derive(Default)]
    struct Recorder {
        masks: HashMap<i32, CpuSet>,
        calls: usize,
    }

    impl Mover for Recorder {
        fn set_mask(&mut self, _pid: i32, tid: i32, to: &CpuSet) -> Result<(), String> {
            self.calls += 1;
            self.masks.insert(tid, to.clone());
            Ok(())
        }
    }

    fn thread(tid: i32, cpu: u32, run: f64, wait: f64, allowed: &[u32]) -> ThreadSample {
        let mut t = ThreadSample::new(tid, tid, CpuSet::from([cpu]), allowed.into(), cpu);
        t.fresh = false;
        t.run = run;
        t.wait = wait;
        t
    }

    fn snap(time_s: f64, threads: Vec<ThreadSample>, busy: &[(u32, f64)]) -> Snapshot {
        Snapshot {
            time_s,
            interval_s: 0.5,
            threads,
            busy: busy.iter().copied().collect(),
            ..Snapshot::default()
        }
    }

    /// Two busy threads on CPU 0 of two; `moved` says where thread 11 runs after a move,
    /// with the CPU times the scripted stream gives then.
    fn contended(t: f64, rec: &Recorder, after: (f64, f64)) -> Snapshot {
        let cpu11 = rec
            .masks
            .get(&11)
            .and_then(|m| m.iter().next())
            .unwrap_or(0);
        let cpu10 = rec
            .masks
            .get(&10)
            .and_then(|m| m.iter().next())
            .unwrap_or(0);
        if cpu10 == cpu11 {
            snap(
                t,
                vec![
                    thread(10, cpu10, 0.5, 0.5, &[0, 1]),
                    thread(11, cpu11, 0.5, 0.5, &[0, 1]),
                ],
                &[(cpu10, 1.0)],
            )
        } else {
            snap(
                t,
                vec![
                    thread(10, cpu10, after.0, 0.0, &[0, 1]),
                    thread(11, cpu11, after.1, 0.0, &[0, 1]),
                ],
                &[(0, 1.0), (1, 1.0)],
            )
        }
    }

    fn rules() -> Vec<Box<dyn Rule>> {
        vec![Box::new(Contention::default())]
    }

    #[test]
    fn contention_is_resolved_after_holding_and_stays_resolved() {
        let layout = Layout::flat(&[0, 1]);
        let mut e = Engine::new(EngineOptions::default());
        let mut rec = Recorder::default();
        let mut moves = Vec::new();
        for i in 1..=20 {
            let s = contended(f64::from(i) * 0.5, &rec, (1.0, 1.0));
            let r = e.step(&s, &layout, &rules(), &mut rec);
            moves.extend(r.into_iter().map(|x| (i, x)));
        }
        assert_eq!(moves.len(), 1, "one move, no oscillation: {moves:?}");
        let (i, m) = &moves[0];
        assert_eq!(*i, 2, "applied at the second interval that proposes it");
        assert_eq!(
            (m.kind, m.from.clone(), m.to.clone()),
            (Kind::Move, vec![0], vec![1])
        );
        assert_eq!(e.rolled_back(), 0);
    }

    #[test]
    fn advice_reports_the_same_decision_once_and_moves_nothing() {
        let layout = Layout::flat(&[0, 1]);
        let mut e = Engine::new(EngineOptions {
            advise: true,
            ..EngineOptions::default()
        });
        let mut rec = Recorder::default();
        let mut all = Vec::new();
        for i in 1..=10 {
            let s = contended(f64::from(i) * 0.5, &rec, (1.0, 1.0));
            all.extend(e.step(&s, &layout, &rules(), &mut rec));
        }
        assert_eq!(rec.calls, 0);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].kind, Kind::Advice);
        assert_eq!((all[0].from.clone(), all[0].to.clone()), (vec![0], vec![1]));
    }

    #[test]
    fn a_move_that_makes_things_worse_is_rolled_back_and_not_retried() {
        let layout = Layout::flat(&[0, 1]);
        let mut e = Engine::new(EngineOptions {
            cooldown_s: 1.0,
            ..EngineOptions::default()
        });
        let mut rec = Recorder::default();
        let mut all = Vec::new();
        for i in 1..=30 {
            // After the move both threads run less than the 1.0 s/s they had together.
            let s = contended(f64::from(i) * 0.5, &rec, (0.3, 0.3));
            all.extend(e.step(&s, &layout, &rules(), &mut rec));
        }
        let kinds: Vec<Kind> = all.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, vec![Kind::Move, Kind::Rollback], "{all:#?}");
        assert_eq!(e.rolled_back(), 1);
        assert!(
            rec.masks.values().all(|m| m.to_vec() == vec![0]),
            "back on CPU 0"
        );
        assert!(all[1].reason.starts_with("rollback"));
    }

    #[test]
    fn flickering_proposals_never_hold_and_the_cap_limits_moves() {
        let layout = Layout::flat(&[0, 1]);
        let mut e = Engine::new(EngineOptions::default());
        let mut rec = Recorder::default();
        let mut all = Vec::new();
        for i in 1..=20_u32 {
            // Contended on odd intervals only: never two in a row.
            let s = if !i.is_multiple_of(2) {
                contended(f64::from(i) * 0.5, &rec, (1.0, 1.0))
            } else {
                snap(
                    f64::from(i) * 0.5,
                    vec![thread(10, 0, 1.0, 0.0, &[0, 1])],
                    &[(0, 1.0)],
                )
            };
            all.extend(e.step(&s, &layout, &rules(), &mut rec));
        }
        assert!(all.is_empty(), "{all:?}");
        // Many contended threads, a cap of 2 moves per minute.
        let layout = Layout::flat(&[0, 1, 2, 3, 4, 5, 6, 7]);
        let mut e = Engine::new(EngineOptions {
            max_moves_per_minute: 2,
            ..EngineOptions::default()
        });
        let mut rec = Recorder::default();
        let cpus: Vec<u32> = (0..8).collect();
        let mut n = 0;
        for i in 1..=10 {
            let threads = (0..6)
                .map(|k| {
                    let tid = 100 + k;
                    let cpu = rec
                        .masks
                        .get(&tid)
                        .and_then(|m| m.iter().next())
                        .unwrap_or(0);
                    thread(tid, cpu, 0.2, 0.8, &cpus)
                })
                .collect();
            let s = snap(f64::from(i) * 0.5, threads, &[(0, 1.0)]);
            n += e
                .step(&s, &layout, &rules(), &mut rec)
                .iter()
                .filter(|r| r.kind == Kind::Move)
                .count();
        }
        assert_eq!(n, 2);
        assert!(e
            .take_notes()
            .iter()
            .any(|n| n.contains("moves per minute")));
    }

    #[test]
    fn interrupt_heavy_core_swaps_compute_and_communication() {
        let layout = Layout::flat(&[0, 1, 2, 3]);
        let mut e = Engine::new(EngineOptions::default());
        let mut rec = Recorder::default();
        let all_cpus = [0, 1, 2, 3];
        let mut out = Vec::new();
        for i in 1..=3 {
            let compute = thread(20, 0, 0.95, 0.05, &all_cpus);
            let mut comm = thread(21, 2, 0.2, 0.0, &all_cpus);
            comm.voluntary = 800.0;
            let mut s = snap(
                f64::from(i) * 0.5,
                vec![compute, comm],
                &[(0, 1.0), (2, 0.2)],
            );
            s.irq = [(0, 40_000.0), (1, 100.0), (2, 120.0), (3, 90.0)].into();
            out.extend(e.step(
                &s,
                &layout,
                &[Box::new(InterruptCore::default()) as Box<dyn Rule>],
                &mut rec,
            ));
        }
        assert_eq!(out.len(), 2, "{out:#?}");
        assert_eq!((out[0].tid, out[0].to.clone()), (20, vec![2]));
        assert_eq!((out[1].tid, out[1].to.clone()), (21, vec![0]));
        assert_eq!(out[0].swap_with, Some(21));
        assert!(
            out[0].reason.contains("40000 interrupts/s"),
            "{}",
            out[0].reason
        );
        // Without a communication thread, the compute thread moves to the quietest CPU.
        let rule = InterruptCore::default();
        let mut s = snap(1.0, vec![thread(20, 0, 0.95, 0.05, &all_cpus)], &[(0, 1.0)]);
        s.irq = [(0, 40_000.0), (1, 100.0), (2, 120.0), (3, 90.0)].into();
        let p = rule.propose(&s, &layout);
        assert_eq!(p[0].moves[0].to.to_vec(), vec![3]);
        // A quiet machine: nothing.
        s.irq = [(0, 300.0), (1, 100.0), (2, 120.0), (3, 90.0)].into();
        assert!(rule.propose(&s, &layout).is_empty());
    }

    #[test]
    fn threads_follow_their_pages_to_their_node() {
        use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
        // Two sockets with two cores each, node s local to socket s.
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
        let cores: Vec<_> = (0..4).map(|k| b.core(vec![ContextId(k)])).collect();
        let s0 = b.socket(vec![Member::Core(cores[0]), Member::Core(cores[1])]);
        let s1 = b.socket(vec![Member::Core(cores[2]), Member::Core(cores[3])]);
        b.node(Some(0), None, vec![s0]);
        b.node(Some(1), None, vec![s1]);
        let lat = LatencyMatrix::from_fn(4, |a, c| Some(if a / 2 == c / 2 { 40.0 } else { 120.0 }));
        b.latencies(lat.clone(), lat);
        let layout = Layout::from_topology(&b.build().expect("topology"));
        let mut s = snap(
            1.0,
            vec![thread(30, 0, 0.8, 0.0, &[0, 1, 2, 3])],
            &[(0, 0.8)],
        );
        s.procs = vec![ProcSample {
            pid: 30,
            name: "app".into(),
            faults: 0.0,
            node_bytes: [(0, 8 << 20), (1, 200 << 20)].into(),
        }];
        let p = NumaPages::default().propose(&s, &layout);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].moves[0].to.to_vec(), vec![2]);
        assert!(p[0].reason.contains("node 1"), "{}", p[0].reason);
        // Pages spread evenly: no home, no move.
        s.procs[0].node_bytes = [(0, 100 << 20), (1, 100 << 20)].into();
        assert!(NumaPages::default().propose(&s, &layout).is_empty());
        // Already home: no move.
        s.procs[0].node_bytes = [(0, 200 << 20)].into();
        assert!(NumaPages::default().propose(&s, &layout).is_empty());
    }
}
