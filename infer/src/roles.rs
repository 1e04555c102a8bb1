//! Roles (MCTOP-ALG step 4): which tree nodes are cores, groups and sockets.
//!
//! Two decisions rest on physical bounds rather than on the clustering: SMT siblings share
//! a first-level cache, so their latency is far below any cross-core latency (at most
//! [`SMT_MAX_NS`]); and a socket boundary costs a chip-to-chip link (at least
//! [`SOCKET_MIN_NS`] unless the sockets are otherwise clearly separated). Both bounds are
//! converted to cycles with the given (or default) clock frequency, and both decisions can
//! be given as hints instead. The SMT decision is made once per latency level
//! ([`smt`]); the sockets come in 1, 2, 4 or 8 near-equal parts ([`sockets`]).

mod hints;
pub(crate) mod smt;
pub(crate) mod sockets;

use topoprobe_model::Origin;

use crate::options::InferOptions;
use crate::table::Table;
use crate::tree::ComponentTree;

pub(crate) use sockets::SocketChoice;

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
    /// When a hint contradicts what the latencies clearly show: what they show, what they
    /// give without the hint and what became of it (a `hint_contradicted` warning of the
    /// result).
    pub(crate) contradiction: Option<String>,
}

/// The roles of all tree nodes.
#[derive(Debug, Clone)]
pub(crate) struct Roles {
    pub(crate) kind: Vec<Kind>,
    /// Tree nodes that are sockets (a single socket may be the root).
    pub(crate) sockets: Vec<usize>,
    pub(crate) smt: Decision,
    pub(crate) socket: Decision,
    /// Notes on single cores (garbled siblings taken as one core, the operating system's
    /// siblings): warnings of the result.
    pub(crate) core_notes: Vec<String>,
    /// Pairs of contexts to make cores of their kind (garbled siblings that are no node of
    /// the tree yet): the caller inserts them and assigns again.
    pub(crate) pairs: Vec<Vec<usize>>,
}

/// What the roles are decided from besides the tree.
pub(crate) struct Context<'a> {
    pub(crate) t: &'a Table,
    pub(crate) opts: &'a InferOptions,
    /// The thresholds between the latency classes (what makes a latency level).
    pub(crate) thresholds: &'a [f64],
    /// The profile discrepancy of every pair of contexts (row-major), when computed.
    pub(crate) profile_distance: Option<&'a crate::profiles::Discrepancy>,
}

/// "as given" or "as the file says".
pub(crate) fn given(origin: Origin) -> &'static str {
    match origin {
        Origin::File => "as the file says",
        Origin::Os => "as the OS says",
        Origin::Measured => "as measured",
        _ => "as given",
    }
}

/// "given" or "read from the file".
pub(crate) fn given_past(origin: Origin) -> &'static str {
    match origin {
        Origin::File => "read from the file",
        Origin::Os => "told by the OS",
        Origin::Measured => "measured by the SMT probe",
        _ => "given",
    }
}

pub(crate) fn fmt_lat(v: f64, opts: &InferOptions) -> String {
    format!("{v:.1} {}", opts.units)
}

/// Latencies from a node's members to the rest of its parent.
pub(crate) fn external(t: &Table, tree: &ComponentTree, node: usize) -> Vec<f64> {
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

/// Decides cores, sockets and groups. `sockets` fixes the sockets to sets decided before,
/// with their decision. Returns the roles and the socket choice; when the chosen sockets
/// are not all nodes of the tree (clusters of its parts), the roles hold a single socket
/// and the caller inserts the sets into the tree and assigns again.
pub(crate) fn assign(
    cx: &Context<'_>,
    tree: &ComponentTree,
    sockets: Option<&SocketChoice>,
) -> (Roles, SocketChoice) {
    let mut kind = vec![Kind::None; tree.nodes.len()];
    let (smt, core_notes, pairs) = smt::decide(cx, tree, &mut kind);
    let choice = match sockets {
        Some(fixed) => fixed.clone(),
        None => sockets::decide(cx, tree, &kind),
    };
    let socket_nodes = choice.nodes(tree).unwrap_or_else(|| vec![0]);
    let socket = choice.decision.clone();
    for &s in &socket_nodes {
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
            if kind[q] == Kind::Socket || socket_nodes.contains(&q) {
                inside = true;
                break;
            }
            if kind[q] == Kind::Core {
                break;
            }
            p = tree.nodes[q].parent;
        }
        kind[id] = if inside { Kind::Group } else { Kind::Above };
    }
    (
        Roles {
            kind,
            sockets: socket_nodes,
            smt,
            socket,
            core_notes,
            pairs,
        },
        choice,
    )
}
