//! The balancer's rules: each looks at one interval's [`Snapshot`] and proposes moves
//! with a reason. The engine ([`super::engine`]) decides which proposals are applied.
//!
//! - [`contention`]: spread threads that contend for one CPU, core or cache group.
//! - [`numa`]: run a process's threads on the node that holds its pages.
//! - [`interrupts`]: keep compute-bound threads off an interrupt-heavy CPU and put the
//!   communication thread on it (SyMMer's swap).

pub mod contention;
pub mod interrupts;
pub mod numa;

use std::collections::HashMap;

use serde::Serialize;
use topoprobe_sys::CpuSet;

use super::layout::Layout;
use super::sample::{Snapshot, ThreadSample};

/// One thread's new mask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its mask before.
    #[serde(serialize_with = "cpus")]
    pub from: CpuSet,
    /// Its mask after.
    #[serde(serialize_with = "cpus")]
    pub to: CpuSet,
}

/// Serializes a CPU set as a list of numbers.
fn cpus<S: serde::Serializer>(set: &CpuSet, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(set.iter())
}

/// A change a rule proposes: one move, or two that swap threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    /// The rule.
    pub rule: &'static str,
    /// The moves.
    pub moves: Vec<Move>,
    /// Why, with the metric values behind it.
    pub reason: String,
    /// How much better the rule expects it to be (its own units; larger is better).
    pub gain: f64,
}

impl Proposal {
    /// What identifies the proposal across intervals: the rule and every thread's target.
    #[must_use]
    pub fn key(&self) -> String {
        let mut parts: Vec<String> = self
            .moves
            .iter()
            .map(|m| format!("{}>{}", m.tid, m.to))
            .collect();
        parts.sort();
        format!("{}:{}", self.rule, parts.join(","))
    }

    /// The same change whatever the threads: the rule and every move's CPUs before and
    /// after (a rolled-back change is not retried with another thread).
    #[must_use]
    pub fn pattern(&self) -> String {
        let mut parts: Vec<String> = self
            .moves
            .iter()
            .map(|m| format!("{}>{}", m.from, m.to))
            .collect();
        parts.sort();
        format!("{}:{}", self.rule, parts.join(","))
    }
}

/// A rule of the balancer.
pub trait Rule {
    /// Its name.
    fn name(&self) -> &'static str;

    /// The moves it proposes for this interval, best first.
    fn propose(&self, snap: &Snapshot, layout: &Layout) -> Vec<Proposal>;
}

/// The default rules: contention, NUMA pages, interrupts.
#[must_use]
pub fn all() -> Vec<Box<dyn Rule>> {
    vec![
        Box::new(contention::Contention::default()),
        Box::new(numa::NumaPages::default()),
        Box::new(interrupts::InterruptCore::default()),
    ]
}

/// Capacity of a core with `contexts` SMT contexts, in CPUs of work: a second context
/// adds about a quarter of a core.
fn core_capacity(contexts: usize) -> f64 {
    1.0 + 0.25 * contexts.saturating_sub(1) as f64
}

/// How loaded every CPU, core and group is: the CPU time the monitored threads want where
/// they run (run + run-queue wait), plus what other processes keep busy.
#[derive(Debug, Clone)]
pub struct Pressure {
    cpu: HashMap<u32, f64>,
    core: HashMap<usize, f64>,
    core_contexts: HashMap<usize, usize>,
    group: HashMap<usize, f64>,
}

impl Pressure {
    /// The pressure of one interval.
    #[must_use]
    pub fn new(snap: &Snapshot, layout: &Layout) -> Self {
        let mut own: HashMap<u32, f64> = HashMap::new();
        let mut own_run: HashMap<u32, f64> = HashMap::new();
        for t in snap.threads.iter().filter(|t| !t.fresh) {
            *own.entry(t.cpu).or_insert(0.0) += t.demand();
            *own_run.entry(t.cpu).or_insert(0.0) += t.run;
        }
        let mut p = Self {
            cpu: HashMap::new(),
            core: HashMap::new(),
            core_contexts: HashMap::new(),
            group: HashMap::new(),
        };
        for &c in layout.cpus() {
            let foreign = (snap.busy.get(&c).copied().unwrap_or(0.0)
                - own_run.get(&c).copied().unwrap_or(0.0))
            .clamp(0.0, 1.0);
            let load = own.get(&c).copied().unwrap_or(0.0) + foreign;
            p.cpu.insert(c, load);
            if let Some(place) = layout.place(c) {
                *p.core.entry(place.core).or_insert(0.0) += load;
                *p.core_contexts.entry(place.core).or_insert(0) += 1;
                *p.group.entry(place.group).or_insert(0.0) += load;
            }
        }
        p
    }

    /// Load of CPU `cpu` (in CPUs of work).
    #[must_use]
    pub fn cpu(&self, cpu: u32) -> f64 {
        self.cpu.get(&cpu).copied().unwrap_or(0.0)
    }

    /// The worst of load over capacity of `cpu`, its core and its group.
    #[must_use]
    pub fn worst(&self, layout: &Layout, cpu: u32) -> f64 {
        self.worst_after(layout, cpu, None, 0.0)
    }

    /// The same at `cpu` once `demand` CPUs of work moved there from CPU `from` (a core or
    /// group that holds both already counts that work).
    #[must_use]
    pub fn worst_after(&self, layout: &Layout, cpu: u32, from: Option<u32>, demand: f64) -> f64 {
        let mut w = self.cpu(cpu) + if from == Some(cpu) { 0.0 } else { demand };
        let src = from.and_then(|f| layout.place(f));
        if let Some(place) = layout.place(cpu) {
            let extra = |same: bool| if same { 0.0 } else { demand };
            let contexts = self.core_contexts.get(&place.core).copied().unwrap_or(1);
            let core = self.core.get(&place.core).copied().unwrap_or(0.0)
                + extra(src.is_some_and(|s| s.core == place.core));
            w = w.max(core / core_capacity(contexts));
            let group = self.group.get(&place.group).copied().unwrap_or(0.0)
                + extra(src.is_some_and(|s| s.group == place.group));
            w = w.max(group / place.group_cores as f64);
        }
        w
    }
}

/// The allowed CPUs of a thread that the layout knows, except `not`.
fn destinations(t: &ThreadSample, layout: &Layout, not: u32) -> Vec<u32> {
    layout
        .cpus()
        .iter()
        .copied()
        .filter(|&c| c != not && t.allowed.contains(c))
        .collect()
}

/// A move of thread `t` to the single CPU `to`.
fn move_to(t: &ThreadSample, to: u32) -> Move {
    Move {
        pid: t.pid,
        tid: t.tid,
        from: t.mask.clone(),
        to: CpuSet::from([to]),
    }
}
