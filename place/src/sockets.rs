//! Socket order and memory-bandwidth figures used by the policies.

use topoprobe_model::{Access, SocketId, Threads, Topology};

/// Read bandwidth of `socket` to its local node with `threads`, GB/s, when measured.
#[must_use]
pub fn local_bandwidth(topo: &Topology, socket: SocketId, threads: Threads) -> Option<f64> {
    let node = topo.sockets().get(socket.index())?.local_node?;
    topo.memory()?
        .bandwidth_of(socket, node, Access::Read, threads)
}

/// The figure that ranks sockets by local memory bandwidth: one thread's read bandwidth to
/// the local node (what a socket's first threads get; libmctop's `Mem_bw1`), else the
/// read bandwidth with all contexts.
#[must_use]
pub fn best_local_bandwidth(topo: &Topology, socket: SocketId) -> Option<f64> {
    local_bandwidth(topo, socket, Threads::Single)
        .or_else(|| local_bandwidth(topo, socket, Threads::AllContexts))
}

/// Read bandwidth from `from`'s contexts to `to`'s local node (all contexts), GB/s.
#[must_use]
pub fn link_bandwidth(topo: &Topology, from: SocketId, to: SocketId) -> Option<f64> {
    let node = topo.sockets().get(to.index())?.local_node?;
    topo.memory()?
        .bandwidth_of(from, node, Access::Read, Threads::AllContexts)
}

/// Compares two optional bandwidths, larger first, unknown last.
fn larger_first(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

/// The given sockets in placement order: first the one with the best local memory
/// bandwidth (ties, or no bandwidth measured: the lowest id), then the others by latency
/// from it, then by the bandwidth from it to their local node, then by their own local
/// bandwidth, then by id.
#[must_use]
pub fn socket_order(topo: &Topology, candidates: &[SocketId]) -> Vec<SocketId> {
    let mut sorted = candidates.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let Some(&start) = sorted.iter().min_by(|&&a, &&b| {
        larger_first(best_local_bandwidth(topo, a), best_local_bandwidth(topo, b)).then(a.cmp(&b))
    }) else {
        return Vec::new();
    };
    let mut rest: Vec<(f64, SocketId)> = sorted
        .iter()
        .filter(|&&s| s != start)
        .map(|&s| (topo.latency(start, s).unwrap_or(f64::INFINITY), s))
        .collect();
    rest.sort_by(|(la, a), (lb, b)| {
        la.total_cmp(lb)
            .then_with(|| {
                larger_first(
                    link_bandwidth(topo, start, *a),
                    link_bandwidth(topo, start, *b),
                )
            })
            .then_with(|| {
                larger_first(
                    best_local_bandwidth(topo, *a),
                    best_local_bandwidth(topo, *b),
                )
            })
            .then(a.cmp(b))
    });
    std::iter::once(start)
        .chain(rest.into_iter().map(|(_, s)| s))
        .collect()
}
