//! Cache-to-cache transfers as `topoprobe mem --c2c` measures them: the [`kernels`] that
//! `topoprobe bench line-ops` also runs, for the (reader, owner, home node) triples the
//! topology calls for and that fit a budget.
//!
//! The plan, in order of priority (what the budget cuts comes last):
//!
//! 1. from the first context of socket 0: an owner at each distance inside the socket (SMT
//!    sibling, group, socket: exactly `bench line-ops`'s owners) and lines from memory;
//! 2. between socket 0 and every other socket, both ways (reader on socket 0 and owner on
//!    socket *j*, then the reverse), each with the lines homed on the reader's node and on
//!    the owner's: the pairs where the home node decides whether a transfer goes through a
//!    remote directory (core-to-core-latency's issue #97: one socket of a 2-socket EPYC
//!    looks twice as slow as the other);
//! 3. the same inside every other socket;
//! 4. the remaining ordered pairs of sockets.
//!
//! A distance the machine lacks is not planned (no SMT sibling, one socket); where reader
//! and owner share their node the two home variants are one (`both`), and on a machine with
//! one memory node the lines are not bound at all (`unbound`): the result says so in its
//! notes instead of listing variants that cannot differ.

use std::time::Instant;

use topoprobe_model::results::bench::{Scope, State};
use topoprobe_model::results::cache_to_cache::{CacheToCacheResult, Home, Transfer};
use topoprobe_model::{Budget, ContextId, CostPlan, CostStep, SocketId, Topology};

use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::buffer::BufferError;

use kernels::{node_of, third_for, trios, Trio};

pub mod kernels;

/// Why cache-to-cache transfers could not be planned or measured.
#[derive(Debug, thiserror::Error)]
pub enum C2cError {
    /// Rounds out of range: a bad request, not a failure.
    #[error("rounds {0} is out of range (allowed: 1 to {max})", max = kernels::MAX_ROUNDS)]
    Rounds(usize),
    /// A thread could not be pinned.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// The lines' pages could not be mapped or bound to their node.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// A thread of the measurement could not be started or panicked.
    #[error("worker thread: {0}")]
    Thread(String),
}

impl C2cError {
    /// Whether the error means the request itself is wrong (rounds out of range), so that
    /// retrying cannot help.
    #[must_use]
    pub const fn is_usage(&self) -> bool {
        matches!(self, Self::Rounds(_))
    }
}

/// Rounds per operation, state and pair of a default plan.
pub const DEFAULT_ROUNDS: usize = 100;
/// The budget of a default plan: a few seconds, one small buffer at a time.
pub const DEFAULT_BUDGET: Budget = Budget::new(5.0, 1 << 20);
/// Planned seconds of one round of one operation: flushing or writing 32 lines, handing
/// them over between threads, and the chain of 32 transfers.
const ROUND_SECONDS: f64 = 25e-6;
/// Planned seconds to map and bind the lines and start the owner's threads.
const SETUP_SECONDS: f64 = 0.005;
/// Bytes of one step's lines (32 pages).
const STEP_BYTES: u64 = 32 * 4096;

/// One planned measurement: a trio at a distance, with its lines on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// Where the owner runs, relative to the reader.
    pub scope: Scope,
    /// Reader, owner and third context (OS CPUs).
    pub trio: Trio,
    /// Where the lines are, relative to reader and owner.
    pub home: Home,
    /// The node the lines are bound to (`None`: unbound).
    pub home_node: Option<u32>,
}

impl Planned {
    /// The step's name in the plan and the progress display.
    #[must_use]
    pub fn name(&self) -> String {
        let home = match self.home_node {
            Some(n) => format!("home node {n} ({})", self.home.as_str()),
            None => "unbound".to_string(),
        };
        if self.scope == Scope::Memory {
            format!("CPU {} <- memory, {home}", self.trio.b)
        } else {
            format!(
                "CPU {} <- CPU {} ({}, {home})",
                self.trio.b,
                self.trio.a,
                self.scope.as_str()
            )
        }
    }

    /// The states this measurement covers here.
    fn states(&self, can_flush: bool) -> usize {
        match (self.scope, can_flush) {
            (Scope::Memory, true) => 1,
            (Scope::Memory, false) => 0,
            (_, false) => 1,
            (_, true) => 2 + usize::from(self.trio.c.is_some()),
        }
    }
}

/// The plan: the measurements in order, their cost, and what the machine or the budget
/// left out.
#[derive(Debug, Clone, PartialEq)]
pub struct C2cPlan {
    /// Rounds per operation, state and measurement.
    pub rounds: usize,
    /// The measurements, in the order they run (`cost.steps` has one step for each).
    pub planned: Vec<Planned>,
    /// The cost, step by step, and what the budget left out.
    pub cost: CostPlan,
    /// Distances this machine does not have, and why.
    pub unavailable: Vec<String>,
    /// Home-node variants that collapse, and why.
    pub notes: Vec<String>,
}

/// The first context (in the topology's order) of socket `s`.
fn first_of(topo: &Topology, s: SocketId) -> Option<ContextId> {
    topo.contexts()
        .iter()
        .map(|c| c.id)
        .find(|&c| topo.socket_of(c) == Some(s))
}

/// The home variants of a reader and an owner: both nodes when they differ, one when they
/// share it, none bound on a machine of one node (or nodes unknown).
fn homes(topo: &Topology, trio: Trio) -> Vec<(Home, Option<u32>)> {
    let (r, o) = (node_of(topo, trio.b), node_of(topo, trio.a));
    match (r, o) {
        _ if topo.nodes().len() < 2 => vec![(Home::Unbound, None)],
        (Some(r), Some(o)) if r != o => vec![(Home::Reader, Some(r)), (Home::Owner, Some(o))],
        (Some(r), Some(_)) => vec![(Home::Both, Some(r))],
        _ => vec![(Home::Unbound, None)],
    }
}

/// Every measurement the topology calls for, by priority, and the distances it lacks.
fn candidates(topo: &Topology) -> (Vec<Planned>, Vec<String>) {
    let os = |c: ContextId| topo.contexts()[c.0].os_id;
    let sockets: Vec<(SocketId, ContextId)> = topo
        .sockets()
        .iter()
        .filter_map(|s| first_of(topo, s.id).map(|c| (s.id, c)))
        .collect();
    let mut unavailable = Vec::new();
    let with_homes = |scope: Scope, trio: Trio| {
        homes(topo, trio)
            .into_iter()
            .map(move |(home, home_node)| Planned {
                scope,
                trio,
                home,
                home_node,
            })
    };
    let inside = |reader: ContextId, unavailable: Option<&mut Vec<String>>| {
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for (scope, trio) in trios(topo, reader) {
            match trio {
                Ok(t) if scope != Scope::OtherSocket => out.extend(with_homes(scope, t)),
                Ok(_) => {}
                Err(why) => missing.push(format!("{}: {why}", scope.as_str())),
            }
        }
        let b = os(reader);
        out.extend(with_homes(Scope::Memory, Trio { b, a: b, c: None }));
        if let Some(u) = unavailable {
            u.extend(missing);
        }
        out
    };
    let cross = |i: usize, j: usize| {
        let (r, o) = (sockets[i].1, sockets[j].1);
        let trio = Trio {
            b: os(r),
            a: os(o),
            c: third_for(topo, r, o),
        };
        with_homes(Scope::OtherSocket, trio).collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    let Some(&(_, first)) = sockets.first() else {
        return (out, vec!["the topology has no context".into()]);
    };
    out.extend(inside(first, Some(&mut unavailable)));
    for j in 1..sockets.len() {
        out.extend(cross(0, j));
        out.extend(cross(j, 0));
    }
    for &(_, reader) in sockets.iter().skip(1) {
        out.extend(inside(reader, None));
    }
    for i in 1..sockets.len() {
        for j in 1..sockets.len() {
            if i != j {
                out.extend(cross(i, j));
            }
        }
    }
    (out, unavailable)
}

/// Plans the transfers of `topo` with `rounds` rounds within `budget`: the measurements of
/// the list above in order, up to the first that does not fit (the first always runs), so
/// that the budget cuts the lowest priorities.
///
/// # Errors
///
/// [`C2cError::Rounds`] for rounds out of range.
pub fn plan(topo: &Topology, rounds: usize, budget: Budget) -> Result<C2cPlan, C2cError> {
    kernels::check_rounds(rounds)?;
    let can_flush = topoprobe_sys::counter::can_flush();
    let (all, unavailable) = candidates(topo);
    let mut cost = CostPlan::new(budget);
    let mut planned = Vec::new();
    let mut left = 0usize;
    for p in all {
        let passes = (p.states(can_flush) * kernels::OPS * (rounds + 1)) as u64;
        let seconds = SETUP_SECONDS + passes as f64 * ROUND_SECONDS;
        let fits = cost.seconds() + seconds <= budget.seconds && STEP_BYTES <= budget.bytes;
        if left == 0 && (planned.is_empty() || fits) {
            cost.steps
                .push(CostStep::new("c2c", p.name(), STEP_BYTES, passes, seconds));
            planned.push(p);
        } else {
            left += 1;
        }
    }
    if left > 0 {
        cost.left_out.push(format!(
            "c2c: {} left out by the budget of {} (give a larger --budget)",
            topoprobe_model::format::plural(left, "transfer measurement"),
            topoprobe_model::seconds_text(budget.seconds)
        ));
    }
    let mut notes = Vec::new();
    if topo.nodes().len() < 2 {
        notes.push(
            "one memory node: a line's home is the same node for every reader and owner, so \
             the home-node variants (reader's node, owner's node) collapse into one, measured \
             unbound"
                .to_string(),
        );
    } else if planned.iter().any(|p| p.home == Home::Both) {
        notes.push(
            "where reader and owner share their node, the two home-node variants are one \
             (home: both)"
                .to_string(),
        );
    }
    Ok(C2cPlan {
        rounds,
        planned,
        cost,
        unavailable,
        notes,
    })
}

/// Runs a plan, naming each step to `progress` as it starts and recording what it spent.
///
/// # Errors
///
/// A buffer that cannot be mapped or bound to its node, or a thread that cannot be pinned.
pub fn run(
    mut plan: C2cPlan,
    progress: &mut dyn FnMut(&str),
) -> Result<CacheToCacheResult, C2cError> {
    let mut transfers = Vec::new();
    let mut unavailable = plan.unavailable.clone();
    for (i, p) in plan.planned.iter().enumerate() {
        progress(&plan.cost.steps[i].what);
        let start = Instant::now();
        let m = kernels::measure(p.scope, p.trio, p.home_node, plan.rounds)?;
        plan.cost.steps[i].record(start.elapsed().as_secs_f64(), None);
        transfers.extend(m.results.into_iter().map(|r| Transfer {
            scope: r.scope,
            state: r.state,
            op: r.op,
            reader_cpu: p.trio.b,
            owner_cpu: p.trio.a,
            third_cpu: if r.state == State::Shared {
                p.trio.c
            } else {
                None
            },
            home: p.home,
            home_node: r.home_node,
            latency_ns: r.latency_ns,
        }));
        for u in m.unavailable {
            let line = format!(
                "{} {}: {}",
                u.scope.as_str(),
                u.state.map_or("", State::as_str),
                u.reason
            );
            if !unavailable.contains(&line) {
                unavailable.push(line);
            }
        }
    }
    Ok(CacheToCacheResult {
        rounds: plan.rounds,
        transfers,
        unavailable,
        warnings: Vec::new(),
        notes: plan.notes,
        cost: plan.cost,
    })
}
