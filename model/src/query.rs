//! Queries over a topology, at least as rich as libmctop's getters.

use crate::components::{LatencyLevel, Member, Role};
use crate::error::ModelError;
use crate::ids::{ContextId, CoreId, GroupId, NodeId, SocketId};
use crate::topology::Topology;

/// Any component of a topology, for queries that accept several kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    /// A hardware context.
    Context(ContextId),
    /// A core.
    Core(CoreId),
    /// A group.
    Group(GroupId),
    /// A socket.
    Socket(SocketId),
}

impl From<ContextId> for Component {
    fn from(id: ContextId) -> Self {
        Self::Context(id)
    }
}
impl From<CoreId> for Component {
    fn from(id: CoreId) -> Self {
        Self::Core(id)
    }
}
impl From<GroupId> for Component {
    fn from(id: GroupId) -> Self {
        Self::Group(id)
    }
}
impl From<SocketId> for Component {
    fn from(id: SocketId) -> Self {
        Self::Socket(id)
    }
}

/// A level of the hierarchy to iterate over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Hardware contexts.
    Context,
    /// Cores.
    Core,
    /// Groups at the given depth (1 = directly inside a socket).
    Group(usize),
    /// Sockets.
    Socket,
}

impl Topology {
    /// Number of hardware contexts.
    #[must_use]
    pub fn num_contexts(&self) -> usize {
        self.d.contexts.len()
    }

    /// Number of cores.
    #[must_use]
    pub fn num_cores(&self) -> usize {
        self.d.cores.len()
    }

    /// Number of groups (all depths).
    #[must_use]
    pub fn num_groups(&self) -> usize {
        self.d.groups.len()
    }

    /// Number of sockets.
    #[must_use]
    pub fn num_sockets(&self) -> usize {
        self.d.sockets.len()
    }

    /// Number of memory nodes (0 when unknown).
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.d.nodes.len()
    }

    /// The node whose operating-system number is `os_id`. Nodes are indexed in the order
    /// the description lists them, which is not their OS numbering where numbers are
    /// sparse (nodes 0, 2 and 5 are `NodeId` 0, 1 and 2); a description that records no
    /// OS numbers (a matrix or `.mct` file) numbers its nodes by index.
    #[must_use]
    pub fn node_by_os_id(&self, os_id: u32) -> Option<NodeId> {
        if self.d.nodes.iter().all(|n| n.os_id.is_none()) {
            let i = os_id as usize;
            return (self.d.nodes.is_empty() || i < self.d.nodes.len()).then_some(NodeId(i));
        }
        self.d
            .nodes
            .iter()
            .find(|n| n.os_id == Some(os_id))
            .map(|n| n.id)
    }

    /// The operating-system number of node `n`, or its index where the description does
    /// not record one: how a node is named for people.
    #[must_use]
    pub fn node_os_number(&self, n: NodeId) -> u32 {
        self.d
            .nodes
            .get(n.0)
            .and_then(|x| x.os_id)
            .unwrap_or(n.0 as u32)
    }

    /// Number of memory nodes the description knows of: its nodes, or the nodes its memory
    /// section names when that is more (a `.mct` file's memory figures can name nodes that
    /// no socket is local to).
    #[must_use]
    pub fn num_known_nodes(&self) -> usize {
        let from_section = self.memory().map_or(0, |m| {
            m.latency
                .iter()
                .map(|l| l.node.0 + 1)
                .chain(m.bandwidth.iter().map(|b| b.node.0 + 1))
                .max()
                .unwrap_or(0)
        });
        self.num_nodes().max(from_section)
    }

    /// Number of latency levels (not counting level 0, a context with itself).
    #[must_use]
    pub fn num_levels(&self) -> usize {
        self.d.levels.len()
    }

    /// Deepest group nesting (0 when there are no groups).
    #[must_use]
    pub fn group_depth(&self) -> usize {
        self.d.groups.iter().map(|g| g.depth).max().unwrap_or(0)
    }

    /// Whether some core has more than one hardware context.
    #[must_use]
    pub fn has_smt(&self) -> bool {
        self.d.facts.smt.value
    }

    /// The largest number of contexts of a core (1 without SMT).
    #[must_use]
    pub fn contexts_per_core(&self) -> usize {
        self.d
            .cores
            .iter()
            .map(|c| c.contexts.len())
            .max()
            .unwrap_or(0)
    }

    /// Number of components at a level.
    #[must_use]
    pub fn count(&self, level: Level) -> usize {
        self.ids_at(level).len()
    }

    /// The components at a level, in id order.
    #[must_use]
    pub fn ids_at(&self, level: Level) -> Vec<Component> {
        match level {
            Level::Context => (0..self.num_contexts())
                .map(|i| Component::Context(ContextId(i)))
                .collect(),
            Level::Core => (0..self.num_cores())
                .map(|i| Component::Core(CoreId(i)))
                .collect(),
            Level::Group(depth) => self
                .d
                .groups
                .iter()
                .filter(|g| g.depth == depth)
                .map(|g| Component::Group(g.id))
                .collect(),
            Level::Socket => (0..self.num_sockets())
                .map(|i| Component::Socket(SocketId(i)))
                .collect(),
        }
    }

    /// The context with the given operating-system CPU number.
    #[must_use]
    pub fn context_by_os_id(&self, os_id: u32) -> Option<ContextId> {
        self.d
            .contexts
            .iter()
            .find(|c| c.os_id == os_id)
            .map(|c| c.id)
    }

    /// The core of a context.
    #[must_use]
    pub fn core_of(&self, ctx: ContextId) -> Option<CoreId> {
        self.d.contexts.get(ctx.0).map(|c| c.core)
    }

    /// The socket of a context.
    #[must_use]
    pub fn socket_of(&self, ctx: ContextId) -> Option<SocketId> {
        self.d.contexts.get(ctx.0).map(|c| c.socket)
    }

    /// The groups containing a context, innermost first.
    #[must_use]
    pub fn groups_of(&self, ctx: ContextId) -> Vec<GroupId> {
        let mut gs: Vec<&crate::components::Group> = self
            .d
            .groups
            .iter()
            .filter(|g| g.contexts.binary_search(&ctx).is_ok())
            .collect();
        gs.sort_by_key(|g| std::cmp::Reverse(g.depth));
        gs.into_iter().map(|g| g.id).collect()
    }

    /// The local memory node of a context (through its socket), when known.
    #[must_use]
    pub fn local_node(&self, ctx: ContextId) -> Option<NodeId> {
        let s = self.socket_of(ctx)?;
        self.d.sockets[s.0].local_node
    }

    /// The cores of a socket.
    #[must_use]
    pub fn socket_cores(&self, socket: SocketId) -> &[CoreId] {
        self.d
            .sockets
            .get(socket.0)
            .map_or(&[][..], |s| &s.cores[..])
    }

    /// The contexts of a socket.
    #[must_use]
    pub fn socket_contexts(&self, socket: SocketId) -> &[ContextId] {
        self.d
            .sockets
            .get(socket.0)
            .map_or(&[][..], |s| &s.contexts[..])
    }

    /// The contexts of a core.
    #[must_use]
    pub fn core_contexts(&self, core: CoreId) -> &[ContextId] {
        self.d
            .cores
            .get(core.0)
            .map_or(&[][..], |c| &c.contexts[..])
    }

    /// The contexts of any component.
    #[must_use]
    pub fn contexts_of(&self, c: Component) -> Vec<ContextId> {
        match c {
            Component::Context(x) if x.0 < self.num_contexts() => vec![x],
            Component::Context(_) => Vec::new(),
            Component::Core(x) => self.core_contexts(x).to_vec(),
            Component::Group(g) => self
                .d
                .groups
                .get(g.0)
                .map(|g| g.contexts.clone())
                .unwrap_or_default(),
            Component::Socket(s) => self.socket_contexts(s).to_vec(),
        }
    }

    /// The direct members of a socket or group, as components.
    #[must_use]
    pub fn members_of(&self, c: Component) -> Vec<Component> {
        let members: &[Member] = match c {
            Component::Socket(s) => self.d.sockets.get(s.0).map_or(&[][..], |s| &s.members[..]),
            Component::Group(g) => self.d.groups.get(g.0).map_or(&[][..], |g| &g.members[..]),
            Component::Core(core) => {
                return self
                    .core_contexts(core)
                    .iter()
                    .map(|&x| Component::Context(x))
                    .collect()
            }
            Component::Context(_) => &[],
        };
        members
            .iter()
            .map(|m| match *m {
                Member::Core(c) => Component::Core(c),
                Member::Group(g) => Component::Group(g),
            })
            .collect()
    }

    /// Normalized latency between two contexts (0 for a context with itself).
    #[must_use]
    pub fn context_latency(&self, a: ContextId, b: ContextId) -> Option<f64> {
        if a == b && a.0 < self.num_contexts() {
            return Some(0.0);
        }
        let m = &self.d.latency.normalized;
        m.get(a.0, b.0).or_else(|| m.get(b.0, a.0))
    }

    /// Latency between any two components: the median normalized latency over the pairs of
    /// distinct contexts, one in each (libmctop's `mctop_get_latency`).
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::NoSuchComponent`] when a component does not exist, or when no
    /// pair of distinct contexts has a latency.
    pub fn latency(
        &self,
        a: impl Into<Component>,
        b: impl Into<Component>,
    ) -> Result<f64, ModelError> {
        let (a, b) = (a.into(), b.into());
        let ca = self.existing_contexts(a)?;
        let cb = self.existing_contexts(b)?;
        let mut v: Vec<f64> = Vec::new();
        for &x in &ca {
            for &y in &cb {
                if x != y {
                    if let Some(l) = self.context_latency(x, y) {
                        v.push(l);
                    }
                }
            }
        }
        match crate::median_in_place(&mut v) {
            Some(m) => Ok(m),
            None if ca == cb && ca.len() == 1 => Ok(0.0),
            None => Err(ModelError::NoSuchComponent(format!(
                "no latency between {a:?} and {b:?}"
            ))),
        }
    }

    fn existing_contexts(&self, c: Component) -> Result<Vec<ContextId>, ModelError> {
        let v = self.contexts_of(c);
        if v.is_empty() {
            Err(ModelError::NoSuchComponent(format!("{c:?}")))
        } else {
            Ok(v)
        }
    }

    /// The `k` contexts closest to `ctx` by latency (ties broken by id), `ctx` excluded.
    #[must_use]
    pub fn closest_contexts(&self, ctx: ContextId, k: usize) -> Vec<ContextId> {
        let mut others: Vec<(f64, ContextId)> = (0..self.num_contexts())
            .map(ContextId)
            .filter(|&o| o != ctx)
            .map(|o| (self.context_latency(ctx, o).unwrap_or(f64::INFINITY), o))
            .collect();
        others.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        others.into_iter().take(k).map(|(_, o)| o).collect()
    }

    /// The `k` sockets closest to `socket` by latency (ties broken by id), `socket` excluded.
    #[must_use]
    pub fn closest_sockets(&self, socket: SocketId, k: usize) -> Vec<SocketId> {
        let mut others: Vec<(f64, SocketId)> = (0..self.num_sockets())
            .map(SocketId)
            .filter(|&o| o != socket)
            .map(|o| (self.latency(socket, o).unwrap_or(f64::INFINITY), o))
            .collect();
        others.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        others.into_iter().take(k).map(|(_, o)| o).collect()
    }

    /// The latency level of a context pair (0 for a context with itself).
    #[must_use]
    pub fn level_of(&self, a: ContextId, b: ContextId) -> Option<usize> {
        if a == b {
            return Some(0);
        }
        let l = self.context_latency(a, b)?;
        self.d
            .levels
            .iter()
            .min_by(|x, y| {
                (x.latency.median - l)
                    .abs()
                    .total_cmp(&(y.latency.median - l).abs())
            })
            .map(|x| x.id)
    }

    /// The latency levels with the given role.
    #[must_use]
    pub fn levels_with_role(&self, role: Role) -> Vec<&LatencyLevel> {
        self.d.levels.iter().filter(|l| l.role == role).collect()
    }

    /// The largest latency between any two of the given contexts (the "max latency" of a
    /// placement; libmctop uses it as the backoff quantum).
    #[must_use]
    pub fn max_latency(&self, contexts: &[ContextId]) -> Option<f64> {
        let mut best: Option<f64> = None;
        for (i, &a) in contexts.iter().enumerate() {
            for &b in &contexts[i + 1..] {
                if let Some(l) = self.context_latency(a, b) {
                    best = Some(best.map_or(l, |x: f64| x.max(l)));
                }
            }
        }
        best
    }
}
