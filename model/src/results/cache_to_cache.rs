//! `topoprobe mem --c2c`: cache-to-cache transfers. A line read or taken by one context
//! (load, store, atomics) while another context holds it modified, exclusive or shared, at
//! each distance of the topology and with the line's memory (its home node) on the
//! reader's node or on the owner's. The kernels are `bench line-ops`'s.

use serde::{Deserialize, Serialize};

use crate::results::bench::{Op, Scope, State};
use crate::CostPlan;

/// Where the lines' pages were bound, relative to the two contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Home {
    /// On the reader's node (the owner's node is another).
    Reader,
    /// On the owner's (the writer's) node (the reader's node is another).
    Owner,
    /// On the node of both: reader and owner share their node, so the two variants are
    /// one.
    Both,
    /// Not bound: the kernel's default policy (one memory node, or nodes unknown).
    Unbound,
}

impl Home {
    /// The name in JSON and tables (`owner`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Reader => "reader",
            Self::Owner => "owner",
            Self::Both => "both",
            Self::Unbound => "unbound",
        }
    }
}

/// One transfer: an operation by the reader on lines in a state, owned at a distance, homed
/// on a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transfer {
    /// Where the owner runs, relative to the reader (`memory`: no owner, lines flushed).
    pub scope: Scope,
    /// The lines' state before the operation.
    pub state: State,
    /// The reader's operation.
    pub op: Op,
    /// The reader's OS CPU.
    pub reader_cpu: u32,
    /// The owner's OS CPU (the reader's for `memory`).
    pub owner_cpu: u32,
    /// The third context that shares the lines in `shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub third_cpu: Option<u32>,
    /// Where the lines' memory was, relative to reader and owner.
    pub home: Home,
    /// The node the lines were bound to (OS number; `null` when unbound).
    pub home_node: Option<u32>,
    /// Median latency of one operation, ns.
    pub latency_ns: f64,
}

/// Cache-to-cache transfer latencies of this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheToCacheResult {
    /// Rounds per operation, state and pair (the median is reported); each round chases 32
    /// dependent lines.
    pub rounds: usize,
    /// Every transfer measured.
    pub transfers: Vec<Transfer>,
    /// Distances, states and homes that were not measured here, and why.
    pub unavailable: Vec<String>,
    /// What makes a figure doubtful (a guest whose vCPUs the host places).
    pub warnings: Vec<String>,
    /// Remarks: home-node variants that collapse, what the budget left out.
    pub notes: Vec<String>,
    /// The plan, with what each step spent.
    pub cost: CostPlan,
}

impl CacheToCacheResult {
    /// The transfer of `op` on lines in `state` at `scope` homed at `home`, when measured
    /// (the first reader's).
    #[must_use]
    pub fn find(&self, scope: Scope, state: State, op: Op, home: Home) -> Option<&Transfer> {
        self.transfers
            .iter()
            .find(|t| t.scope == scope && t.state == state && t.op == op && t.home == home)
    }
}
