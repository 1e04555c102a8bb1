//! Where each CPU of a node sits: its core, its group (a cache group or cluster, when the
//! description has one) and its socket — the part of a node's description that explains
//! the communication layers. Each node's first rank reduces its description (or the OS's
//! view) to a [`NodeLayout`] and sends it to rank 0, so a cluster never ships whole
//! descriptions around.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use topoprobe_model::{ContextId, OsView, Topology};

/// Largest number of CPUs a layout may describe (checked when one is received).
pub const MAX_LAYOUT_CPUS: usize = 1 << 16;

/// Where one CPU sits in its node. Identifiers are only meaningful within one layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    /// The core (SMT siblings share it).
    pub core: usize,
    /// The groups between core and socket that hold it (cache groups, clusters), innermost
    /// first; empty when the description has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<usize>,
    /// The socket (package).
    pub socket: usize,
}

/// The CPUs of one node and where they sit, with where that knowledge comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NodeLayout {
    /// Where the layout comes from: `description FILE`, `measured`, `OS view (sysfs)`, or
    /// `unavailable: REASON`.
    pub source: String,
    /// Every CPU of the node by its operating-system number.
    pub cpus: BTreeMap<u32, CpuPlace>,
}

impl NodeLayout {
    /// A layout that knows nothing, and why.
    #[must_use]
    pub fn unavailable(reason: &str) -> Self {
        Self {
            source: format!("unavailable: {reason}"),
            cpus: BTreeMap::new(),
        }
    }

    /// The layout of a topology description (cores, groups and sockets as inferred and
    /// stored), labelled with `source`.
    #[must_use]
    pub fn from_topology(topo: &Topology, source: &str) -> Self {
        let cpus = topo
            .contexts()
            .iter()
            .map(|c| {
                let groups = topo
                    .groups_of(ContextId(c.id.0))
                    .into_iter()
                    .map(|g| g.0)
                    .collect();
                (
                    c.os_id,
                    CpuPlace {
                        core: c.core.0,
                        groups,
                        socket: c.socket.0,
                    },
                )
            })
            .collect();
        Self {
            source: source.to_string(),
            cpus,
        }
    }

    /// The layout the operating system reports (packages and cores; no groups), labelled
    /// `OS view (sysfs)`.
    #[must_use]
    pub fn from_os_view(view: &OsView) -> Self {
        let mut cores = BTreeMap::new();
        let mut sockets = BTreeMap::new();
        let cpus = view
            .cpus
            .iter()
            .map(|c| {
                let next = cores.len();
                let core = *cores.entry(c.core_key()).or_insert(next);
                let next = sockets.len();
                let socket = *sockets.entry(c.package).or_insert(next);
                (
                    c.id,
                    CpuPlace {
                        core,
                        groups: Vec::new(),
                        socket,
                    },
                )
            })
            .collect();
        Self {
            source: "OS view (sysfs)".into(),
            cpus,
        }
    }

    /// Whether the layout knows no CPU.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// The places of all `cpus`, or `None` when one of them is unknown or the list is empty.
    fn places<'a>(&'a self, cpus: &[u32]) -> Option<Vec<&'a CpuPlace>> {
        if cpus.is_empty() {
            return None;
        }
        cpus.iter().map(|c| self.cpus.get(c)).collect()
    }

    /// The socket holding all of `cpus`, when one does.
    #[must_use]
    pub fn socket_of(&self, cpus: &[u32]) -> Option<usize> {
        let p = self.places(cpus)?;
        let s = p[0].socket;
        p.iter().all(|x| x.socket == s).then_some(s)
    }

    /// How close two sets of CPUs of this node are: the innermost component holding both
    /// (never [`Relation::InterNode`]).
    #[must_use]
    pub fn relation(&self, a: &[u32], b: &[u32]) -> Relation {
        let (Some(pa), Some(pb)) = (self.places(a), self.places(b)) else {
            return Relation::Node;
        };
        let all: Vec<&CpuPlace> = pa.iter().chain(&pb).copied().collect();
        let same = |f: &dyn Fn(&CpuPlace) -> usize| all.iter().all(|p| f(p) == f(all[0]));
        let mut both: Vec<u32> = a.iter().chain(b).copied().collect();
        both.sort_unstable();
        both.dedup();
        if both.len() == 1 {
            return Relation::Cpu;
        }
        if same(&|p| p.core) {
            return Relation::Core;
        }
        let shared_group = all[0]
            .groups
            .iter()
            .any(|g| all.iter().all(|p| p.groups.contains(g)));
        if shared_group && same(&|p| p.socket) {
            return Relation::Group;
        }
        if same(&|p| p.socket) {
            return Relation::Socket;
        }
        match (self.socket_of(a), self.socket_of(b)) {
            (Some(x), Some(y)) if x != y => Relation::OtherSocket,
            _ => Relation::Node,
        }
    }
}

/// How two ranks are related: the innermost part of the cluster that holds both. The
/// variants are ordered from the closest to the farthest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Both run on the same single CPU.
    Cpu,
    /// Both lie within one core (SMT siblings).
    Core,
    /// Both lie within one group of a socket (a cache group, a cluster).
    Group,
    /// Both lie within one socket.
    Socket,
    /// Each lies within one socket of the node, and the sockets differ.
    OtherSocket,
    /// Only the node is known to hold both: their CPUs are unknown (no description), or
    /// one of them may run on several sockets (not bound).
    Node,
    /// They run on different nodes: their messages cross the network.
    InterNode,
}

impl Relation {
    /// Every relation, closest first.
    pub const ALL: [Self; 7] = [
        Self::Cpu,
        Self::Core,
        Self::Group,
        Self::Socket,
        Self::OtherSocket,
        Self::Node,
        Self::InterNode,
    ];

    /// How a layer explained by this relation is named (`same socket`, `inter-node`).
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Cpu => "same CPU",
            Self::Core => "same core",
            Self::Group => "same group",
            Self::Socket => "same socket",
            Self::OtherSocket => "other socket",
            Self::Node => "same node",
            Self::InterNode => "inter-node",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::OsCpu;

    /// Two sockets of two cores of two SMT threads: CPU `i` and `i + 4` are siblings.
    fn layout() -> NodeLayout {
        let cpus = (0..8)
            .map(|c: u32| {
                (
                    c,
                    CpuPlace {
                        core: (c % 4) as usize,
                        groups: vec![(c % 4 / 2) as usize],
                        socket: (c % 4 / 2) as usize,
                    },
                )
            })
            .collect();
        NodeLayout {
            source: "test".into(),
            cpus,
        }
    }

    #[test]
    fn relation_is_the_innermost_common_component() {
        let l = layout();
        assert_eq!(l.relation(&[1], &[1]), Relation::Cpu);
        assert_eq!(l.relation(&[1], &[5]), Relation::Core);
        assert_eq!(l.relation(&[0], &[1]), Relation::Group);
        assert_eq!(l.relation(&[0], &[2]), Relation::OtherSocket);
        assert_eq!(l.relation(&[0, 1], &[5]), Relation::Group);
        // A rank allowed on both sockets: only the node is known.
        assert_eq!(l.relation(&[0, 2], &[1]), Relation::Node);
        assert_eq!(l.relation(&[0], &[9]), Relation::Node);
        assert_eq!(l.relation(&[], &[1]), Relation::Node);
        assert_eq!(
            NodeLayout::unavailable("x").relation(&[0], &[1]),
            Relation::Node
        );
    }

    #[test]
    fn os_view_gives_packages_and_cores() {
        let cpu = |id: u32, package: i64, core: i64| OsCpu {
            id,
            package,
            die: None,
            core,
            cluster: None,
            thread_siblings: vec![id],
            core_siblings: vec![],
            node: None,
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        };
        let view = OsView {
            cpus: vec![cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 1, 0), cpu(3, 0, 0)],
            ..OsView::default()
        };
        let l = NodeLayout::from_os_view(&view);
        assert_eq!(l.relation(&[0], &[3]), Relation::Core);
        assert_eq!(l.relation(&[0], &[1]), Relation::Socket);
        // Core id 0 of package 1 is not core 0 of package 0.
        assert_eq!(l.relation(&[0], &[2]), Relation::OtherSocket);
    }
}
