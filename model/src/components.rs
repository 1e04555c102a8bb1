//! The components of a topology: hardware contexts, cores, groups, sockets, memory nodes,
//! interconnects and latency levels.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ids::{ContextId, CoreId, GroupId, NodeId, SocketId};
use crate::matrix::LatencySummary;

/// What a latency level connects: named after the smallest component that contains both
/// ends of the pairs at that level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Hardware contexts of one core (SMT siblings).
    Smt,
    /// Cores of one group (a CCX, a cluster, a tile, a die...).
    Group,
    /// Cores or groups of one socket.
    Socket,
    /// Contexts of different sockets.
    CrossSocket,
}

impl Role {
    /// Lower-case name as written in files (`smt`, `group`, `socket`, `cross_socket`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Smt => "smt",
            Self::Group => "group",
            Self::Socket => "socket",
            Self::CrossSocket => "cross_socket",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A latency level: a cluster of similar latencies, summarized, with its role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyLevel {
    /// Level number, from 1 (the lowest latency) upwards; 0 is a context with itself.
    pub id: usize,
    /// What the level connects.
    pub role: Role,
    /// Smallest, median and largest latency of the pairs at this level.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// The component directly containing a core or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parent {
    /// A socket.
    Socket(SocketId),
    /// A group.
    Group(GroupId),
}

/// A direct member of a socket or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Member {
    /// A core.
    Core(CoreId),
    /// A group.
    Group(GroupId),
}

/// Why a group exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Its members communicate faster with each other than with anything outside.
    LatencyGap,
    /// Its members are indistinguishable from outside (identical latency profiles),
    /// though their internal latency does not set them apart.
    Profile,
    /// Both of the above.
    LatencyGapAndProfile,
    /// Taken from a description file or a specification.
    Given,
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LatencyGap => "latency gap",
            Self::Profile => "latency profile",
            Self::LatencyGapAndProfile => "latency gap and profile",
            Self::Given => "given",
        })
    }
}

/// A hardware context: the unit a thread runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwContext {
    /// Identifier (the row of the latency matrix).
    pub id: ContextId,
    /// The operating system's CPU number (or the matrix row when unknown).
    pub os_id: u32,
    /// The core it belongs to.
    pub core: CoreId,
    /// The socket it belongs to.
    pub socket: SocketId,
}

/// A physical core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// Identifier.
    pub id: CoreId,
    /// Its hardware contexts, in ascending order.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub contexts: Vec<ContextId>,
    /// The group or socket directly containing it.
    pub parent: Parent,
    /// Its socket.
    pub socket: SocketId,
}

/// A group of cores between core and socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Identifier.
    pub id: GroupId,
    /// The group or socket directly containing it.
    pub parent: Parent,
    /// Its direct members (cores and groups).
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub members: Vec<Member>,
    /// Its socket.
    pub socket: SocketId,
    /// Nesting depth: 1 for a group directly in a socket, 2 inside such a group, ...
    pub depth: usize,
    /// All cores inside, in ascending order.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub cores: Vec<CoreId>,
    /// All contexts inside, in ascending order.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub contexts: Vec<ContextId>,
    /// Latency between its direct members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    /// Why the group exists.
    pub evidence: Evidence,
}

/// A socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Socket {
    /// Identifier.
    pub id: SocketId,
    /// Its direct members (cores and groups).
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub members: Vec<Member>,
    /// All groups inside, outermost first.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub groups: Vec<GroupId>,
    /// All cores inside, in ascending order.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub cores: Vec<CoreId>,
    /// All contexts inside, in ascending order.
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub contexts: Vec<ContextId>,
    /// Its local memory node, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_node: Option<NodeId>,
    /// Latency between its direct members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
}

/// A memory node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Identifier.
    pub id: NodeId,
    /// The operating system's node number, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_id: Option<u32>,
    /// Capacity in bytes (the OS's total for the node), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Free memory in bytes when the description was made (it changes from moment to
    /// moment), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
    /// Sockets for which this node is the local one.
    pub local_sockets: Vec<SocketId>,
}

/// The connection between two sockets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interconnect {
    /// One end (the smaller id).
    pub a: SocketId,
    /// The other end.
    pub b: SocketId,
    /// Latency between contexts of the two sockets.
    pub latency: LatencySummary,
    /// The latency level this link belongs to (direct links have the lowest cross-socket level).
    pub level: usize,
    /// Hops, counting from 1 for the fastest cross-socket level.
    pub hops: usize,
}
