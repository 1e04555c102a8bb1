//! The stored form of a topology: what the JSON description holds, before and after
//! derivation ([`crate::Topology`] wraps it and keeps it consistent).

use serde::{Deserialize, Serialize};

use crate::components::{Core, Group, HwContext, Interconnect, LatencyLevel, Node, Socket};
use crate::matrix::LatencyMatrix;
use crate::meta::{Facts, Machine, Provenance, Validation};
use crate::sections::{CacheSection, ContentionSection, MemorySection, PowerSection};
use crate::units::LatencyUnit;

/// The identifier of the description file format.
pub const FORMAT: &str = "topoprobe/1";

/// Raw and normalized latency tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyTables {
    /// Latencies as measured or read (possibly directed, possibly with missing entries).
    pub raw: LatencyMatrix,
    /// Latencies replaced by the median of their component pair (what placement uses).
    pub normalized: LatencyMatrix,
    /// Relative spread (for example stdev/median) of each measured pair, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<LatencyMatrix>,
    /// How a directed matrix was made symmetric, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symmetrization: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TopologyData {
    pub(crate) format: String,
    #[serde(default)]
    pub(crate) machine: Machine,
    pub(crate) provenance: Provenance,
    pub(crate) units: LatencyUnit,
    pub(crate) facts: Facts,
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub(crate) levels: Vec<LatencyLevel>,
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub(crate) contexts: Vec<HwContext>,
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub(crate) cores: Vec<Core>,
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub(crate) groups: Vec<Group>,
    #[serde(deserialize_with = "crate::bounded::contexts_at_most")]
    pub(crate) sockets: Vec<Socket>,
    #[serde(default, deserialize_with = "crate::bounded::nodes_at_most")]
    pub(crate) nodes: Vec<Node>,
    #[serde(default)]
    pub(crate) interconnects: Vec<Interconnect>,
    pub(crate) latency: LatencyTables,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) memory: Option<MemorySection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caches: Option<CacheSection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) contention: Option<ContentionSection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) power: Option<PowerSection>,
    #[serde(default)]
    pub(crate) validation: Validation,
}
