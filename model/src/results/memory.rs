//! `topoprobe mem`: memory latency and bandwidth from the sockets to the memory nodes.

use serde::{Deserialize, Serialize};

use crate::CostPlan;

/// One socket -> node pair with a thread count: a row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryRow {
    /// Socket (index in the topology).
    pub socket: usize,
    /// Memory node (OS number).
    pub node: u32,
    /// Threads of the bandwidth kernels (1 for a latency-only row).
    pub threads: usize,
    /// Lowest latency measured from the socket to the node, ns.
    pub latency_ns: Option<f64>,
    /// The same latency in cycles of the timer, when its rate is known.
    pub latency_cycles: Option<f64>,
    /// Read bandwidth, GB/s (`null` with `--latency-only`).
    pub read_gbps: Option<f64>,
    /// Write bandwidth, GB/s.
    pub write_gbps: Option<f64>,
    /// Copy bandwidth (bytes read and written), GB/s.
    pub copy_gbps: Option<f64>,
    /// Largest spread of the last rounds of the three kernels, (max − min) / median.
    pub spread: Option<f64>,
    /// Most rounds one of the three kernels took.
    pub rounds: Option<usize>,
}

/// Memory latency from one context to one node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryLatencyRow {
    /// The context (OS CPU number).
    pub cpu: u32,
    /// Its socket.
    pub socket: usize,
    /// The node of the buffer.
    pub node: u32,
    /// ns per load of the page-local chase (256 KiB windows) on huge pages: the memory's
    /// idle latency (`null` when the kernel refused them).
    pub huge_pages_ns: Option<f64>,
    /// ns per load of the page-local chase on 4 KiB pages, where huge pages were refused.
    pub small_pages_ns: Option<f64>,
    /// ns per load of the chase scattered over the whole buffer on 4 KiB pages: the idle
    /// latency plus TLB misses, page walks and DRAM page changes, when measured.
    #[serde(default)]
    pub scattered_ns: Option<f64>,
    /// Share of the huge-page chase's buffer the kernel backed with huge pages, 0 to 1
    /// (`AnonHugePages` of `/proc/self/smaps`; absent where huge pages were not asked for
    /// or the share could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_pages_share: Option<f64>,
}

/// A socket's local node by measurement (lowest latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalNode {
    /// The socket.
    pub socket: usize,
    /// Its local node.
    pub node: u32,
}

/// Memory latency and bandwidth of this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryResult {
    /// One row per socket -> node pair and thread count (latency and bandwidth).
    pub results: Vec<MemoryRow>,
    /// Every latency measured, per context and node.
    pub latency: Vec<MemoryLatencyRow>,
    /// Each socket's local node by measurement.
    pub local_nodes: Vec<LocalNode>,
    /// Vector unit of the bandwidth kernels.
    pub isa: String,
    /// The latency buffer, bytes.
    pub working_set_bytes: u64,
    /// How the latency buffer was chased, for people.
    pub working_set: String,
    /// Whether the latency buffer was evicted from every cache before its chase.
    pub evicted: bool,
    /// Whether the huge pages the latency chase asked for were granted: the least share
    /// of its buffers the kernel backed with them, 0 to 1 (absent where huge pages were
    /// not asked for, or the share could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_pages_share: Option<f64>,
    /// Bandwidth working set of all threads together, bytes (`null` with
    /// `--latency-only`).
    pub bandwidth_working_set_bytes: Option<u64>,
    /// Whether write and copy used non-temporal stores.
    pub non_temporal: bool,
    /// The last-level cache of the sockets, bytes, when the OS lists it.
    pub last_level_cache_bytes: Option<u64>,
    /// Whether every latency load went to memory: false when the chase could not be
    /// evicted from the caches and its buffer is less than twice the last-level cache, so
    /// that part of its loads hit the cache and the figures are not memory's alone (see
    /// `warnings`).
    pub memory_reached: bool,
    /// Socket -> node pairs measured.
    pub pairs_measured: usize,
    /// Socket -> node pairs in all.
    pub pairs_total: usize,
    /// The timer's cycles per ns, when known (latencies in cycles).
    pub ghz: Option<f64>,
    /// What makes a figure doubtful (a working set the caches can hold).
    pub warnings: Vec<String>,
    /// Remarks: how the sizes were chosen, what the budget left out, disagreements with
    /// the OS.
    pub notes: Vec<String>,
    /// The plan, with what each step spent.
    pub cost: CostPlan,
    /// What the firmware (ACPI HMAT) says of the measured nodes' latency and bandwidth,
    /// shown beside the measured figures; empty where the machine has no HMAT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hmat: Vec<crate::OsHmatAccess>,
    /// `--full`'s matrices, mixes, saturation and curves and `--c2c`'s transfers, when
    /// asked for (flattened: the same names as in a description's memory section).
    #[serde(flatten)]
    pub detail: crate::MemoryDetail,
}
