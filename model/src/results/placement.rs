//! The results of `topoprobe place` and `topoprobe run`: where a policy puts threads (the
//! CPUs in order, every thread's place, the summary of the paper's Figure 7, the OpenMP
//! environment it means) and what a pinned run did (the environment set, the memory
//! policy, the program's exit status).

use serde::{Deserialize, Serialize};

/// What a thread pinned by a placement knows about its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// The thread's position in the placement order.
    pub thread: usize,
    /// Operating-system CPU number of its context.
    pub context: u32,
    /// Its core id in the topology.
    pub core: usize,
    /// Its socket id.
    pub socket: usize,
    /// Its local memory node (operating-system number when known, else the topology's id).
    pub node: Option<u32>,
    /// How many threads of the placement come before it on its socket.
    pub index_in_socket: usize,
    /// How many threads of the placement come before it on its core.
    pub index_in_core: usize,
    /// Whether it is the first thread of the placement on its node (on its socket when
    /// nodes are unknown): the one to do per-node work.
    pub leads_node: bool,
}

/// One socket a placement uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketUse {
    /// Socket id.
    pub socket: usize,
    /// Threads (contexts) placed on it.
    pub contexts: usize,
    /// Distinct cores used on it.
    pub cores: usize,
    /// Its share of the placement's estimated memory bandwidth (when measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_proportion: Option<f64>,
}

/// Estimated maximum power of the machine while a placement runs alone, W.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerEstimate {
    /// Per socket (every socket; unused ones idle), package only.
    pub sockets_package_w: Vec<f64>,
    /// Per socket, package and DRAM.
    pub sockets_total_w: Vec<f64>,
    /// Sum of the package figures.
    pub package_w: f64,
    /// Sum of the package and DRAM figures.
    pub total_w: f64,
}

/// What a placement uses, like MCTOP-PLACE's printout (paper Figure 7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementSummary {
    /// Policy name (`CON_HWC`…).
    pub policy: String,
    /// Threads.
    pub threads: usize,
    /// Whether threads are pinned.
    pub pinned: bool,
    /// Distinct cores used.
    pub cores: usize,
    /// Operating-system CPU numbers, in placement order.
    pub contexts: Vec<u32>,
    /// Sockets used, in the policy's order.
    pub sockets: Vec<SocketUse>,
    /// Largest latency between two of the placement's contexts (`null`: fewer than two, or
    /// no latency measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency: Option<f64>,
    /// Unit of `max_latency` (`ns` or `cycles`).
    pub latency_unit: String,
    /// Smallest read bandwidth between a used socket and a used socket's local node, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_bandwidth_gbps: Option<f64>,
    /// Power estimate, when the topology has power measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerEstimate>,
}

/// An environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    /// Its name (`OMP_PLACES`).
    pub name: String,
    /// Its value (`{0},{1}`).
    pub value: String,
}

impl EnvVar {
    /// A variable `name=value`.
    #[must_use]
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Where a policy puts threads: the result of `topoprobe place`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementResult {
    /// Policy name (`RR_CORE`…).
    pub policy: String,
    /// Threads placed.
    pub threads: usize,
    /// Whether threads are pinned (`false` for the `NONE` policy: `contexts` are then the
    /// CPUs the threads may run on).
    pub pinned: bool,
    /// Operating-system CPU numbers in placement order: thread `i` runs on `contexts[i]`.
    pub contexts: Vec<u32>,
    /// Operating-system numbers of the memory nodes local to the used sockets, ascending;
    /// `null` when the description does not know them.
    #[serde(default)]
    pub nodes: Option<Vec<u32>>,
    /// The described machine's host name, when the description has one (the rankfile
    /// names it).
    #[serde(default)]
    pub host: Option<String>,
    /// The OpenMP environment of the placement, in order: `OMP_NUM_THREADS`, then
    /// `OMP_PLACES` and `OMP_PROC_BIND=close` (thread `i` on place `i`), or
    /// `OMP_PROC_BIND=false` for an unpinned placement. `topoprobe run` sets these.
    pub omp: Vec<EnvVar>,
    /// Every pinned thread's place, in placement order (empty when not pinned).
    pub slots: Vec<ThreadInfo>,
    /// What the placement uses (paper Figure 7).
    pub summary: PlacementSummary,
}

impl PlacementResult {
    /// The placement's CPUs, ascending and without repeats.
    #[must_use]
    pub fn cpu_set(&self) -> Vec<u32> {
        let mut v = self.contexts.clone();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The memory policy a pinned run gave its command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUse {
    /// What was asked for: `local`, `interleave` or `none` (the kernel's default).
    pub policy: String,
    /// The nodes memory is interleaved over (`interleave` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// Whether the policy was set (`false` for `none`, or when the kernel refused `local`:
    /// `notes` says why).
    pub set: bool,
}

/// What `topoprobe run` did: the placement, how the command was started, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The command and its arguments, as given (non-UTF-8 bytes replaced).
    pub command: Vec<String>,
    /// The placement its threads were given.
    pub placement: PlacementResult,
    /// The pinning library preloaded into the command (`LD_PRELOAD`); `null` when none
    /// was (an unpinned policy, or a statically linked program: `notes` says which).
    pub preload: Option<String>,
    /// The variables set in the command's environment, in the order they were set.
    pub environment: Vec<EnvVar>,
    /// Variables of the placement left as the caller's environment had them (with the
    /// caller's value).
    pub kept: Vec<EnvVar>,
    /// The memory policy.
    pub memory: MemoryUse,
    /// Warnings and notes, in the order they arose.
    pub notes: Vec<String>,
    /// The command's exit status (128 + signal when a signal ended it).
    pub exit_status: i32,
    /// Seconds from the start of the command to its end.
    pub wall_s: f64,
}
