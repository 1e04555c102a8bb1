//! The memory probe's plan as data: what each step measures ([`MemWork`]) and costs
//! ([`MemStep`]), the plan the steps make up ([`MemPlan`]), and the seconds a latency or a
//! bandwidth step is planned to take. The default steps ([`super::plan`]) and the
//! `--full` ones ([`super::full_plan`]) are both planned with these.

use topoprobe_model::{Budget, CostPlan, CostStep};

use super::chase::{LATENCY_ROUNDS, SLOT_BYTES, STEADY_CHASE_STEPS};
use crate::plan::Rates;
use crate::plan::Speed;
use crate::steady::SteadyRule;

/// Rounds a bandwidth kernel is expected to take (three at least, one more when the host
/// disturbs one).
pub(super) const EXPECTED_ROUNDS: usize = 4;
/// A kernel's rounds may run this many times their planned time before they stop (at
/// least three rounds always run).
const KERNEL_SLACK: f64 = 1.5;

/// One measurement of the memory probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemWork {
    /// Latency from one context to one node.
    Latency {
        /// OS CPU number.
        cpu: u32,
        /// Socket of the context (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffer is bound to the node (false: one memory, first touch).
        bind: bool,
    },
    /// Read, write and copy bandwidth of some contexts of a socket to one node.
    Bandwidth {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The contexts streaming together.
        cpus: Vec<u32>,
    },
    /// A loaded-latency sweep ([`super::loaded`]) of a socket to a node (`--full`).
    Loaded {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the node is the socket's local node.
        local: bool,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The context that chases.
        chase_cpu: u32,
        /// The contexts that load.
        loaders: Vec<u32>,
        /// Each loader's buffer, bytes.
        loader_bytes: u64,
    },
    /// Every read/write mix ([`super::mixes`]), with and without non-temporal stores, of
    /// some contexts of a socket to a node (`--full`).
    Mixes {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The contexts streaming together.
        cpus: Vec<u32>,
    },
    /// Read bandwidth of a socket to a node with growing thread counts (`--full`).
    Saturation {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The socket's contexts in the order threads are added.
        cpus: Vec<u32>,
        /// The thread counts, ascending.
        counts: Vec<usize>,
    },
    /// Idle latency of one cell of the node × node matrix (`--full`).
    MatrixLatency {
        /// Initiator (index in [`MemPlan::initiators`]).
        initiator: usize,
        /// The context that chases.
        cpu: u32,
        /// Target node (OS number).
        node: u32,
        /// Whether the buffer is bound to the node.
        bind: bool,
    },
    /// Read bandwidth of one cell of the node × node matrix (`--full`).
    MatrixRead {
        /// Initiator (index in [`MemPlan::initiators`]).
        initiator: usize,
        /// Target node (OS number).
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The initiator's contexts.
        cpus: Vec<u32>,
    },
}

/// A measurement and its cost.
#[derive(Debug, Clone, PartialEq)]
pub struct MemStep {
    /// What it measures.
    pub work: MemWork,
    /// What it is planned to cost, and, once run, what it spent.
    pub cost: CostStep,
    /// Whether it runs even past the budget (the first latency and the first bandwidth).
    pub required: bool,
}

/// How the memory probe measures on this machine, and what it will cost.
#[derive(Debug, Clone, PartialEq)]
pub struct MemPlan {
    /// The steps, in the order they run.
    pub steps: Vec<MemStep>,
    /// Latency buffer, bytes.
    pub latency_bytes: u64,
    /// Whether the latency buffer is evicted from the caches before its chase (else the
    /// chase runs in its steady state).
    pub evicts: bool,
    /// Rounds and loads of each latency chase.
    pub latency_rounds: usize,
    /// Bandwidth working set of all threads together, bytes.
    pub bandwidth_bytes: u64,
    /// Whether write and copy use non-temporal stores.
    pub non_temporal: bool,
    /// When each bandwidth kernel stops adding rounds.
    pub rule_rounds: usize,
    /// Socket -> node pairs measured and in all.
    pub pairs: (usize, usize),
    /// How the sizes were chosen and what the budget left out, for the user.
    pub notes: Vec<String>,
    /// What makes the figures doubtful: a latency buffer the caches can hold (lines that
    /// cannot be evicted, a buffer under twice the last-level cache).
    pub warnings: Vec<String>,
    /// The budget.
    pub budget: Budget,
    /// The rows of the node × node matrices (`--full`; empty otherwise).
    pub initiators: Vec<topoprobe_model::MatrixInitiator>,
    /// The columns of the node × node matrices: OS numbers of the nodes with memory.
    pub targets: Vec<u32>,
    /// Matrix pairs measured (latency) and in all.
    pub matrix_pairs: (usize, usize),
    /// The machine's speed the plan was made for ([`Speed::assumed`] until calibrated).
    pub speed: Speed,
}

impl MemPlan {
    /// The plan as a record: steps, budget, left-out notes.
    #[must_use]
    pub fn cost(&self) -> CostPlan {
        let mut plan = CostPlan::of(
            self.budget,
            self.steps.iter().map(|s| s.cost.clone()).collect(),
            self.notes.clone(),
        );
        plan.speed = self.speed.note();
        plan
    }

    /// The rounds rule of the bandwidth kernels of `step` (its planned time bounds them).
    #[must_use]
    pub fn rule(&self, step: &MemStep, kernels: usize) -> SteadyRule {
        SteadyRule {
            max_rounds: self.rule_rounds,
            max_seconds: step.cost.seconds * KERNEL_SLACK / kernels.max(1) as f64,
            ..SteadyRule::default()
        }
    }
}

/// Seconds of one latency measurement over `bytes` (both page sizes when `pages` is 2).
pub(super) fn latency_seconds(r: &Rates, bytes: u64, evicts: bool, pages: usize) -> f64 {
    let slots = bytes / SLOT_BYTES as u64;
    let loads = if evicts {
        slots
    } else {
        (LATENCY_ROUNDS * STEADY_CHASE_STEPS) as u64 + slots
    };
    // Linking writes every slot in a random order (misses that overlap); a few ns each.
    let link = slots as f64 * 40e-9;
    let one = r.thread_start_s
        + r.touch_seconds(bytes, 1)
        + link
        + if evicts {
            r.flush_seconds(bytes, 1)
        } else {
            0.0
        }
        + loads as f64 * r.memory_ns * 1e-9;
    one * pages as f64
}

/// Seconds of one bandwidth step: `threads` threads first touch `bytes`, stream once
/// untimed, then run `kernels` kernels of [`EXPECTED_ROUNDS`] evicted passes each, on a
/// machine of `speed`: only so many of the threads run at once
/// ([`Speed::effective_threads`]).
pub(super) fn bandwidth_seconds_at(
    r: &Rates,
    bytes: u64,
    threads: usize,
    kernels: usize,
    speed: &Speed,
) -> f64 {
    let at_once = speed.effective_threads(threads);
    let round = r.flush_seconds(bytes, at_once) + r.stream_seconds(bytes, at_once);
    threads as f64 * r.thread_start_s
        + r.touch_seconds(bytes, at_once)
        + r.stream_seconds(bytes, at_once)
        + (kernels * EXPECTED_ROUNDS) as f64 * round
}
