//! Roles (MCTOP-ALG step 4): which tree nodes are cores, groups and sockets.
//!
//! Two decisions rest on physical bounds rather than on the clustering: SMT siblings share
//! a first-level cache, so their latency is far below any cross-core latency (at most
//! [`SMT_MAX_NS`]); and a socket boundary costs a chip-to-chip link (at least
//! [`SOCKET_MIN_NS`] unless the sockets are otherwise clearly separated). Both bounds are
//! converted to cycles with the given (or default) clock frequency, and both decisions can
//! be given as hints instead.

use topoprobe_model::Origin;

use crate::options::InferOptions;
use crate::table::{median, quantile, Table};
use crate::tree::ComponentTree;

/// Largest median latency (ns) between SMT siblings.
pub(crate) const SMT_MAX_NS: f64 = 20.0;
/// Smallest cross-socket latency (ns) for sockets that are less than [`SOCKET_MAX_RATIO`]
/// times slower than their insides.
pub(crate) const SOCKET_MIN_NS: f64 = 100.0;
/// Cross-socket latency (ns) that makes sockets whatever the ratio.
pub(crate) const SOCKET_SURE_NS: f64 = 250.0;
/// Largest ratio of cross-socket to in-socket latency for sockets below [`SOCKET_SURE_NS`].
pub(crate) const SOCKET_MAX_RATIO: f64 = 3.5;
/// Fewest cores a component needs to be taken for a socket without a hint.
pub(crate) const SOCKET_MIN_CORES: usize = 4;
/// Relative margin inside which a decision is reported as unresolved.
const MARGIN: f64 = 0.1;

/// What a tree node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A core with several contexts.
    Core,
    /// A group inside a socket.
    Group,
    /// A socket.
    Socket,
    /// A set above the sockets (joins several sockets).
    Above,
    /// Inside a core or otherwise without a role.
    None,
}

/// A decision with its origin, confidence and, when unsure, the reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub(crate) origin: Origin,
    pub(crate) confidence: f64,
    pub(crate) basis: String,
    pub(crate) unresolved: Option<String>,
}

/// The roles of all tree nodes.
#[derive(Debug, Clone)]
pub(crate) struct Roles {
    pub(crate) kind: Vec<Kind>,
    /// ComponentTree nodes that are sockets (a single socket may be the root).
    pub(crate) sockets: Vec<usize>,
    pub(crate) smt: Decision,
    pub(crate) socket: Decision,
}

/// "as given" or "as the file says".
fn given(origin: Origin) -> &'static str {
    match origin {
        Origin::File => "as the file says",
        Origin::Os => "as the OS says",
        Origin::Measured => "as measured",
        _ => "as given",
    }
}

/// "given" or "read from the file".
fn given_past(origin: Origin) -> &'static str {
    match origin {
        Origin::File => "read from the file",
        Origin::Os => "told by the OS",
        Origin::Measured => "measured by the SMT probe",
        _ => "given",
    }
}

fn fmt_lat(v: f64, opts: &InferOptions) -> String {
    format!("{v:.1} {}", opts.units)
}

/// Latencies from `members` to the rest of the node's parent.
fn external(t: &Table, tree: &ComponentTree, node: usize) -> Vec<f64> {
    let Some(p) = tree.nodes[node].parent else {
        return Vec::new();
    };
    let mine = &tree.nodes[node].members;
    let rest: Vec<usize> = tree.nodes[p]
        .members
        .iter()
        .copied()
        .filter(|x| mine.binary_search(x).is_err())
        .collect();
    t.between(mine, &rest)
}

/// Decides cores, sockets and groups.
pub(crate) fn assign(t: &Table, tree: &ComponentTree, opts: &InferOptions) -> Roles {
    let mut kind = vec![Kind::None; tree.nodes.len()];
    let smt = decide_smt(t, tree, opts, &mut kind);
    let (sockets, socket) = decide_sockets(t, tree, opts, &kind);
    for &s in &sockets {
        if kind[s] != Kind::Core {
            kind[s] = Kind::Socket;
        }
    }
    // Groups: nodes strictly inside a socket that are not cores; above: ancestors of sockets.
    for id in tree.top_down() {
        if kind[id] != Kind::None {
            continue;
        }
        let mut p = tree.nodes[id].parent;
        let mut inside = false;
        while let Some(q) = p {
            if kind[q] == Kind::Socket || sockets.contains(&q) {
                inside = true;
                break;
            }
            p = tree.nodes[q].parent;
        }
        kind[id] = if inside { Kind::Group } else { Kind::Above };
    }
    Roles {
        kind,
        sockets,
        smt,
        socket,
    }
}

fn decide_smt(t: &Table, tree: &ComponentTree, opts: &InferOptions, kind: &mut [Kind]) -> Decision {
    let bound = opts.ns_to_units(SMT_MAX_NS);
    // Candidates: innermost nodes of 2..=8 contexts, faster inside than to their neighbours.
    let mut cands: Vec<(usize, f64)> = Vec::new();
    // Innermost nodes whose contexts have no latency between them (missing or outliers):
    // cores if the measured nodes of the same size are.
    let mut unmeasured: Vec<usize> = Vec::new();
    for (id, node) in tree.nodes.iter().enumerate() {
        let size = node.members.len();
        if !node.children.is_empty() || !(2..=8).contains(&size) {
            continue;
        }
        let mut inside = t.within(&node.members);
        let mut outside = external(t, tree, id);
        if inside.is_empty() {
            unmeasured.push(id);
            continue;
        }
        let m = median(&mut inside);
        let hi = quantile(&mut inside, 0.95);
        if !outside.is_empty() && hi >= quantile(&mut outside, 0.05) {
            continue;
        }
        cands.push((id, m));
    }
    let lowest = cands.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let candidates = SmtCandidates {
        list: cands,
        lowest,
        bound,
    };
    let decision = smt_decision(tree, opts, kind, &candidates);
    let core_sizes: Vec<usize> = (0..kind.len())
        .filter(|&i| kind[i] == Kind::Core)
        .map(|i| tree.nodes[i].members.len())
        .collect();
    for id in unmeasured {
        if core_sizes.contains(&tree.nodes[id].members.len()) {
            kind[id] = Kind::Core;
        }
    }
    decision
}

/// Sets of contexts that may be cores, with their inside latency, for the SMT decision.
struct SmtCandidates {
    /// `(tree node, median latency inside)`.
    list: Vec<(usize, f64)>,
    /// The lowest of those latencies.
    lowest: f64,
    /// The SMT bound in the table's unit.
    bound: f64,
}

fn smt_decision(
    tree: &ComponentTree,
    opts: &InferOptions,
    kind: &mut [Kind],
    c: &SmtCandidates,
) -> Decision {
    let (cands, lowest, bound) = (&c.list[..], c.lowest, c.bound);
    match opts.smt {
        Some(false) if opts.smt_origin == Origin::Measured => {
            // The SMT probe saw no slowdown. Contexts far faster than the SMT bound are
            // siblings all the same (a probe loop that does not contend, a noisy host):
            // the latencies win and the disagreement is reported.
            let mut by_latency = kind.to_vec();
            let (d, chosen) = latency_decision(tree, opts, &mut by_latency, c);
            if chosen > 0 && lowest <= bound / 2.0 {
                kind.copy_from_slice(&by_latency);
                Decision {
                    confidence: 0.5,
                    unresolved: Some(format!(
                        "the SMT probe measured no slowdown between the fastest contexts, but they communicate at {} \
                         (SMT siblings are below about {}): kept as SMT; check with `topoprobe latency A B --smt`",
                        fmt_lat(lowest, opts),
                        fmt_lat(bound, opts)
                    )),
                    ..d
                }
            } else {
                Decision {
                    origin: opts.smt_origin,
                    confidence: 1.0,
                    basis: format!("SMT off, {}", given(opts.smt_origin)),
                    unresolved: None,
                }
            }
        }
        Some(false) => Decision {
            origin: opts.smt_origin,
            confidence: 1.0,
            basis: format!("SMT off, {}", given(opts.smt_origin)),
            unresolved: None,
        },
        Some(true) => {
            // Only sets fast enough to share a core (within three times the SMT bound): a
            // hint cannot make a socket of slow contexts one core.
            let fast: Vec<usize> = cands
                .iter()
                .filter(|&&(_, m)| m <= 3.0 * bound)
                .map(|&(id, _)| id)
                .collect();
            for &id in &fast {
                kind[id] = Kind::Core;
            }
            Decision {
                // A hint that could not be applied leaves the verdict to the latencies.
                origin: if fast.is_empty() { Origin::Inferred } else { opts.smt_origin },
                confidence: if fast.is_empty() { 0.3 } else { 1.0 },
                basis: format!("SMT on, {}; {} cores with several contexts", given(opts.smt_origin), fast.len()),
                unresolved: fast.is_empty().then(|| {
                    let fastest = if lowest.is_finite() {
                        format!("the fastest communicate at {}", fmt_lat(lowest, opts))
                    } else {
                        "none communicates distinctly faster than with the rest".to_string()
                    };
                    format!(
                        "SMT on was {}, but no set of contexts communicates fast enough to share a core \
                         ({fastest}; SMT siblings are below about {})",
                        given_past(opts.smt_origin),
                        fmt_lat(bound, opts)
                    )
                }),
            }
        }
        None => latency_decision(tree, opts, kind, c).0,
    }
}

/// The SMT verdict of the latencies alone, and the number of cores it found.
fn latency_decision(
    tree: &ComponentTree,
    opts: &InferOptions,
    kind: &mut [Kind],
    c: &SmtCandidates,
) -> (Decision, usize) {
    let (cands, lowest, bound) = (&c.list[..], c.lowest, c.bound);
    let mut chosen = 0;
    let mut unsure: Option<f64> = None;
    for &(id, m) in cands {
        let is_root = tree.nodes[id].parent.is_none();
        let limit = if is_root { bound / 2.0 } else { bound };
        if m <= limit {
            kind[id] = Kind::Core;
            chosen += 1;
        }
        if m > limit / (1.0 + 5.0 * MARGIN) && m < limit * (1.0 + 5.0 * MARGIN) {
            unsure = Some(m);
        }
    }
    let unresolved = unsure.map(|m| {
            format!(
                "contexts that communicate at {} could be SMT siblings or separate cores sharing a cache \
                 (SMT siblings are below about {}); latency alone cannot tell: pass --smt yes|no",
                fmt_lat(m, opts),
                fmt_lat(bound, opts)
            )
        });
    let (confidence, basis) = if chosen > 0 {
        (
                if unresolved.is_some() { 0.5 } else { 0.95 },
                format!(
                    "{chosen} sets of contexts communicate at {} (SMT level, below {}) and much slower with the rest",
                    fmt_lat(lowest, opts),
                    fmt_lat(bound, opts)
                ),
            )
    } else if cands.is_empty() {
        (
            0.9,
            "no set of contexts communicates distinctly faster than with the rest".to_string(),
        )
    } else {
        (
            if unresolved.is_some() { 0.5 } else { 0.85 },
            format!(
                "the fastest pairs communicate at {}, above the SMT bound of {}: separate cores",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            ),
        )
    };
    (
        Decision {
            origin: Origin::Inferred,
            confidence,
            basis,
            unresolved,
        },
        chosen,
    )
}

/// Number of cores in a set of contexts, given the core nodes.
fn core_count(tree: &ComponentTree, kind: &[Kind], node_members: &[usize]) -> usize {
    let mut in_core = 0;
    let mut cores = 0;
    for (id, k) in kind.iter().enumerate() {
        if *k == Kind::Core {
            let m = &tree.nodes[id].members;
            if m.iter().all(|x| node_members.binary_search(x).is_ok()) {
                cores += 1;
                in_core += m.len();
            }
        }
    }
    cores + node_members.len() - in_core
}

/// The parts of a node as tree-node ids or single contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Node(usize),
    Context(usize),
}

fn parts(tree: &ComponentTree, node: usize) -> Vec<Part> {
    let n = &tree.nodes[node];
    let mut p: Vec<Part> = n.children.iter().map(|&c| Part::Node(c)).collect();
    p.extend(n.leaves.iter().map(|&x| Part::Context(x)));
    p
}

fn part_members(tree: &ComponentTree, p: Part) -> Vec<usize> {
    match p {
        Part::Node(i) => tree.nodes[i].members.clone(),
        Part::Context(x) => vec![x],
    }
}

/// Median latency between different parts of a node.
fn between_parts(t: &Table, tree: &ComponentTree, ps: &[Part]) -> f64 {
    let sets: Vec<Vec<usize>> = ps.iter().map(|&p| part_members(tree, p)).collect();
    let mut v = Vec::new();
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            v.extend(t.between(&sets[i], &sets[j]));
        }
    }
    median(&mut v)
}

fn decide_sockets(
    t: &Table,
    tree: &ComponentTree,
    opts: &InferOptions,
    kind: &[Kind],
) -> (Vec<usize>, Decision) {
    let root_parts = parts(tree, 0);
    let inferred = infer_sockets(t, tree, opts, kind, &root_parts);
    let Some(want) = opts.sockets else {
        return inferred;
    };
    if want == 1 {
        return (
            vec![0],
            Decision {
                origin: opts.sockets_origin,
                confidence: 1.0,
                basis: format!("one socket, {}", given(opts.sockets_origin)),
                unresolved: (inferred.0.len() > 1).then(|| {
                    format!(
                        "one socket was {}, but the latencies show {} socket-like components ({})",
                        given_past(opts.sockets_origin),
                        inferred.0.len(),
                        inferred.1.basis
                    )
                }),
            },
        );
    }
    // Expand the slowest node until the cut has the wanted number of components.
    let mut frontier: Vec<usize> = vec![0];
    while frontier.len() < want {
        let mut best: Option<(usize, f64)> = None;
        for (i, &node) in frontier.iter().enumerate() {
            let ps = parts(tree, node);
            if kind[node] == Kind::Core
                || ps.len() < 2
                || ps.iter().any(|p| matches!(p, Part::Context(_)))
            {
                continue;
            }
            let lat = between_parts(t, tree, &ps);
            if best.is_none_or(|(_, l)| lat > l) {
                best = Some((i, lat));
            }
        }
        let Some((i, _)) = best else { break };
        let node = frontier.remove(i);
        for p in parts(tree, node) {
            if let Part::Node(c) = p {
                frontier.push(c);
            }
        }
    }
    if frontier.len() == want {
        frontier.sort_by_key(|&s| tree.nodes[s].members[0]);
        let agrees = inferred.0.len() == want;
        return (
            frontier,
            Decision {
                origin: opts.sockets_origin,
                confidence: 1.0,
                basis: format!(
                    "{want} sockets, {}{}",
                    given(opts.sockets_origin),
                    if agrees {
                        ", in agreement with the latencies"
                    } else {
                        ""
                    }
                ),
                unresolved: None,
            },
        );
    }
    let (socks, mut d) = inferred;
    d.unresolved = Some(format!(
        "{want} sockets were given, but the latencies do not split the machine into {want} components; \
         kept the inferred {} ({})",
        socks.len(),
        d.basis
    ));
    d.confidence = d.confidence.min(0.3);
    (socks, d)
}

fn infer_sockets(
    t: &Table,
    tree: &ComponentTree,
    opts: &InferOptions,
    kind: &[Kind],
    root_parts: &[Part],
) -> (Vec<usize>, Decision) {
    let single = |basis: String, unresolved: Option<String>, confidence: f64| {
        (
            vec![0],
            Decision {
                origin: Origin::Inferred,
                confidence,
                basis,
                unresolved,
            },
        )
    };
    if root_parts.len() < 2 || kind[0] == Kind::Core {
        return single("all contexts form one component".to_string(), None, 0.9);
    }
    let nodes: Vec<usize> = root_parts
        .iter()
        .filter_map(|p| match p {
            Part::Node(i) if kind[*i] != Kind::Core => Some(*i),
            _ => None,
        })
        .collect();
    if nodes.len() != root_parts.len() {
        return single(
            format!(
                "the top level joins {} components, some of them single cores rather than socket-sized sets: one socket",
                root_parts.len()
            ),
            None,
            0.85,
        );
    }
    let sizes: Vec<usize> = nodes.iter().map(|&i| tree.nodes[i].members.len()).collect();
    let min_cores = nodes
        .iter()
        .map(|&i| core_count(tree, kind, &tree.nodes[i].members))
        .min()
        .unwrap_or(0);
    let cross = between_parts(t, tree, root_parts);
    let inner = nodes
        .iter()
        .map(|&i| median(&mut t.within(&tree.nodes[i].members)))
        .fold(0.0_f64, f64::max);
    let ratio = cross / inner;
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let smallest = sizes.iter().copied().min().unwrap_or(0);
    // Sockets of a partially measured machine differ in size; clusters of very different
    // sizes (P- and E-core clusters) are not sockets.
    let equal = largest <= 2 * smallest;
    let unit = opts.ns_to_units(1.0);
    let rule = |min_ns: f64, sure_ns: f64, max_ratio: f64| -> bool {
        equal
            && min_cores >= SOCKET_MIN_CORES
            && ((cross >= min_ns * unit && ratio <= max_ratio) || cross >= sure_ns * unit)
    };
    let decision = rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO);
    let lo = 1.0 - MARGIN;
    let hi = 1.0 + MARGIN;
    let robust = [
        rule(SOCKET_MIN_NS * lo, SOCKET_SURE_NS, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS * hi, SOCKET_SURE_NS, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS * lo, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS * hi, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO * lo),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO * hi),
    ]
    .iter()
    .all(|&r| r == decision);
    let k = nodes.len();
    let facts = format!(
        "{k} components of {} contexts joined at {} ({ratio:.1}x their inside, {})",
        if equal {
            sizes[0].to_string()
        } else {
            format!("{:?}", sizes)
        },
        fmt_lat(cross, opts),
        fmt_lat(inner, opts)
    );
    let unresolved = (!robust).then(|| {
        format!(
            "{facts}: too close to the bounds to tell sockets from dies of one socket by latency alone \
             (sockets: at least {} and at most {SOCKET_MAX_RATIO}x, or at least {}); pass --sockets N",
            fmt_lat(SOCKET_MIN_NS * unit, opts),
            fmt_lat(SOCKET_SURE_NS * unit, opts)
        )
    });
    let confidence = if robust { 0.8 } else { 0.4 };
    if decision {
        let mut socks = nodes;
        socks.sort_by_key(|&s| tree.nodes[s].members[0]);
        (
            socks,
            Decision {
                origin: Origin::Inferred,
                confidence,
                basis: format!("{facts}: sockets"),
                unresolved,
            },
        )
    } else {
        single(
            format!("{facts}: groups of one socket"),
            unresolved,
            confidence,
        )
    }
}
