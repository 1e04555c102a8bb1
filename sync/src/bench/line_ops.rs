//! ccbench-style latency of one operation on a cache line, by the line's coherence state
//! and by where its owner runs (the talk's true-sharing costs, libmctop's measurements).
//!
//! A measuring context B and an owner context A at a given distance (`core`: SMT siblings,
//! `group`: same group, `socket`: same socket outside B's group, `other_socket`) take
//! turns. Each round, A (and for `shared` a third context C) brings 32 lines into a state:
//!
//! - `modified`: A stores to each line;
//! - `exclusive`: the lines are flushed from every cache, then A loads each;
//! - `shared`: flushed, then A and C load each;
//! - `invalid`: flushed; B then reads memory (scope `memory`, no owner).
//!
//! Then B runs one operation (`load`, `store` followed by a fence, `cas`, `fai`
//! fetch-and-increment, `swap`) on the 32 lines, each operation's address depending on the
//! previous one's result (a pointer chase in random order over 32 pages, so that neither
//! out-of-order execution nor the prefetchers overlap them), and times the chain: one
//! round gives the mean latency of one operation; the median over rounds is reported.
//!
//! The lines' pages can be bound to a memory node ([`Home`]): the owner's, the measuring
//! context's, or a given one. On a machine with several nodes a transfer between two
//! sockets costs more when the line's home node (its directory) is a third party to it, or
//! is the owner's rather than the reader's. The kernels are
//! [`topoprobe_measure::cache_to_cache::kernels`], which `topoprobe mem --c2c` runs too:
//! one place measures cache-to-cache transfers. This module is the experiment around
//! them: which owners one context has, where their lines live, and which lock suits the
//! machine.

pub use topoprobe_measure::cache_to_cache::kernels::{
    measure, node_of, third_for, trios, Measured, Trio, MAX_ROUNDS, OPS,
};
pub use topoprobe_model::results::bench::{
    DescribedLatency, LineOpsReport, Op, OpResult, Scope, State, Unavailable,
};
use topoprobe_model::{ContextId, Topology};

use crate::error::SyncError;

/// Where the lines' pages live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Home {
    /// The kernel's default policy (first touch by the measuring thread's process).
    #[default]
    Unbound,
    /// Bound to the owner's (the writer's) node.
    Owner,
    /// Bound to the measuring context's (the reader's) node.
    Reader,
    /// Bound to this node (OS number).
    Node(u32),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Rounds per operation, state and scope (the median is reported).
    pub rounds: usize,
    /// The measuring context's OS CPU (default: the topology's first context).
    pub cpu: Option<u32>,
    /// Where the lines' pages live.
    pub home: Home,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            rounds: 200,
            cpu: None,
            home: Home::Unbound,
        }
    }
}

impl Config {
    /// Checks the limits (before any work: nothing is measured).
    ///
    /// # Errors
    ///
    /// [`WorkError::Parameter`](topoprobe_place::WorkError::Parameter) naming the first value out of range.
    pub fn check(&self) -> Result<(), SyncError> {
        if self.rounds == 0 || self.rounds > MAX_ROUNDS {
            return Err(SyncError::parameter(
                "rounds",
                self.rounds,
                format!("1 to {MAX_ROUNDS}"),
            ));
        }
        Ok(())
    }

    /// The measuring context on `topo`: the context of [`Config::cpu`], else the first.
    ///
    /// # Errors
    ///
    /// [`WorkError::Parameter`](topoprobe_place::WorkError::Parameter) when the CPU is not one of the topology's, or the topology
    /// has no context.
    pub fn context(&self, topo: &Topology) -> Result<ContextId, SyncError> {
        match self.cpu {
            Some(cpu) => topo.context_by_os_id(cpu).ok_or_else(|| {
                SyncError::parameter(
                    "cpu",
                    cpu,
                    format!("the topology's CPUs, {}", cpu_list(topo)),
                )
            }),
            None if topo.contexts().is_empty() => Err(SyncError::parameter(
                "cpu",
                "(default)",
                "a topology with at least one CPU",
            )),
            None => Ok(ContextId(0)),
        }
    }
}

/// The OS CPUs of a topology as ranges (`0-3,8`).
fn cpu_list(topo: &Topology) -> String {
    let ids: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    topoprobe_model::format_cpu_list(&ids)
}

/// The node `home` names for a reader `b` and an owner `a` (`None`: unbound).
///
/// # Errors
///
/// [`WorkError::Parameter`](topoprobe_place::WorkError::Parameter) when the home is a context's node and the topology does not
/// know that context's node.
pub fn home_node(topo: &Topology, home: Home, trio: Trio) -> Result<Option<u32>, SyncError> {
    let of = |cpu: u32| {
        node_of(topo, cpu).map(Some).ok_or_else(|| {
            SyncError::parameter(
                "home",
                format!("the node of CPU {cpu}"),
                "a topology that knows each socket's local node",
            )
        })
    };
    match home {
        Home::Unbound => Ok(None),
        Home::Node(n) => Ok(Some(n)),
        Home::Owner => of(trio.a),
        Home::Reader => of(trio.b),
    }
}

/// Runs the experiment.
///
/// # Errors
///
/// A parameter out of range, a CPU that is not in the topology, a buffer that cannot be
/// bound to the home node, or a thread that cannot be pinned.
pub fn run(topo: &Topology, config: &Config) -> Result<LineOpsReport, SyncError> {
    config.check()?;
    let me = config.context(topo)?;
    let b = topo.contexts()[me.0].os_id;
    let mut results = Vec::new();
    let mut unavailable = Vec::new();
    let alone = Trio { b, a: b, c: None };
    let scopes = trios(topo, me)
        .into_iter()
        .chain([(Scope::Memory, Ok(alone))]);
    for (scope, trio) in scopes {
        let trio = match trio {
            Ok(t) => t,
            Err(reason) => {
                unavailable.push(Unavailable {
                    scope,
                    state: None,
                    reason,
                });
                continue;
            }
        };
        let node = home_node(topo, config.home, trio)?;
        let m = measure(scope, trio, node, config.rounds)?;
        results.extend(m.results);
        unavailable.extend(m.unavailable);
    }
    let mut report = LineOpsReport {
        rounds: config.rounds,
        cpu: b,
        results,
        unavailable,
        described_latency: None,
        advice: Vec::new(),
    };
    report.described_latency = described(topo, &report);
    report.advice = advice(&report);
    Ok(report)
}

/// The topology's latency for the pair of the CAS on a modified line (socket scope, else
/// group), what `topoprobe latency` measures.
fn described(topo: &Topology, r: &LineOpsReport) -> Option<DescribedLatency> {
    let x = find(r, Op::Cas, State::Modified, Scope::Socket)
        .or_else(|| find(r, Op::Cas, State::Modified, Scope::Group))?;
    let (a, b) = (*x.cpus.first()?, *x.cpus.get(1)?);
    let latency = topo.context_latency(topo.context_by_os_id(a)?, topo.context_by_os_id(b)?)?;
    Some(DescribedLatency {
        cpus: vec![a, b],
        latency,
        unit: topo.units().as_str().to_string(),
        cas_ns: x.latency_ns,
    })
}

/// The latency of `op` on a line in `state` at `scope`, when measured.
#[must_use]
pub fn find(r: &LineOpsReport, op: Op, state: State, scope: Scope) -> Option<&OpResult> {
    r.results
        .iter()
        .find(|x| x.op == op && x.state == state && x.scope == scope)
}

/// Which lock to use here, from how much a hand-over costs at each distance.
#[must_use]
pub fn advice(r: &LineOpsReport) -> Vec<String> {
    let cas = |s| find(r, Op::Cas, State::Modified, s).map(|x| x.latency_ns);
    let mut out = Vec::new();
    let near = cas(Scope::Group).or(cas(Scope::Socket));
    match (near, cas(Scope::OtherSocket)) {
        (Some(n), Some(f)) if f >= 1.5 * n => out.push(format!(
            "a lock handed to another socket costs {:.1}x one handed inside a socket ({f:.0} vs {n:.0} ns): \
             use a cohort lock (locks::CohortMutex) when threads of several sockets contend",
            f / n
        )),
        (Some(n), Some(f)) => out.push(format!(
            "hand-overs across sockets cost about as much as inside ({f:.0} vs {n:.0} ns): \
             a ticket lock with educated backoff, MCS when many threads contend"
        )),
        (Some(n), None) => out.push(format!(
            "one socket, a hand-over costs {n:.0} ns: a ticket lock with educated backoff for a few \
             threads, MCS or CLH when many contend (each waiter spins on its own line)"
        )),
        _ => {}
    }
    if let (Some(m), Some(l)) = (
        cas(Scope::Socket).or(near),
        find(r, Op::Load, State::Shared, Scope::Socket)
            .or_else(|| find(r, Op::Load, State::Exclusive, Scope::Socket))
            .map(|x| x.latency_ns),
    ) {
        out.push(format!(
            "reading a line another core holds costs {l:.0} ns, taking it for a write {m:.0} ns: \
             waiters that only read (TTAS, ticket) disturb the holder less than TAS's swaps"
        ));
    }
    out
}
