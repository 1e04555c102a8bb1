//! The machine as the balancer's rules see it: for every CPU its core, innermost cache
//! group, socket and memory node, from the measured topology (or a flat machine without
//! one).

use std::collections::HashMap;

use topoprobe_model::Topology;

/// Where a CPU sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Its core (SMT siblings share it).
    pub core: usize,
    /// Its innermost group of cores (a CCX, a cluster); the socket when there is none.
    pub group: usize,
    /// Cores in that group.
    pub group_cores: usize,
    /// Its socket.
    pub socket: usize,
    /// Its memory node (OS number), when known.
    pub node: Option<u32>,
}

/// Every CPU's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    cpus: Vec<u32>,
    places: HashMap<u32, Place>,
}

impl Layout {
    /// The layout of a measured topology.
    #[must_use]
    pub fn from_topology(topo: &Topology) -> Self {
        let mut places = HashMap::new();
        let mut cpus = Vec::new();
        let groups = topo.groups();
        for ctx in topo.contexts() {
            let group = topo.groups_of(ctx.id).first().copied();
            let (group_id, group_cores) = match group {
                Some(g) => (g.index(), groups[g.index()].cores.len()),
                None => (
                    groups.len() + ctx.socket.index(),
                    topo.socket_cores(ctx.socket).len(),
                ),
            };
            let node = topo
                .local_node(ctx.id)
                .and_then(|n| topo.nodes().get(n.index()))
                .and_then(|n| n.os_id);
            cpus.push(ctx.os_id);
            places.insert(
                ctx.os_id,
                Place {
                    core: ctx.core.index(),
                    group: group_id,
                    group_cores: group_cores.max(1),
                    socket: ctx.socket.index(),
                    node,
                },
            );
        }
        cpus.sort_unstable();
        Self { cpus, places }
    }

    /// A flat machine: every CPU its own core, all in one group, socket and node 0.
    #[must_use]
    pub fn flat(cpus: &[u32]) -> Self {
        let mut sorted = cpus.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let n = sorted.len().max(1);
        let places = sorted
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                (
                    c,
                    Place {
                        core: i,
                        group: 0,
                        group_cores: n,
                        socket: 0,
                        node: Some(0),
                    },
                )
            })
            .collect();
        Self {
            cpus: sorted,
            places,
        }
    }

    /// The CPUs, in increasing order.
    #[must_use]
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Where CPU `cpu` sits.
    #[must_use]
    pub fn place(&self, cpu: u32) -> Option<Place> {
        self.places.get(&cpu).copied()
    }

    /// The CPUs of memory node `node`.
    #[must_use]
    pub fn node_cpus(&self, node: u32) -> Vec<u32> {
        self.cpus
            .iter()
            .copied()
            .filter(|&c| self.place(c).and_then(|p| p.node) == Some(node))
            .collect()
    }
}
