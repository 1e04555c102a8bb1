//! The results of `topoprobe bench <experiment>`: the papers' experiments, one report per
//! experiment. `topoprobe-sync` returns the contention experiments' ([`LocksReport`],
//! [`FalseSharingReport`], [`LineOpsReport`]), `topoprobe-parallel` the algorithms'
//! ([`SortReport`], [`ReduceReport`]). Figures are medians over runs that interleave the
//! alternatives; every run's figure is kept beside the median.

use serde::{Deserialize, Serialize};

/// `bench locks`: lock throughput (libmctop's experiment, paper §7.1).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LocksReport {
    /// Threads taking the locks.
    pub threads: usize,
    /// Locks; each acquisition takes one at random.
    pub locks: usize,
    /// Seconds of one measurement.
    pub duration_s: f64,
    /// Length of the critical section, ns.
    pub cs_ns: f64,
    /// Pause after each release, ns.
    pub pause_ns: f64,
    /// Placement policy of the threads (as the command line names it).
    pub policy: String,
    /// Runs of every lock (the median is reported).
    pub runs: usize,
    /// The clock the critical sections and pauses are timed with.
    pub clock: String,
    /// One line per lock kind and backoff, then the libraries' mutexes.
    pub results: Vec<LockResult>,
    /// What a user can act on: the fastest lock, educated backoff against none.
    pub advice: Vec<String>,
}

/// One lock and backoff of [`LocksReport`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockResult {
    /// Lock kind (`tas`, `ttas`, `ticket`, `mcs`, `clh`, `cohort`) or library (`std`,
    /// `parking_lot`, `spin`).
    pub lock: String,
    /// Backoff (`none`, `fixed`, `educated`); `native` for the libraries' mutexes.
    pub backoff: String,
    /// Threads.
    pub threads: usize,
    /// Median acquisitions per second over the runs, all threads together.
    pub acquisitions_per_s: f64,
    /// Median fairness: fewest acquisitions of a thread over most (1 is perfectly fair).
    pub fairness: f64,
    /// Acquisitions per second of every run.
    pub runs: Vec<f64>,
}

/// `bench false-sharing`: threads incrementing counters `stride` bytes apart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FalseSharingReport {
    /// Threads, each incrementing its own counter.
    pub threads: usize,
    /// Placement policy of the threads (as the command line names it).
    pub policy: String,
    /// Runs of every stride (the median is reported).
    pub runs: usize,
    /// Seconds of one measurement.
    pub duration_s: f64,
    /// The padding to use: the smallest stride within 5% of the best throughput (`null`
    /// when nothing was measured).
    pub padding_bytes: Option<usize>,
    /// One line per stride, in the order asked for.
    pub results: Vec<StrideResult>,
    /// What a user can act on: the padding, what false sharing costs here.
    pub advice: Vec<String>,
}

/// One stride of [`FalseSharingReport`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StrideResult {
    /// Distance between two threads' counters, bytes.
    pub stride_bytes: usize,
    /// Threads.
    pub threads: usize,
    /// Median increments per second, all threads together.
    pub ops_per_s: f64,
    /// Increments per second of every run.
    pub runs: Vec<f64>,
}

/// An operation on a cache line (`bench line-ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A load.
    Load,
    /// A store followed by a full fence (so that it completes before the next).
    Store,
    /// A successful compare-and-swap.
    Cas,
    /// Fetch-and-increment.
    Fai,
    /// Swap (exchange).
    Swap,
}

/// The coherence state a line is in before the operation (`bench line-ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Modified in the owner's cache.
    Modified,
    /// Exclusive (clean, only copy) in the owner's cache.
    Exclusive,
    /// Shared by the owner and a third context.
    Shared,
    /// In no cache (read from memory).
    Invalid,
}

/// Where a line's owner runs, relative to the measuring context (`bench line-ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The other hardware context of the same core.
    Core,
    /// Another core of the same group.
    Group,
    /// Another core of the same socket, outside the measuring context's group.
    Socket,
    /// A context of another socket.
    OtherSocket,
    /// No owner: the line comes from memory.
    Memory,
}

impl Op {
    /// Every operation, in the order of the tables.
    pub const ALL: [Self; 5] = [Self::Load, Self::Store, Self::Cas, Self::Fai, Self::Swap];

    /// The name in JSON and tables (`cas`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::Store => "store",
            Self::Cas => "cas",
            Self::Fai => "fai",
            Self::Swap => "swap",
        }
    }
}

impl State {
    /// Every state, in the order of the tables.
    pub const ALL: [Self; 4] = [Self::Modified, Self::Exclusive, Self::Shared, Self::Invalid];

    /// The name in JSON and tables (`modified`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Modified => "modified",
            Self::Exclusive => "exclusive",
            Self::Shared => "shared",
            Self::Invalid => "invalid",
        }
    }
}

impl Scope {
    /// Every scope, nearest first.
    pub const ALL: [Self; 5] = [
        Self::Core,
        Self::Group,
        Self::Socket,
        Self::OtherSocket,
        Self::Memory,
    ];

    /// The name in JSON and tables (`other_socket`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Group => "group",
            Self::Socket => "socket",
            Self::OtherSocket => "other_socket",
            Self::Memory => "memory",
        }
    }
}

/// `bench line-ops`: latency of one operation on a cache line by state and distance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LineOpsReport {
    /// Rounds per operation, state and scope (the median is reported); each round chases
    /// 32 dependent lines.
    pub rounds: usize,
    /// The measuring context's OS CPU.
    pub cpu: u32,
    /// Latencies.
    pub results: Vec<OpResult>,
    /// Scopes and states that could not be measured here, and why.
    pub unavailable: Vec<Unavailable>,
    /// The topology's latency between the CPUs of the CAS on a modified line (nearest
    /// scope measured, socket first), to compare with it; `null` when there is none.
    pub described_latency: Option<DescribedLatency>,
    /// What a user can act on: which lock suits this machine.
    pub advice: Vec<String>,
}

/// One operation, state and scope of [`LineOpsReport`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpResult {
    /// The operation.
    pub op: Op,
    /// The line's state before it.
    pub state: State,
    /// Where the owner ran.
    pub scope: Scope,
    /// Median latency of one operation, ns.
    pub latency_ns: f64,
    /// OS CPUs: the measuring context, then the owner and the third context when there are.
    pub cpus: Vec<u32>,
    /// The memory node the lines were bound to (`null`: the kernel's default policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_node: Option<u32>,
}

/// A scope or state of [`LineOpsReport`] that could not be measured, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Unavailable {
    /// The scope (or `memory`).
    pub scope: Scope,
    /// The state, when only one state is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// Why.
    pub reason: String,
}

/// The topology's latency for the pair of a measured CAS (what `topoprobe latency`
/// measures), in the topology's unit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DescribedLatency {
    /// The measuring CPU and the owner's.
    pub cpus: Vec<u32>,
    /// The topology's latency between them.
    pub latency: f64,
    /// Its unit (`ns` or `cycles`).
    pub unit: String,
    /// The CAS on a modified line measured between them, ns.
    pub cas_ns: f64,
}

/// `bench sort`: topoprobe's sort against rayon's and std's on the same arrays.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SortReport {
    /// Whether every result was checked and correct (the experiment fails otherwise).
    pub verified: bool,
    /// Bytes of each array.
    pub bytes: u64,
    /// Threads of the parallel sorts.
    pub threads: usize,
    /// Runs of every sort (the median is reported).
    pub runs: usize,
    /// Seed of the random keys.
    pub seed: u64,
    /// What the sorter's calibration decided.
    pub calibration: Vec<String>,
    /// One line per key type and algorithm.
    pub results: Vec<SortResult>,
}

/// One key type and algorithm of [`SortReport`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SortResult {
    /// `topoprobe` (radix path), `topoprobe_comparison`, `rayon_par_sort_unstable` or
    /// `std_sort_unstable`.
    pub algorithm: String,
    /// `u32` or `u64`.
    pub keys: String,
    /// Bytes sorted.
    pub bytes: u64,
    /// Threads (1 for `std_sort_unstable`).
    pub threads: usize,
    /// Median seconds.
    pub seconds: f64,
    /// Seconds of every run.
    pub runs: Vec<f64>,
}

/// `bench reduce`: every worker's vector summed into one along the reduction tree and
/// flat.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReduceReport {
    /// Whether the two sums were checked equal (the experiment fails otherwise).
    pub verified: bool,
    /// Bytes of each worker's vector.
    pub bytes: u64,
    /// Workers.
    pub threads: usize,
    /// Placement policy of the workers (as the command line names it).
    pub policy: String,
    /// Runs (the median is reported).
    pub runs: usize,
    /// `tree`, then `flat`.
    pub results: Vec<ReduceResult>,
}

/// One reduction of [`ReduceReport`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReduceResult {
    /// `tree` or `flat`.
    pub reduction: String,
    /// Workers.
    pub threads: usize,
    /// Bytes per worker.
    pub bytes: u64,
    /// Rounds of merges (for `flat`, one merge per worker, one after another).
    pub rounds: usize,
    /// Median seconds.
    pub seconds: f64,
    /// Seconds of every run.
    pub runs: Vec<f64>,
}

/// How fast something is against `other`, for people, from the ratio of their speeds
/// (throughputs, or the inverse ratio of times): `1.37x faster than other`, `0.73x as
/// fast as other`, `as fast as other` within half a percent; `not comparable with other`
/// when the ratio is not a positive number.
///
/// ```
/// use topoprobe_model::results::bench::compared;
///
/// assert_eq!(compared(1.372, "rayon"), "1.37x faster than rayon");
/// assert_eq!(compared(0.7301, "std"), "0.73x as fast as std");
/// assert_eq!(compared(1.001, "flat"), "as fast as flat");
/// ```
#[must_use]
pub fn compared(ratio: f64, other: &str) -> String {
    if !(ratio > 0.0 && ratio.is_finite()) {
        format!("not comparable with {other}")
    } else if (ratio - 1.0).abs() < 0.005 {
        format!("as fast as {other}")
    } else if ratio > 1.0 {
        format!("{ratio:.2}x faster than {other}")
    } else {
        format!("{ratio:.2}x as fast as {other}")
    }
}
