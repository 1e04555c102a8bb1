//! Typed identifiers of the components of a topology.
//!
//! Every identifier is an index into the matching vector of a
//! [`Topology`](crate::Topology); identifiers of different kinds cannot be mixed up.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub usize);

        impl $name {
            /// The position of this component in the topology's list of its kind.
            #[must_use]
            pub const fn index(self) -> usize {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A hardware context (the unit a thread is scheduled on): a row of the latency matrix.
    ContextId,
    "hwc"
);
id_type!(
    /// A physical core: one or more hardware contexts that share a pipeline.
    CoreId,
    "core"
);
id_type!(
    /// A group of cores between core and socket (a CCX, an E-core cluster, a die, a tile...).
    GroupId,
    "group"
);
id_type!(
    /// A socket: the contexts that share the socket-level interconnect (and usually a memory node).
    SocketId,
    "socket"
);
id_type!(
    /// A memory node.
    NodeId,
    "node"
);
