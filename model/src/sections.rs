//! Optional measurements that enrich a topology: memory, caches and power.
//!
//! Each section is absent when it was not measured; values are never invented.

use serde::{Deserialize, Serialize};

mod memory_load;
mod scaling;
mod sharing;

pub use memory_load::{
    knee, Knee, LoadedCurve, LoadedPoint, MatrixInitiator, MemoryDetail, Mix, MixBandwidth,
    NodeMatrix, Saturation, KNEE_FACTOR, SATURATION_SHARE,
};
pub use scaling::{CurvePoint, SocketCurve};
pub use sharing::{PairVerdict, SharingOutcome, SharingPair, SharingTest};

use crate::ids::{ContextId, NodeId, SocketId};
use crate::os_view::CacheType;

/// Memory latency and bandwidth from sockets to memory nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySection {
    /// Memory latency measured from a context to a node, in the topology's latency unit.
    #[serde(default)]
    pub latency: Vec<MemoryLatency>,
    /// Memory bandwidth from a socket to a node.
    #[serde(default)]
    pub bandwidth: Vec<MemoryBandwidth>,
    /// `mem --full`'s matrices, mixes, saturation and curves and `mem --c2c`'s transfers
    /// (the `mem-full` and `c2c` plugins), flattened into the section.
    #[serde(flatten)]
    pub detail: MemoryDetail,
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
    /// The same latency in CPU cycles, when the clock frequency was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
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
    /// Where walks on small pages start paying for TLB misses, measured beside the
    /// levels (a TLB's reach is not a cache, and is kept apart from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tlb: Vec<TlbReach>,
}

/// The reach of the TLB with one page size: past it, every access of a random walk pays
/// a TLB miss (a page walk, or a second-level TLB hit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TlbReach {
    /// Page size the reach is measured with, in KiB.
    pub page_kib: u64,
    /// Largest array whose walk still costs what it costs on huge pages, in KiB.
    pub reach_kib: u64,
    /// Extra time of an access past the reach, in ns.
    pub extra_ns: f64,
}

/// One cache level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// Level number: 1 for L1, 2 for L2 … (libmctop's `Cache_level 0` line, which
    /// carries the L1 instruction cache, is read as level 1 of kind `instruction`).
    pub level: u32,
    /// What the level holds, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<CacheType>,
    /// Load-to-use latency, in the topology's latency unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// The same latency in cycles of the timer's clock, when its frequency is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
    /// Size the operating system reports, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_size_kib: Option<u64>,
    /// Size found by measurement, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_size_kib: Option<u64>,
    /// Line size in bytes (as the OS reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_bytes: Option<u32>,
    /// Associativity (ways of a set) as the OS reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ways: Option<u32>,
    /// Contexts found by measurement to share one instance of this level, one list per
    /// instance (empty when not measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_by: Vec<Vec<ContextId>>,
    /// How `shared_by` was found, when the shared-cache test ran: the walks, what they
    /// decided, and whether the OS's sharing was kept because they did not decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingTest>,
}

impl CacheLevel {
    /// A level with only its number and kind known; the other fields are filled in as
    /// they are read or measured.
    #[must_use]
    pub const fn new(level: u32, kind: Option<CacheType>) -> Self {
        Self {
            level,
            kind,
            latency: None,
            cycles: None,
            os_size_kib: None,
            measured_size_kib: None,
            line_bytes: None,
            ways: None,
            shared_by: Vec::new(),
            sharing: None,
        }
    }

    /// A short name such as `L1d`, `L1i`, `L2`.
    #[must_use]
    pub fn name(&self) -> String {
        let suffix = match self.kind {
            Some(CacheType::Data) => "d",
            Some(CacheType::Instruction) => "i",
            _ => "",
        };
        format!("L{}{suffix}", self.level)
    }
}

/// Memory-access overhead between contexts (Servet's overhead groups) and how bandwidth
/// scales as threads are added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionSection {
    /// Read bandwidth of one context alone, GB/s.
    pub alone_gbps: f64,
    /// Measured pairs: bandwidth of each thread when both read memory at once.
    #[serde(default)]
    pub pairs: Vec<ContentionPair>,
    /// Overhead levels, highest overhead first: the contexts connected by pairs of that
    /// overhead form the level's groups.
    #[serde(default)]
    pub levels: Vec<ContentionLevel>,
    /// Effective bandwidth as threads are added inside one group of a level.
    #[serde(default)]
    pub scalability: Vec<ScalingPoint>,
    /// Copy bandwidth as threads are added across the first context's socket, at 1, 2,
    /// 4, … threads, and the count from which they contend (absent in descriptions made
    /// before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_curve: Option<SocketCurve>,
}

/// One measured pair of contexts reading memory at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContentionPair {
    /// First context.
    pub a: ContextId,
    /// Second context.
    pub b: ContextId,
    /// Bandwidth of each thread while both run, GB/s (the mean of the two).
    pub gbps: f64,
    /// Slowdown against one thread alone (alone / concurrent; 1 = no overhead).
    pub overhead: f64,
}

/// Contexts grouped by a common memory-access overhead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentionLevel {
    /// Typical slowdown of two contexts of one group accessing memory together; for a
    /// level found on the socket curve ([`ContentionLevel::from_threads`]), the slowdown
    /// of each thread at the largest thread count measured.
    pub overhead: f64,
    /// The groups: contexts connected by pairs with at least this overhead (the sockets,
    /// for a level found on the socket curve).
    pub groups: Vec<Vec<ContextId>>,
    /// For a level found on the socket curve rather than by pairs: the thread count from
    /// which the socket's threads contend (absent for a level found by pairs, where two
    /// threads already do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_threads: Option<usize>,
}

/// Effective bandwidth of `threads` threads inside one group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Index of the level in [`ContentionSection::levels`].
    pub level: usize,
    /// Index of the group in that level.
    pub group: usize,
    /// Threads reading at once.
    pub threads: usize,
    /// Total bandwidth of all of them, GB/s.
    pub gbps: f64,
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
