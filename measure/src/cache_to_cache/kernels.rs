//! The cache-line transfer kernels: ccbench-style latency of one operation on a cache
//! line, by the line's coherence state and by where its owner runs (the talk's
//! true-sharing costs, libmctop's measurements). `topoprobe bench line-ops`
//! (`topoprobe_sync::bench::line_ops`) and `topoprobe mem --c2c` ([`super::plan`],
//! [`super::run`]) both measure through [`measure`]: one place measures cache-to-cache
//! transfers.
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
//! The lines' pages can be bound to a memory node. On a machine with several nodes a
//! transfer between two sockets costs more when the line's home node (its directory) is a
//! third party to it, or is the owner's rather than the reader's.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

use topoprobe_model::results::bench::{Op, OpResult, Scope, State, Unavailable};
use topoprobe_model::{ContextId, Topology};
use topoprobe_sys::buffer::{Buffer, PagePlacement};
use topoprobe_sys::clock::Clock;

use super::C2cError;

/// Lines per chain.
const LINES: usize = 32;
/// Words per page.
const PAGE_WORDS: usize = 512;
/// Operations measured in each state ([`Op::ALL`]).
pub const OPS: usize = Op::ALL.len();
/// Largest accepted number of rounds.
pub const MAX_ROUNDS: usize = 100_000;

/// Checks a number of rounds (before any work: nothing is measured).
///
/// # Errors
///
/// [`C2cError::Rounds`] for rounds outside 1 to [`MAX_ROUNDS`].
pub fn check_rounds(rounds: usize) -> Result<(), C2cError> {
    if rounds == 0 || rounds > MAX_ROUNDS {
        return Err(C2cError::Rounds(rounds));
    }
    Ok(())
}

/// A measuring context (B, the reader), an owner (A, the writer) and a third context at
/// one distance: the OS CPUs of one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trio {
    /// The measuring context.
    pub b: u32,
    /// The owner (`b` itself for lines read from memory).
    pub a: u32,
    /// The third context that shares the lines in `shared`.
    pub c: Option<u32>,
}

/// The memory node (OS number) local to an OS CPU's socket, when the topology knows it.
#[must_use]
pub fn node_of(topo: &Topology, cpu: u32) -> Option<u32> {
    let n = topo.local_node(topo.context_by_os_id(cpu)?)?;
    let node = topo.nodes().get(n.0)?;
    Some(node.os_id.unwrap_or(n.0 as u32))
}

/// The third context for an owner `a` (the nearest to it that is neither it nor `me`).
#[must_use]
pub fn third_for(topo: &Topology, me: ContextId, a: ContextId) -> Option<u32> {
    let n = topo.contexts().len();
    topo.closest_contexts(a, n)
        .into_iter()
        .find(|&c| c != me && c != a)
        .map(|c| topo.contexts()[c.0].os_id)
}

/// The owner (and a third context) at each scope from `me`, or why there is none: the
/// pairs `bench line-ops` measures, and the in-socket pairs of `mem --c2c`.
#[must_use]
pub fn trios(topo: &Topology, me: ContextId) -> Vec<(Scope, Result<Trio, String>)> {
    let os = |c: ContextId| topo.contexts()[c.0].os_id;
    let core = topo.core_of(me);
    let groups = topo.groups_of(me);
    let socket = topo.socket_of(me);
    let all: Vec<ContextId> = topo.contexts().iter().map(|c| c.id).collect();
    let pick = |pred: &dyn Fn(ContextId) -> bool| all.iter().copied().find(|&c| c != me && pred(c));
    let third = |a: ContextId| third_for(topo, me, a);
    let trio = |a: Option<ContextId>, why: &str| match a {
        Some(a) => Ok(Trio {
            b: os(me),
            a: os(a),
            c: third(a),
        }),
        None => Err(why.to_string()),
    };
    let same_core = pick(&|c| topo.core_of(c) == core);
    let in_group = groups.first().and_then(|&g| {
        let members = &topo.groups()[g.0].contexts;
        pick(&|c| members.contains(&c) && topo.core_of(c) != core)
    });
    let in_socket = pick(&|c| {
        topo.socket_of(c) == socket
            && topo.core_of(c) != core
            && groups
                .first()
                .is_none_or(|&g| !topo.groups()[g.0].contexts.contains(&c))
    });
    let other = pick(&|c| topo.socket_of(c) != socket);
    vec![
        (
            Scope::Core,
            trio(same_core, "no SMT sibling (one context per core)"),
        ),
        (
            Scope::Group,
            trio(
                in_group,
                if groups.is_empty() {
                    "no group between core and socket"
                } else {
                    "the group has one core"
                },
            ),
        ),
        (
            Scope::Socket,
            trio(in_socket, "no other core of the socket outside the group"),
        ),
        (Scope::OtherSocket, trio(other, "one socket")),
    ]
}

/// The 32 lines: one per page, at a random line of the page, chained in a random order.
struct Lines {
    buffer: Buffer,
    /// Index in `cells` of each line.
    at: Vec<usize>,
    /// Each line's successor in the chain.
    next: Vec<usize>,
}

impl Lines {
    /// Maps the lines' pages, bound to `node` when given, and writes the chain (the first
    /// touch, by the calling thread).
    fn new(node: Option<u32>) -> Result<Self, C2cError> {
        let buffer = Buffer::new(
            LINES * PAGE_WORDS * 8,
            PagePlacement {
                node,
                huge_pages: Some(false),
            },
        )?;
        let first = 0;
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let at: Vec<usize> = (0..LINES)
            .map(|i| first + i * PAGE_WORDS + (rand() % 64) as usize * 8)
            .collect();
        let mut order: Vec<usize> = (0..LINES).collect();
        for i in (1..LINES).rev() {
            order.swap(i, (rand() % (i as u64 + 1)) as usize);
        }
        let mut next = vec![0; LINES];
        for k in 0..LINES {
            next[order[k]] = order[(k + 1) % LINES];
        }
        let l = Self { buffer, at, next };
        for i in 0..LINES {
            l.line(i).store((l.next[i] as u64) << 32, Ordering::Relaxed);
        }
        Ok(l)
    }

    fn line(&self, i: usize) -> &AtomicU64 {
        &self.buffer.atomic_words()[self.at[i]]
    }

    fn flush(&self) {
        for i in 0..LINES {
            topoprobe_sys::counter::flush_line(self.line(i));
        }
        topoprobe_sys::counter::fence();
    }

    fn store_all(&self) {
        for i in 0..LINES {
            let l = self.line(i);
            l.store(l.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
    }

    fn load_all(&self) -> u64 {
        let mut x = 0;
        for i in 0..LINES {
            x ^= self.line(i).load(Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
        x
    }

    /// Runs `op` along the chain from line 0; returns the time per operation, ns.
    #[inline(never)]
    fn chain(&self, op: Op, clock: &Clock) -> f64 {
        let t0 = clock.now();
        fence(Ordering::SeqCst);
        let mut i = 0usize;
        for _ in 0..LINES {
            let l = self.line(i);
            let mine = (self.next[i] as u64) << 32;
            let v = match op {
                Op::Load => l.load(Ordering::Relaxed),
                Op::Store => {
                    l.store(mine, Ordering::Relaxed);
                    fence(Ordering::SeqCst);
                    mine
                }
                Op::Cas => match l.compare_exchange(mine, mine, Ordering::SeqCst, Ordering::SeqCst)
                {
                    Ok(v) | Err(v) => v,
                },
                Op::Fai => l.fetch_add(1, Ordering::SeqCst),
                Op::Swap => l.swap(mine, Ordering::SeqCst),
            };
            i = ((v >> 32) as usize).min(LINES - 1);
        }
        fence(Ordering::SeqCst);
        let t1 = clock.now();
        std::hint::black_box(i);
        clock.ns_between(t0, t1) / LINES as f64
    }
}

/// Turn-taking between the measuring thread and the owners.
struct Turns {
    /// Round number the measuring thread asks for (0: nothing; `u64::MAX`: stop).
    ask: AtomicU64,
    /// Last round the owner prepared.
    owner: AtomicU64,
    /// Last round the third context prepared.
    third: AtomicU64,
    /// Index of the state of the round asked for (written before `ask`).
    state: AtomicUsize,
    /// Threads that started.
    started: AtomicUsize,
}

fn wait_for(a: &AtomicU64, v: u64) {
    while a.load(Ordering::Acquire) < v {
        std::hint::spin_loop();
    }
}

/// Measures every operation in every available state at one scope (or from memory).
fn measure_trio(
    lines: &Lines,
    trio: Trio,
    states: &[State],
    rounds: usize,
) -> Result<Vec<(Op, State, f64)>, C2cError> {
    let clock = Clock::get();
    let turns = Turns {
        ask: AtomicU64::new(0),
        owner: AtomicU64::new(0),
        third: AtomicU64::new(0),
        state: AtomicUsize::new(0),
        started: AtomicUsize::new(0),
    };
    std::thread::scope(|s| {
        let helper = |cpu: u32, mine: &'static str| {
            let (turns, lines) = (&turns, lines);
            move || -> Result<(), C2cError> {
                let pinned = topoprobe_sys::affinity::pin_current_thread(cpu);
                turns.started.fetch_add(1, Ordering::AcqRel);
                let mut round = 0u64;
                loop {
                    let r = loop {
                        let r = turns.ask.load(Ordering::Acquire);
                        if r != round {
                            break r;
                        }
                        std::hint::spin_loop();
                    };
                    if r == u64::MAX {
                        return pinned.map_err(C2cError::from);
                    }
                    round = r;
                    if mine == "third" {
                        wait_for(&turns.owner, r);
                    }
                    match (states[turns.state.load(Ordering::Relaxed)], mine) {
                        (State::Modified, "owner") => lines.store_all(),
                        (State::Exclusive | State::Shared, "owner") => {
                            std::hint::black_box(lines.load_all());
                        }
                        (State::Shared, "third") => {
                            std::hint::black_box(lines.load_all());
                        }
                        _ => {}
                    }
                    let done = if mine == "owner" {
                        &turns.owner
                    } else {
                        &turns.third
                    };
                    done.store(r, Ordering::Release);
                }
            }
        };
        let owner = (trio.a != trio.b).then(|| s.spawn(helper(trio.a, "owner")));
        let third = trio.c.map(|c| s.spawn(helper(c, "third")));
        let expected = usize::from(owner.is_some()) + usize::from(third.is_some());
        let measured = (|| {
            topoprobe_sys::affinity::pin_current_thread(trio.b)?;
            while turns.started.load(Ordering::Acquire) < expected {
                std::hint::spin_loop();
            }
            let mut out = Vec::new();
            let mut round = 0u64;
            for (ix, &state) in states.iter().enumerate() {
                turns.state.store(ix, Ordering::Relaxed);
                for op in Op::ALL {
                    let mut v = Vec::with_capacity(rounds);
                    // One unmeasured chain warms the TLB and the code.
                    for k in 0..=rounds {
                        round += 1;
                        if state != State::Modified {
                            lines.flush();
                        }
                        turns.ask.store(round, Ordering::Release);
                        if owner.is_some() {
                            wait_for(&turns.owner, round);
                        }
                        if third.is_some() {
                            wait_for(&turns.third, round);
                        }
                        let ns = lines.chain(op, clock);
                        if k > 0 {
                            v.push(ns);
                        }
                    }
                    out.push((op, state, topoprobe_model::median(&v).unwrap_or(f64::NAN)));
                }
            }
            Ok::<_, C2cError>(out)
        })();
        turns.ask.store(u64::MAX, Ordering::Release);
        for h in owner.into_iter().chain(third) {
            h.join()
                .map_err(|_| C2cError::Thread("a line owner panicked".into()))??;
        }
        measured
    })
}

/// What one measurement of a [`Trio`] gave: the latencies, and the states it could not
/// measure with why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// One result per state and operation.
    pub results: Vec<OpResult>,
    /// States that could not be measured.
    pub unavailable: Vec<Unavailable>,
}

/// The states a trio at `scope` can be measured in here: `modified` always; `exclusive`
/// and `shared` (with a third context) where lines can be flushed; `invalid` (scope
/// `memory`) alone.
fn states_for(scope: Scope, trio: Trio, can_flush: bool) -> (Vec<State>, Vec<Unavailable>) {
    let no_flush = || "no cache-line flush instruction on this architecture".to_string();
    if scope == Scope::Memory {
        return if can_flush {
            (vec![State::Invalid], Vec::new())
        } else {
            let un = |state| Unavailable {
                scope,
                state: Some(state),
                reason: no_flush(),
            };
            (Vec::new(), vec![un(State::Invalid), un(State::Exclusive)])
        };
    }
    let mut states = vec![State::Modified];
    let mut unavailable = Vec::new();
    if can_flush {
        states.push(State::Exclusive);
        if trio.c.is_some() {
            states.push(State::Shared);
        } else {
            unavailable.push(Unavailable {
                scope,
                state: Some(State::Shared),
                reason: "needs a third hardware context".into(),
            });
        }
    }
    (states, unavailable)
}

/// Measures every operation in every state the trio can be measured in, at `scope`, with
/// the lines bound to `home_node` (`None`: the kernel's default policy). `bench line-ops`
/// and `mem --c2c` both measure through this function.
///
/// # Errors
///
/// A parameter out of range, a buffer that cannot be mapped or bound to the node, or a
/// thread that cannot be pinned.
pub fn measure(
    scope: Scope,
    trio: Trio,
    home_node: Option<u32>,
    rounds: usize,
) -> Result<Measured, C2cError> {
    check_rounds(rounds)?;
    let (states, unavailable) = states_for(scope, trio, topoprobe_sys::counter::can_flush());
    if states.is_empty() {
        return Ok(Measured {
            results: Vec::new(),
            unavailable,
        });
    }
    // The third context is only needed for the shared state; memory has no owner.
    let t = Trio {
        a: if scope == Scope::Memory {
            trio.b
        } else {
            trio.a
        },
        c: if states.contains(&State::Shared) {
            trio.c
        } else {
            None
        },
        ..trio
    };
    let lines = Lines::new(home_node)?;
    let results = measure_trio(&lines, t, &states, rounds)?
        .into_iter()
        .map(|(op, state, ns)| {
            let mut cpus = vec![t.b];
            if scope != Scope::Memory {
                cpus.push(t.a);
            }
            if state == State::Shared {
                cpus.extend(t.c);
            }
            OpResult {
                op,
                state,
                scope,
                latency_ns: ns,
                cpus,
                home_node,
            }
        })
        .collect();
    Ok(Measured {
        results,
        unavailable,
    })
}
