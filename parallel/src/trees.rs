//! Steal orders and reduction (merge) trees over a set of workers placed on a topology,
//! as data that runtimes can use (paper §5, "topology-aware work stealing" and
//! "topology-aware reduction trees").
//!
//! Workers are indices into a list of hardware contexts (usually a placement's, in thread
//! order).
//!
//! - [`steal_order`]: for each worker, the others in the order to steal from: closest
//!   latency level first, then the highest bandwidth between their sockets, then the lowest
//!   latency, then index.
//! - [`ReductionTree`]: rounds of merges that reduce every worker's value into a root:
//!   first inside cores, then inside each group (innermost first), then inside each socket,
//!   then across sockets, where each round pairs the sockets with the best links (bandwidth,
//!   else latency) and the root's socket always survives. Any number of sockets and workers.

use topoprobe_model::{ContextId, Member, SocketId, Topology};

/// For each worker, the other workers in the order to steal from.
#[must_use]
pub fn steal_order(topo: &Topology, workers: &[ContextId]) -> Vec<Vec<usize>> {
    (0..workers.len())
        .map(|i| {
            let me = workers[i];
            let my_socket = topo.socket_of(me);
            let mut others: Vec<(usize, f64, f64, usize)> = (0..workers.len())
                .filter(|&j| j != i)
                .map(|j| {
                    let o = workers[j];
                    let level = if o == me {
                        0
                    } else {
                        topo.level_of(me, o).unwrap_or(usize::MAX)
                    };
                    let bw = match (my_socket, topo.socket_of(o)) {
                        (Some(a), Some(b)) if a != b => {
                            topoprobe_place::sockets::link_bandwidth(topo, b, a).unwrap_or(0.0)
                        }
                        _ => f64::INFINITY,
                    };
                    let lat = topo.context_latency(me, o).unwrap_or(f64::INFINITY);
                    (level, bw, lat, j)
                })
                .collect();
            others.sort_by(|x, y| {
                x.0.cmp(&y.0)
                    .then(y.1.total_cmp(&x.1))
                    .then(x.2.total_cmp(&y.2))
                    .then(x.3.cmp(&y.3))
            });
            others.into_iter().map(|o| o.3).collect()
        })
        .collect()
}

/// One merge: `from`'s value is combined into `into`'s, and `from` is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Merge {
    /// The worker whose value moves.
    pub from: usize,
    /// The worker that keeps the combined value.
    pub into: usize,
}

/// A reduction tree: rounds of merges (the merges of one round are independent and can run
/// at once) that leave every value combined in `root`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReductionTree {
    /// Number of workers.
    pub workers: usize,
    /// The worker holding the result.
    pub root: usize,
    /// The merges, round by round.
    pub rounds: Vec<Vec<Merge>>,
}

/// Per component: its leader and its rounds (relative to the component's start).
type Part = (usize, Vec<Vec<Merge>>);

impl ReductionTree {
    /// The tree over `workers` (contexts, in worker order) with the result in worker
    /// `root` (0 when out of range).
    #[must_use]
    pub fn new(topo: &Topology, workers: &[ContextId], root: usize) -> Self {
        let root = if root < workers.len() { root } else { 0 };
        if workers.is_empty() {
            return Self {
                workers: 0,
                root: 0,
                rounds: Vec::new(),
            };
        }
        let root_ctx = workers[root];
        // Workers per context (several workers may share one).
        let on = |ctxs: &[ContextId]| -> Vec<usize> {
            let mut v: Vec<usize> = (0..workers.len())
                .filter(|&w| ctxs.contains(&workers[w]))
                .collect();
            // The root leads whatever it belongs to.
            v.sort_by_key(|&w| (w != root, w));
            v
        };
        let mut sockets: Vec<(SocketId, Part)> = Vec::new();
        for s in topo.sockets() {
            if let Some(p) = member_part(topo, &s.members, &on, root) {
                sockets.push((s.id, p));
            }
        }
        // Contexts outside every socket (none in a valid topology) join as one part.
        let placed: Vec<usize> = sockets
            .iter()
            .flat_map(|(s, _)| on(topo.socket_contexts(*s)))
            .collect();
        let stray: Vec<usize> = (0..workers.len()).filter(|w| !placed.contains(w)).collect();
        let mut parts: Vec<Part> = sockets.iter().map(|(_, p)| p.clone()).collect();
        let mut socket_of: Vec<Option<SocketId>> = sockets.iter().map(|(s, _)| Some(*s)).collect();
        if !stray.is_empty() {
            parts.push((stray[0], binary(&stray)));
            socket_of.push(None);
        }
        // Inside sockets in parallel, then across sockets.
        let mut rounds = zip_rounds(parts.iter().map(|p| p.1.clone()).collect());
        let leaders: Vec<(usize, Option<SocketId>)> =
            parts.iter().map(|p| p.0).zip(socket_of).collect();
        let root_socket = topo.socket_of(root_ctx);
        rounds.extend(across_sockets(topo, leaders, root_socket));
        Self {
            workers: workers.len(),
            root,
            rounds,
        }
    }

    /// Checks the tree: every worker but the root merged exactly once, into a worker that
    /// is still live, nobody in two merges of one round, only the root left.
    ///
    /// # Errors
    ///
    /// A message naming the first problem.
    pub fn validate(&self) -> Result<(), String> {
        let mut live = vec![true; self.workers];
        for (r, round) in self.rounds.iter().enumerate() {
            let mut busy = vec![false; self.workers];
            for m in round {
                for w in [m.from, m.into] {
                    if w >= self.workers {
                        return Err(format!("round {r}: worker {w} does not exist"));
                    }
                    if !live[w] {
                        return Err(format!("round {r}: worker {w} was already merged"));
                    }
                    if busy[w] {
                        return Err(format!("round {r}: worker {w} is in two merges"));
                    }
                    busy[w] = true;
                }
                if m.from == self.root {
                    return Err(format!("round {r}: the root {} is merged away", self.root));
                }
                if m.from == m.into {
                    return Err(format!("round {r}: worker {} merged into itself", m.from));
                }
            }
            for m in round {
                live[m.from] = false;
            }
        }
        let left: Vec<usize> = (0..self.workers).filter(|&w| live[w]).collect();
        if self.workers > 0 && left != [self.root] {
            return Err(format!(
                "after every round, workers {left:?} remain, not only the root"
            ));
        }
        Ok(())
    }

    /// Workers in an order where every merge combines adjacent ranges: lay out each
    /// worker's data in this order, and every merge of the tree concatenates neighbours
    /// (the root first, then each merged subtree in merge order).
    #[must_use]
    pub fn layout(&self) -> Vec<usize> {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.workers];
        for round in &self.rounds {
            for m in round {
                children[m.into].push(m.from);
            }
        }
        let mut out = Vec::with_capacity(self.workers);
        let mut stack = vec![self.root];
        // Pre-order with children in merge order: push in reverse.
        while let Some(w) = stack.pop() {
            out.push(w);
            for &c in children[w].iter().rev() {
                stack.push(c);
            }
        }
        out
    }
}

/// The part of the workers under some members (a socket's or a group's).
fn member_part(
    topo: &Topology,
    members: &[Member],
    on: &dyn Fn(&[ContextId]) -> Vec<usize>,
    root: usize,
) -> Option<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for m in members {
        let p = match m {
            Member::Core(c) => {
                let ws = on(topo.core_contexts(*c));
                ws.first().map(|&l| (l, binary(&ws)))
            }
            Member::Group(g) => member_part(topo, &topo.groups()[g.0].members, on, root),
        };
        parts.extend(p);
    }
    if parts.is_empty() {
        return None;
    }
    // The member holding the root leads.
    parts.sort_by_key(|p| p.0 != root);
    let leaders: Vec<usize> = parts.iter().map(|p| p.0).collect();
    let mut rounds = zip_rounds(parts.into_iter().map(|p| p.1).collect());
    rounds.extend(binary(&leaders));
    Some((leaders[0], rounds))
}

/// Rounds of a binary tree over `ws` into `ws[0]`: pairs of neighbours, the left one
/// surviving.
fn binary(ws: &[usize]) -> Vec<Vec<Merge>> {
    let mut live = ws.to_vec();
    let mut rounds = Vec::new();
    while live.len() > 1 {
        let mut round = Vec::new();
        let mut next = Vec::new();
        for pair in live.chunks(2) {
            if let [a, b] = *pair {
                round.push(Merge { from: b, into: a });
            }
            next.push(pair[0]);
        }
        rounds.push(round);
        live = next;
    }
    rounds
}

/// Independent round lists run side by side: round `k` of the result is every list's
/// round `k`.
fn zip_rounds(lists: Vec<Vec<Vec<Merge>>>) -> Vec<Vec<Merge>> {
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![Vec::new(); n];
    for l in lists {
        for (k, r) in l.into_iter().enumerate() {
            out[k].extend(r);
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

/// Rounds across socket leaders: each round pairs every live socket, the root's first, with
/// the live socket it is best connected to (highest link bandwidth, else lowest latency);
/// the socket nearer the root's in the list survives.
fn across_sockets(
    topo: &Topology,
    mut live: Vec<(usize, Option<SocketId>)>,
    root_socket: Option<SocketId>,
) -> Vec<Vec<Merge>> {
    live.sort_by_key(|&(_, s)| (s != root_socket || s.is_none(), s.map(|x| x.0)));
    let score = |a: Option<SocketId>, b: Option<SocketId>| -> (f64, f64) {
        match (a, b) {
            (Some(a), Some(b)) => (
                topoprobe_place::sockets::link_bandwidth(topo, b, a).unwrap_or(0.0),
                -topo.latency(a, b).unwrap_or(f64::INFINITY),
            ),
            _ => (0.0, f64::NEG_INFINITY),
        }
    };
    let mut rounds = Vec::new();
    while live.len() > 1 {
        let mut taken = vec![false; live.len()];
        let mut round = Vec::new();
        let mut next = Vec::new();
        for i in 0..live.len() {
            if taken[i] {
                continue;
            }
            taken[i] = true;
            let best = (i + 1..live.len()).filter(|&j| !taken[j]).max_by(|&x, &y| {
                let (a, b) = (score(live[i].1, live[x].1), score(live[i].1, live[y].1));
                a.0.total_cmp(&b.0)
                    .then(a.1.total_cmp(&b.1))
                    .then(y.cmp(&x))
            });
            if let Some(j) = best {
                taken[j] = true;
                round.push(Merge {
                    from: live[j].0,
                    into: live[i].0,
                });
            }
            next.push(live[i]);
        }
        rounds.push(round);
        live = next;
    }
    rounds
}
