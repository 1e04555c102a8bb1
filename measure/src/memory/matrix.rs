//! Who measures the node × node matrices and in which order: the initiators (one per node
//! with CPUs, else one per socket), the targets (every node with memory, memory-only nodes
//! included), and the pairs ordered so that a budget that cannot hold them all still
//! measures one pair of every distance class first, then every initiator's own node, then
//! the others.

use topoprobe_model::MatrixInitiator;

use crate::plan::Shape;

/// The initiators of the matrices on `shape`: one per node that has CPUs of the shape
/// (its CPUs, the first of them chases), else one per socket (its local node, if any).
#[must_use]
pub fn initiators(shape: &Shape) -> Vec<MatrixInitiator> {
    let socket_of = |cpu: u32| shape.sockets.iter().position(|s| s.cpus.contains(&cpu));
    let by_node: Vec<MatrixInitiator> = shape
        .nodes
        .iter()
        .filter_map(|n| {
            // The socket's own order (one context of every core first).
            let first = n.cpus.iter().copied().find_map(socket_of)?;
            let cpus: Vec<u32> = shape.sockets[first]
                .cpus
                .iter()
                .copied()
                .filter(|c| n.cpus.contains(c))
                .collect();
            Some(MatrixInitiator {
                name: format!("node {}", n.id),
                socket: first,
                node: Some(n.id),
                cpus,
            })
        })
        .collect();
    if !by_node.is_empty() {
        return by_node;
    }
    shape
        .sockets
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.cpus.is_empty())
        .map(|(i, s)| MatrixInitiator {
            name: format!("socket {i}"),
            socket: i,
            node: s.local_node,
            cpus: s.cpus.clone(),
        })
        .collect()
}

/// The targets: OS numbers of the nodes with memory (a node whose memory is not known
/// counts), or node 0 when the OS lists no node.
#[must_use]
pub fn targets(shape: &Shape) -> Vec<u32> {
    let v: Vec<u32> = shape
        .nodes
        .iter()
        .filter(|n| n.memory_bytes != Some(0))
        .map(|n| n.id)
        .collect();
    if v.is_empty() && shape.nodes.is_empty() {
        vec![0]
    } else {
        v
    }
}

/// Distance from initiator `i` to the node `target` in the OS's table (from the
/// initiator's node, else its socket's local node); 10 to its own node and 20 to the
/// others without a table.
#[must_use]
pub fn distance(shape: &Shape, i: &MatrixInitiator, target: u32) -> u32 {
    let index = |id: u32| shape.nodes.iter().position(|n| n.id == id);
    let Some(t) = index(target) else {
        return 10;
    };
    match i.node.and_then(index) {
        Some(from) => shape.nodes[from]
            .distances
            .get(t)
            .copied()
            .unwrap_or(if from == t { 10 } else { 20 }),
        None => shape.distance(i.socket, t),
    }
}

/// Every (initiator, target) pair as indices into `inits` and `targets`, ordered: one per
/// distance class first, then each initiator's own node, then the rest; and how many lead
/// (one per distance class).
#[must_use]
pub fn ordered_pairs(
    shape: &Shape,
    inits: &[MatrixInitiator],
    targets: &[u32],
) -> (Vec<(usize, usize)>, usize) {
    let all: Vec<(usize, usize)> = (0..inits.len())
        .flat_map(|i| (0..targets.len()).map(move |t| (i, t)))
        .collect();
    let mut out = Vec::with_capacity(all.len());
    let mut classes = Vec::new();
    for &(i, t) in &all {
        let d = distance(shape, &inits[i], targets[t]);
        if !classes.contains(&d) {
            classes.push(d);
            out.push((i, t));
        }
    }
    let representatives = out.len();
    for &(i, t) in &all {
        if inits[i].node == Some(targets[t]) && !out.contains(&(i, t)) {
            out.push((i, t));
        }
    }
    let mut seen = vec![false; all.len()];
    for &(i, t) in &out {
        seen[i * targets.len() + t] = true;
    }
    for (k, p) in all.into_iter().enumerate() {
        if !seen[k] {
            out.push(p);
        }
    }
    (out, representatives)
}
