//! Optional measurements that enrich a topology: memory, caches and power.
//!
//! Each section is absent when it was not measured; values are never invented.

use serde::{Deserialize, Serialize};

use crate::ids::{ContextId, NodeId, SocketId};

/// Memory latency and bandwidth from sockets to memory nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySection {
    /// Memory latency measured from a context to a node, in the topology's latency unit.
    #[serde(default)]
    pub latency: Vec<MemoryLatency>,
    /// Memory bandwidth from a socket to a node.
    #[serde(default)]
    pub bandwidth: Vec<MemoryBandwidth>,
}

/// One memory-latency measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryLatency {
    /// The context the pointer chase ran on.
    pub context: ContextId,
    /// The node the buffer was bound to.
    pub node: NodeId,
    /// Latency of one dependent load, in the topology's latency unit.
    pub latency: f64,
}

/// The kind of memory access a bandwidth figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Copy (read one buffer, write another).
    Copy,
}

/// How many threads a bandwidth figure was measured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Threads {
    /// One thread.
    Single,
    /// One thread on every context of the socket.
    AllContexts,
    /// A given number of threads.
    Count(usize),
}

/// One memory-bandwidth measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryBandwidth {
    /// Socket the threads ran on.
    pub socket: SocketId,
    /// Node the memory was bound to.
    pub node: NodeId,
    /// Access kind.
    pub access: Access,
    /// Thread count.
    pub threads: Threads,
    /// Bandwidth in GB/s (10^9 bytes per second).
    pub gbps: f64,
}

impl MemorySection {
    /// Latency from `socket`'s measuring context to `node`: the smallest recorded value from
    /// any of the given contexts of that socket.
    #[must_use]
    pub fn latency_from(&self, contexts: &[ContextId], node: NodeId) -> Option<f64> {
        self.latency
            .iter()
            .filter(|l| l.node == node && contexts.contains(&l.context))
            .map(|l| l.latency)
            .min_by(f64::total_cmp)
    }

    /// Bandwidth from `socket` to `node` for the given access and thread count.
    #[must_use]
    pub fn bandwidth_of(
        &self,
        socket: SocketId,
        node: NodeId,
        access: Access,
        threads: Threads,
    ) -> Option<f64> {
        self.bandwidth
            .iter()
            .find(|b| {
                b.socket == socket && b.node == node && b.access == access && b.threads == threads
            })
            .map(|b| b.gbps)
    }
}

/// Cache levels, as measured and as the operating system reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSection {
    /// One entry per cache level.
    #[serde(default)]
    pub levels: Vec<CacheLevel>,
}

/// One cache level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// Level number as the source numbers it (libmctop numbers from 0).
    pub level: u32,
    /// Load-to-use latency, in the topology's latency unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// Size the operating system reports, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_size_kib: Option<u64>,
    /// Size found by measurement, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_size_kib: Option<u64>,
}

/// Power measurements (RAPL), in watts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerSection {
    /// One entry per (scope, state).
    #[serde(default)]
    pub entries: Vec<PowerEntry>,
}

/// What part of the machine a power figure covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerScope {
    /// One socket.
    Socket(SocketId),
    /// The whole machine.
    Total,
}

/// The load under which a power figure was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerState {
    /// Nothing running.
    Idle,
    /// One context of one core busy (increment over idle).
    FirstCore,
    /// A second core busy (increment).
    SecondCore,
    /// The second context of a busy core (increment).
    SecondContext,
    /// One context on every core busy.
    AllCores,
    /// Every context busy.
    AllContexts,
}

impl PowerState {
    /// Every state, in libmctop's order.
    pub const ALL: [Self; 6] = [
        Self::Idle,
        Self::FirstCore,
        Self::SecondCore,
        Self::SecondContext,
        Self::AllCores,
        Self::AllContexts,
    ];

    /// libmctop's name of the state (`idle`, `1stcore`, `2ndcore`, `2ndhwc`, `allcor`, `allhwc`).
    #[must_use]
    pub const fn mct_name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::FirstCore => "1stcore",
            Self::SecondCore => "2ndcore",
            Self::SecondContext => "2ndhwc",
            Self::AllCores => "allcor",
            Self::AllContexts => "allhwc",
        }
    }

    /// The state with the given libmctop name.
    #[must_use]
    pub fn from_mct_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.mct_name() == name)
    }
}

/// One power figure, broken down as RAPL reports it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerEntry {
    /// Scope.
    pub scope: PowerScope,
    /// Load.
    pub state: PowerState,
    /// Power of the cores (RAPL PP0).
    pub cores_w: f64,
    /// Package power outside the cores.
    pub rest_w: f64,
    /// Package power (cores + rest).
    pub package_w: f64,
    /// DRAM power.
    pub dram_w: f64,
    /// Package + DRAM.
    pub total_w: f64,
}
