//! The [`Topology`] type and its [`TopologyBuilder`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::components::{
    Core, Evidence, Group, HwContext, Interconnect, LatencyLevel, Member, Node, Parent, Socket,
};
use crate::error::ModelError;
use crate::ids::{ContextId, CoreId, GroupId, NodeId, SocketId};
use crate::matrix::LatencyMatrix;
use crate::meta::{Fact, Facts, Machine, Origin, Provenance, Source, Validation};
use crate::sections::{CacheSection, ContentionSection, MemorySection, PowerSection};
use crate::units::LatencyUnit;

pub(crate) use crate::data::TopologyData;
pub use crate::data::{LatencyTables, FORMAT};

/// A multi-core topology (MCTOP): hardware contexts, cores, groups at any depth, sockets,
/// memory nodes, interconnects and the latencies between all of them, plus optional
/// memory, cache and power measurements and the record of how sure the inference is.
///
/// A `Topology` is always internally consistent: every context belongs to exactly one core,
/// every core and group to exactly one parent, every component to one socket. It is made
/// with a [`TopologyBuilder`] or read from a file (see [`crate::format`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub(crate) d: TopologyData,
}

impl Serialize for Topology {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.d.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = TopologyData::deserialize(d)?;
        Topology::from_data(data).map_err(serde::de::Error::custom)
    }
}

/// Builds a [`Topology`] from its structure: cores, groups and sockets.
///
/// Derived information (which socket a core is in, the contexts of a group, group depths,
/// interconnects, latency summaries) is computed by [`TopologyBuilder::build`].
#[derive(Debug, Clone)]
pub struct TopologyBuilder {
    os_ids: Vec<u32>,
    units: LatencyUnit,
    cores: Vec<Vec<ContextId>>,
    groups: Vec<(Vec<Member>, Evidence)>,
    sockets: Vec<Vec<Member>>,
    nodes: Vec<Node>,
    levels: Vec<LatencyLevel>,
    raw: Option<LatencyMatrix>,
    normalized: Option<LatencyMatrix>,
    spread: Option<LatencyMatrix>,
    symmetrization: Option<String>,
    machine: Machine,
    provenance: Provenance,
    facts: Option<Facts>,
    validation: Validation,
    memory: Option<MemorySection>,
    caches: Option<CacheSection>,
    power: Option<PowerSection>,
}

impl TopologyBuilder {
    /// A builder for a machine whose hardware contexts have the given OS CPU numbers
    /// (context `i` has `os_ids[i]`), with latencies in `units`.
    #[must_use]
    pub fn new(os_ids: Vec<u32>, units: LatencyUnit) -> Self {
        Self {
            os_ids,
            units,
            cores: Vec::new(),
            groups: Vec::new(),
            sockets: Vec::new(),
            nodes: Vec::new(),
            levels: Vec::new(),
            raw: None,
            normalized: None,
            spread: None,
            symmetrization: None,
            machine: Machine::default(),
            provenance: Provenance::new(Source::Measured),
            facts: None,
            validation: Validation::default(),
            memory: None,
            caches: None,
            power: None,
        }
    }

    /// Adds a core made of the given contexts.
    pub fn core(&mut self, mut contexts: Vec<ContextId>) -> CoreId {
        contexts.sort_unstable();
        self.cores.push(contexts);
        CoreId(self.cores.len() - 1)
    }

    /// Adds a group with the given direct members.
    pub fn group(&mut self, members: Vec<Member>, evidence: Evidence) -> GroupId {
        self.groups.push((members, evidence));
        GroupId(self.groups.len() - 1)
    }

    /// Adds a socket with the given direct members.
    pub fn socket(&mut self, members: Vec<Member>) -> SocketId {
        self.sockets.push(members);
        SocketId(self.sockets.len() - 1)
    }

    /// Adds a memory node local to the given sockets.
    pub fn node(
        &mut self,
        os_id: Option<u32>,
        capacity_bytes: Option<u64>,
        local_sockets: Vec<SocketId>,
    ) -> NodeId {
        let id = NodeId(self.nodes.len());
        self.nodes.push(Node {
            id,
            os_id,
            capacity_bytes,
            free_bytes: None,
            local_sockets,
        });
        id
    }

    /// Sets the latency levels (sorted by median, numbered from 1 by `build`).
    pub fn levels(&mut self, levels: Vec<LatencyLevel>) -> &mut Self {
        self.levels = levels;
        self
    }

    /// Sets the raw and normalized latency tables.
    pub fn latencies(&mut self, raw: LatencyMatrix, normalized: LatencyMatrix) -> &mut Self {
        self.raw = Some(raw);
        self.normalized = Some(normalized);
        self
    }

    /// Sets the per-pair relative spread.
    pub fn spread(&mut self, spread: LatencyMatrix) -> &mut Self {
        self.spread = Some(spread);
        self
    }

    /// Records how a directed matrix was made symmetric.
    pub fn symmetrization(&mut self, how: impl Into<String>) -> &mut Self {
        self.symmetrization = Some(how.into());
        self
    }

    /// Sets the machine identity.
    pub fn machine(&mut self, machine: Machine) -> &mut Self {
        self.machine = machine;
        self
    }

    /// Sets the provenance.
    pub fn provenance(&mut self, provenance: Provenance) -> &mut Self {
        self.provenance = provenance;
        self
    }

    /// Sets the origin of the socket count and the SMT verdict (both default to inferred).
    pub fn origins(&mut self, sockets: Origin, smt: Origin) -> &mut Self {
        self.facts = Some(Facts {
            sockets: Fact {
                value: 0,
                origin: sockets,
            },
            smt: Fact {
                value: false,
                origin: smt,
            },
        });
        self
    }

    /// Sets the validation record.
    pub fn validation(&mut self, validation: Validation) -> &mut Self {
        self.validation = validation;
        self
    }

    /// Sets the memory section.
    pub fn memory(&mut self, memory: Option<MemorySection>) -> &mut Self {
        self.memory = memory;
        self
    }

    /// Sets the cache section.
    pub fn caches(&mut self, caches: Option<CacheSection>) -> &mut Self {
        self.caches = caches;
        self
    }

    /// Sets the power section.
    pub fn power(&mut self, power: Option<PowerSection>) -> &mut Self {
        self.power = power;
        self
    }

    /// Checks the structure and computes everything derived from it.
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::Structure`] when a context is in no core or in two, a core or
    /// group has no parent or two, a member id does not exist, groups form a cycle, a
    /// socket is empty, or the latency tables do not match the number of contexts.
    pub fn build(self) -> Result<Topology, ModelError> {
        let n = self.os_ids.len();
        let raw = self.raw.unwrap_or_else(|| LatencyMatrix::empty(n));
        let normalized = self.normalized.unwrap_or_else(|| raw.clone());
        let mut levels = self.levels;
        levels.sort_by(|a, b| a.latency.median.total_cmp(&b.latency.median));
        for (i, l) in levels.iter_mut().enumerate() {
            l.id = i + 1;
        }
        let placeholder_socket = SocketId(usize::MAX);
        let placeholder_core = CoreId(usize::MAX);
        let contexts = self
            .os_ids
            .iter()
            .enumerate()
            .map(|(i, &os_id)| HwContext {
                id: ContextId(i),
                os_id,
                core: placeholder_core,
                socket: placeholder_socket,
            })
            .collect();
        let cores = self
            .cores
            .into_iter()
            .enumerate()
            .map(|(i, contexts)| Core {
                id: CoreId(i),
                contexts,
                parent: Parent::Socket(placeholder_socket),
                socket: placeholder_socket,
            })
            .collect();
        let groups = self
            .groups
            .into_iter()
            .enumerate()
            .map(|(i, (members, evidence))| Group {
                id: GroupId(i),
                parent: Parent::Socket(placeholder_socket),
                members,
                socket: placeholder_socket,
                depth: 0,
                cores: Vec::new(),
                contexts: Vec::new(),
                latency: None,
                evidence,
            })
            .collect();
        let sockets = self
            .sockets
            .into_iter()
            .enumerate()
            .map(|(i, members)| Socket {
                id: SocketId(i),
                members,
                groups: Vec::new(),
                cores: Vec::new(),
                contexts: Vec::new(),
                local_node: None,
                latency: None,
            })
            .collect();
        let facts = self.facts.unwrap_or(Facts {
            sockets: Fact {
                value: 0,
                origin: Origin::Inferred,
            },
            smt: Fact {
                value: false,
                origin: Origin::Inferred,
            },
        });
        let mut d = TopologyData {
            format: FORMAT.to_string(),
            machine: self.machine,
            provenance: self.provenance,
            units: self.units,
            facts,
            levels,
            contexts,
            cores,
            groups,
            sockets,
            nodes: self.nodes,
            interconnects: Vec::new(),
            latency: LatencyTables {
                raw,
                normalized,
                spread: self.spread,
                symmetrization: self.symmetrization,
            },
            memory: self.memory,
            caches: self.caches,
            contention: None,
            power: self.power,
            validation: self.validation,
        };
        crate::derive::derive(&mut d)?;
        Ok(Topology { d })
    }
}

/// Latency tables of no contexts: what a description holds while its tables are lent.
fn no_tables() -> LatencyTables {
    LatencyTables {
        raw: LatencyMatrix::empty(0),
        normalized: LatencyMatrix::empty(0),
        spread: None,
        symmetrization: None,
    }
}

impl Topology {
    /// Validates data read from a file: the structure must be consistent and every
    /// derived field must agree with the structure.
    pub(crate) fn from_data(mut data: TopologyData) -> Result<Self, ModelError> {
        if data.format != FORMAT {
            return Err(ModelError::Structure(format!(
                "unsupported format {:?} (this version reads {FORMAT:?})",
                data.format
            )));
        }
        crate::figures::check(&data)?;
        // The structure is derived again in a copy that borrows the latency tables rather
        // than copying them (derivation reads them only; at 4096 contexts a copy is 128 MiB).
        let tables = std::mem::replace(&mut data.latency, no_tables());
        let mut derived = data.clone();
        derived.latency = tables;
        let result = crate::derive::derive(&mut derived);
        data.latency = std::mem::replace(&mut derived.latency, no_tables());
        result?;
        crate::derive::check_same(&data, &derived)?;
        Ok(Self { d: data })
    }

    /// The machine identity.
    #[must_use]
    pub fn machine(&self) -> &Machine {
        &self.d.machine
    }

    /// Replaces the machine identity.
    pub fn set_machine(&mut self, machine: Machine) {
        self.d.machine = machine;
    }

    /// How the description was made.
    #[must_use]
    pub fn provenance(&self) -> &Provenance {
        &self.d.provenance
    }

    /// Mutable provenance (to record durations and parameters).
    pub fn provenance_mut(&mut self) -> &mut Provenance {
        &mut self.d.provenance
    }

    /// The unit of every latency in this topology.
    #[must_use]
    pub fn units(&self) -> LatencyUnit {
        self.d.units
    }

    /// Socket count and SMT verdict, with their origins.
    #[must_use]
    pub fn facts(&self) -> &Facts {
        &self.d.facts
    }

    /// Latency levels, ascending.
    #[must_use]
    pub fn levels(&self) -> &[LatencyLevel] {
        &self.d.levels
    }

    /// All hardware contexts, indexed by [`ContextId`].
    #[must_use]
    pub fn contexts(&self) -> &[HwContext] {
        &self.d.contexts
    }

    /// All cores, indexed by [`CoreId`].
    #[must_use]
    pub fn cores(&self) -> &[Core] {
        &self.d.cores
    }

    /// All groups, indexed by [`GroupId`].
    #[must_use]
    pub fn groups(&self) -> &[Group] {
        &self.d.groups
    }

    /// All sockets, indexed by [`SocketId`].
    #[must_use]
    pub fn sockets(&self) -> &[Socket] {
        &self.d.sockets
    }

    /// All memory nodes, indexed by [`NodeId`] (empty when unknown).
    #[must_use]
    pub fn nodes(&self) -> &[Node] {
        &self.d.nodes
    }

    /// Socket-to-socket connections.
    #[must_use]
    pub fn interconnects(&self) -> &[Interconnect] {
        &self.d.interconnects
    }

    /// The raw and normalized latency tables.
    #[must_use]
    pub fn latency_tables(&self) -> &LatencyTables {
        &self.d.latency
    }

    /// Memory measurements, when made.
    #[must_use]
    pub fn memory(&self) -> Option<&MemorySection> {
        self.d.memory.as_ref()
    }

    /// Replaces the memory section.
    pub fn set_memory(&mut self, memory: Option<MemorySection>) {
        self.d.memory = memory;
    }

    /// Cache measurements, when made.
    #[must_use]
    pub fn caches(&self) -> Option<&CacheSection> {
        self.d.caches.as_ref()
    }

    /// Replaces the cache section.
    pub fn set_caches(&mut self, caches: Option<CacheSection>) {
        self.d.caches = caches;
    }

    /// Memory-access overhead groups and scalability, when measured.
    #[must_use]
    pub fn contention(&self) -> Option<&ContentionSection> {
        self.d.contention.as_ref()
    }

    /// Replaces the contention section.
    pub fn set_contention(&mut self, contention: Option<ContentionSection>) {
        self.d.contention = contention;
    }

    /// Power measurements, when made.
    #[must_use]
    pub fn power(&self) -> Option<&PowerSection> {
        self.d.power.as_ref()
    }

    /// Replaces the power section.
    pub fn set_power(&mut self, power: Option<PowerSection>) {
        self.d.power = power;
    }

    /// The validation record (confidence, unresolved levels, warnings).
    #[must_use]
    pub fn validation(&self) -> &Validation {
        &self.d.validation
    }

    /// Mutable validation record.
    pub fn validation_mut(&mut self) -> &mut Validation {
        &mut self.d.validation
    }

    /// Replaces the recorded differences from the operating system's topology (an empty list
    /// records that the two agree).
    pub fn set_os_differences(&mut self, diffs: Vec<crate::meta::OsDifference>) {
        self.d.validation.os_differences = diffs;
    }

    /// Records what the operating system knows of a node: its node number and capacity.
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::NoSuchComponent`] when the node does not exist.
    pub fn set_node_identity(
        &mut self,
        node: NodeId,
        os_id: Option<u32>,
        capacity_bytes: Option<u64>,
    ) -> Result<(), ModelError> {
        let n = self
            .d
            .nodes
            .get_mut(node.0)
            .ok_or_else(|| ModelError::NoSuchComponent(format!("node {node}")))?;
        n.os_id = os_id;
        n.capacity_bytes = capacity_bytes;
        Ok(())
    }

    /// Records a node's free memory at the time of the measurement.
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::NoSuchComponent`] when the node does not exist.
    pub fn set_node_free(
        &mut self,
        node: NodeId,
        free_bytes: Option<u64>,
    ) -> Result<(), ModelError> {
        let n = self
            .d
            .nodes
            .get_mut(node.0)
            .ok_or_else(|| ModelError::NoSuchComponent(format!("node {node}")))?;
        n.free_bytes = free_bytes;
        Ok(())
    }

    /// Records the relative spread of every measured pair (a live measurement knows it;
    /// a matrix file does not).
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::Structure`] when `spread` does not have one row per context.
    pub fn set_spread(&mut self, spread: LatencyMatrix) -> Result<(), ModelError> {
        if spread.len() != self.d.contexts.len() {
            return Err(ModelError::Structure(format!(
                "the spread table has {} rows for {} contexts",
                spread.len(),
                self.d.contexts.len()
            )));
        }
        self.d.latency.spread = Some(spread);
        Ok(())
    }

    /// Replaces the latency tables (raw and normalized, one row per context) and the
    /// latency levels, and derives every component's latency from them again: a
    /// structure made without latencies (the operating system's) given the measured ones.
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::Structure`] when a table does not have one row per context.
    pub fn set_latencies(
        &mut self,
        raw: LatencyMatrix,
        normalized: LatencyMatrix,
        mut levels: Vec<LatencyLevel>,
    ) -> Result<(), ModelError> {
        levels.sort_by(|a, b| a.latency.median.total_cmp(&b.latency.median));
        for (i, l) in levels.iter_mut().enumerate() {
            l.id = i + 1;
        }
        let mut d = self.d.clone();
        d.latency.raw = raw;
        d.latency.normalized = normalized;
        d.levels = levels;
        crate::derive::derive(&mut d)?;
        self.d = d;
        Ok(())
    }

    /// Sets the local memory node of every socket (`nodes[s]` for socket `s`) and the list of
    /// nodes, replacing the previous ones.
    ///
    /// # Errors
    ///
    /// Returns [`ModelError::Structure`] when `local` does not have one entry per socket or
    /// names a node that is not in `0..node_count`.
    pub fn set_nodes(
        &mut self,
        node_count: usize,
        local: &[Option<NodeId>],
    ) -> Result<(), ModelError> {
        if local.len() != self.d.sockets.len() {
            return Err(ModelError::Structure(format!(
                "{} local nodes given for {} sockets",
                local.len(),
                self.d.sockets.len()
            )));
        }
        if let Some(bad) = local.iter().flatten().find(|n| n.0 >= node_count) {
            return Err(ModelError::Structure(format!(
                "local node {bad} does not exist ({node_count} nodes)"
            )));
        }
        let old = std::mem::take(&mut self.d.nodes);
        self.d.nodes = (0..node_count)
            .map(|i| Node {
                id: NodeId(i),
                os_id: old.get(i).and_then(|n| n.os_id),
                capacity_bytes: old.get(i).and_then(|n| n.capacity_bytes),
                free_bytes: old.get(i).and_then(|n| n.free_bytes),
                local_sockets: Vec::new(),
            })
            .collect();
        for (s, node) in local.iter().enumerate() {
            self.d.sockets[s].local_node = *node;
            if let Some(node) = node {
                self.d.nodes[node.0].local_sockets.push(SocketId(s));
            }
        }
        Ok(())
    }
}
