//! Every copy measurement of a contention run, decided from the topology and the options
//! before anything is measured: the context alone, one pair per scope, and the socket
//! curve at 1, 2, 4, … threads. Only the curve of a level that pairs find in a group other
//! than the socket curve's is added afterwards ([`level_curve`]): on a machine whose
//! threads do not run at once there always is one ([`time_shared_level_curve`]), and
//! [`most_measurements`] bounds the whole run.

use std::collections::BTreeSet;

use topoprobe_model::format::plural;
use topoprobe_model::{Component, ContextId, CoreId, Member, SocketId, Topology};

use super::ContentionOptions;
use crate::cache::shared::{instances, scopes};

/// What a measurement is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first context alone: the reference.
    Alone,
    /// The first context and its partner in one scope (`None`: the whole machine).
    Pair {
        /// The scope.
        scope: Option<Component>,
    },
    /// The first `threads` contexts of the socket curve.
    Curve {
        /// Threads copying at once.
        threads: usize,
    },
    /// The first `threads` contexts of one group of an overhead level.
    LevelCurve {
        /// Index of the level.
        level: usize,
        /// Threads copying at once.
        threads: usize,
    },
}

impl Step {
    /// What the step measures, for progress messages.
    #[must_use]
    pub fn describe(&self, contexts: &[ContextId]) -> String {
        match self {
            Self::Alone => "bandwidth alone".into(),
            Self::Pair { .. } => {
                let ids: Vec<String> = contexts.iter().map(|c| c.0.to_string()).collect();
                format!("pair {}", ids.join("+"))
            }
            Self::Curve { threads } => format!("socket curve: {}", plural(*threads, "thread")),
            Self::LevelCurve { level, threads } => {
                format!("scalability level {level}: {}", plural(*threads, "thread"))
            }
        }
    }
}

/// One copy measurement: these contexts copy at once over `bytes` in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// What it is for.
    pub step: Step,
    /// The contexts copying at once.
    pub contexts: Vec<ContextId>,
    /// Working set of all of them together, bytes ([`ContentionOptions::working_set`]).
    pub bytes: u64,
}

impl Measurement {
    /// What identifies the measurement: the same contexts over the same bytes measure the
    /// same thing.
    #[must_use]
    pub fn key(&self) -> (Vec<ContextId>, u64) {
        let mut c = self.contexts.clone();
        c.sort_unstable();
        (c, self.bytes)
    }
}

/// Thread counts of a curve over `n` contexts: 1, 2, 4, … and the largest, which is `n`
/// capped at `max_threads` (empty when `n` is 0).
#[must_use]
pub fn thread_counts(n: usize, max_threads: usize) -> Vec<usize> {
    let top = n.min(max_threads.max(1));
    let mut out = Vec::new();
    let mut k = 1;
    while k < top {
        out.push(k);
        k *= 2;
    }
    if top > 0 {
        out.push(top);
    }
    out
}

/// The cores of a member of a socket or group, ascending.
fn member_cores(topo: &Topology, m: &Member) -> Vec<CoreId> {
    match m {
        Member::Core(c) => vec![*c],
        Member::Group(g) => topo
            .groups()
            .get(g.0)
            .map(|g| g.cores.clone())
            .unwrap_or_default(),
    }
}

/// The contexts of `socket` in the order the socket curve adds threads: one context of
/// every core first, the cores taken in turn from each of the socket's members (its
/// groups or cores, so that a few threads already spread over the groups), then every
/// core's second context, and so on.
#[must_use]
pub fn curve_order(topo: &Topology, socket: SocketId) -> Vec<ContextId> {
    let Some(s) = topo.sockets().get(socket.0) else {
        return Vec::new();
    };
    let lists: Vec<Vec<CoreId>> = s.members.iter().map(|m| member_cores(topo, m)).collect();
    let mut cores = Vec::new();
    for i in 0..lists.iter().map(Vec::len).max().unwrap_or(0) {
        cores.extend(lists.iter().filter_map(|l| l.get(i)));
    }
    let depth = cores
        .iter()
        .map(|&c| topo.core_contexts(c).len())
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for r in 0..depth {
        out.extend(cores.iter().filter_map(|&c| topo.core_contexts(c).get(r)));
    }
    out
}

/// The socket of the topology's first context and its curve order ([`curve_order`]).
#[must_use]
pub fn curve_contexts(topo: &Topology) -> Option<(SocketId, Vec<ContextId>)> {
    let first = topo.contexts().first()?.id;
    let socket = topo.socket_of(first)?;
    Some((socket, curve_order(topo, socket)))
}

/// Every measurement a run makes whatever it finds, in order: the first context alone,
/// one pair per scope, then the socket curve at [`thread_counts`] of its socket's
/// contexts (one thread is the measurement alone; a count whose contexts and bytes an
/// earlier measurement already had is not measured again).
#[must_use]
pub fn measurements(topo: &Topology, opts: &ContentionOptions) -> Vec<Measurement> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Vec::new();
    };
    let mut out = vec![Measurement {
        step: Step::Alone,
        contexts: vec![first],
        bytes: opts.working_set(1),
    }];
    for s in scopes(topo, first) {
        out.push(Measurement {
            step: Step::Pair { scope: s.component },
            contexts: vec![first, s.partner],
            bytes: opts.working_set(2),
        });
    }
    if let Some((_, order)) = curve_contexts(topo) {
        for n in thread_counts(order.len(), opts.max_threads) {
            push_new(
                &mut out,
                Measurement {
                    step: Step::Curve { threads: n },
                    contexts: order[..n].to_vec(),
                    bytes: opts.working_set(n),
                },
            );
        }
    }
    out
}

/// The measurements of the curve inside `group` of overhead level `level`, at
/// [`thread_counts`] of its contexts from 2 threads on (one thread is the measurement
/// alone).
#[must_use]
pub fn level_curve(
    level: usize,
    group: &[ContextId],
    opts: &ContentionOptions,
) -> Vec<Measurement> {
    thread_counts(group.len(), opts.max_threads)
        .into_iter()
        .filter(|&n| n > 1)
        .map(|n| Measurement {
            step: Step::LevelCurve { level, threads: n },
            contexts: group[..n].to_vec(),
            bytes: opts.working_set(n),
        })
        .collect()
}

/// The level curve a run adds on a machine whose threads do not run at once (a guest whose
/// vCPUs share one host CPU): every pair there contends alike, so one overhead level spans
/// the widest scope, and its curve is measured over that scope's group holding the first
/// context, unless the group is the socket the socket curve covers. Measurements an
/// earlier one already made ([`measurements`]) are not repeated.
#[must_use]
pub fn time_shared_level_curve(topo: &Topology, opts: &ContentionOptions) -> Vec<Measurement> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Vec::new();
    };
    let Some(widest) = scopes(topo, first).into_iter().next_back() else {
        return Vec::new();
    };
    let groups = instances(topo, Some(&widest));
    let Some(group) = groups
        .iter()
        .find(|g| g.contains(&first))
        .or_else(|| groups.first())
    else {
        return Vec::new();
    };
    let sorted = |c: &[ContextId]| {
        let mut s = c.to_vec();
        s.sort_unstable();
        s
    };
    if curve_contexts(topo).is_some_and(|(_, order)| sorted(&order) == sorted(group)) {
        return Vec::new();
    }
    let seen: BTreeSet<(Vec<ContextId>, u64)> = measurements(topo, opts)
        .iter()
        .map(Measurement::key)
        .collect();
    level_curve(0, group, opts)
        .into_iter()
        .filter(|m| !seen.contains(&m.key()))
        .collect()
}

/// Most measurements a run can make: [`measurements`], plus one level curve per scope
/// (a level per scope at most) over the largest group such a level can have (the
/// machine's contexts).
#[must_use]
pub fn most_measurements(topo: &Topology, opts: &ContentionOptions) -> usize {
    let fixed = measurements(topo, opts).len();
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return 0;
    };
    let per_level = thread_counts(topo.num_contexts(), opts.max_threads)
        .len()
        .saturating_sub(1);
    fixed + scopes(topo, first).len() * per_level
}

/// Appends `m` unless an earlier measurement already had its contexts and bytes.
fn push_new(out: &mut Vec<Measurement>, m: Measurement) {
    if m.step == Step::Alone || m.contexts.len() == 1 {
        return;
    }
    let seen: BTreeSet<(Vec<ContextId>, u64)> = out.iter().map(Measurement::key).collect();
    if !seen.contains(&m.key()) {
        out.push(m);
    }
}
