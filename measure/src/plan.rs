//! Planning a probe's cost before it runs.
//!
//! Every probe plans its work from the shape of the machine ([`Shape`]: its sockets and their
//! contexts, memory nodes and their distances, last-level caches, free memory), read from the
//! topology and the OS view, before it measures anything: the steps it will take, the bytes
//! each allocates, the passes and the seconds it expects ([`CostStep`]). The plan is made to
//! fit a [`Budget`] on any machine up to topoprobe's limits (4096 contexts, 1024 nodes, any
//! cache size): what does not fit is left out on purpose and said, never dropped silently.
//! Time is wall clock: first touch, eviction, thread start and preparation count.
//!
//! Seconds are estimated from [`Rates`]: ordinary figures of a server or a guest
//! ([`Rates::ASSUMED`]: a memory access of 130 ns, 10 GB/s per streaming thread, half a
//! second to touch a GiB for the first time) for a shape read from files, and the rates of
//! the machine's measured [`Speed`] (never faster than those) for the shape of the machine
//! that runs the plan (`Shape::at_this_machines_speed`, measured once a process in about
//! 0.1 s). The probes then enforce the plan with wall-clock limits, so a machine slower
//! than even its measured rates shortens measurements instead of overrunning the budget.

use topoprobe_model::{size_text, CacheType, OsView};

pub use topoprobe_model::{seconds_text as secs, Budget, CostPlan, CostStep};

/// Bytes in a MiB.
pub const MIB: u64 = 1 << 20;
/// Bytes in a GiB.
pub const GIB: u64 = 1 << 30;

/// One socket as a plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketShape {
    /// OS numbers of its contexts: one context of every core first, then the cores'
    /// further contexts (the order in which many-thread measurements add threads).
    pub cpus: Vec<u32>,
    /// Number of cores.
    pub cores: usize,
    /// Bytes of its last-level cache, every instance added up, as the OS lists it.
    pub llc_bytes: Option<u64>,
    /// OS number of the memory node holding most of its contexts.
    pub local_node: Option<u32>,
}

/// One memory node as a plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeShape {
    /// OS node number.
    pub id: u32,
    /// Its row of the OS distance table, in the order of [`Shape::nodes`] (empty when the OS
    /// gives none).
    pub distances: Vec<u32>,
    /// Memory of the node, bytes, when known (`Some(0)`: a node without memory).
    pub memory_bytes: Option<u64>,
    /// OS numbers of its CPUs (empty: a memory-only node, or not known).
    pub cpus: Vec<u32>,
}

/// What a plan needs to know of a machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The sockets.
    pub sockets: Vec<SocketShape>,
    /// The memory nodes the OS lists, ascending by number (empty: no NUMA information, one
    /// memory reached by first touch).
    pub nodes: Vec<NodeShape>,
    /// Sizes of the data and unified caches of the first context, innermost first, bytes.
    pub cache_levels: Vec<u64>,
    /// Free memory of the emptiest node with memory, bytes, when known.
    pub free_bytes: Option<u64>,
    /// Whether cache lines can be evicted by instruction (`clflush`, `dc civac`).
    pub can_flush: bool,
    /// Whether transparent huge pages can be asked for.
    pub huge_pages: bool,
    /// Why power cannot be measured, when it cannot (no RAPL counters).
    pub power_unavailable: Option<String>,
    /// The machine's speed the plans are made at: [`Speed::assumed`] for a shape read from
    /// files, this machine's as measured for a shape of the machine that runs the plan
    /// (`Shape::at_this_machines_speed`).
    pub speed: Speed,
}

/// Bytes of the last-level cache of `cpus`: every instance of the highest data or unified
/// level that holds one of them, added up (`None` when the OS lists none).
#[must_use]
pub fn last_level_bytes(os: &OsView, cpus: &[u32]) -> Option<u64> {
    let relevant = |c: &&topoprobe_model::OsCache| {
        c.kind != CacheType::Instruction && c.cpus.iter().any(|x| cpus.contains(x))
    };
    let top = os.caches.iter().filter(relevant).map(|c| c.level).max()?;
    let mut seen: Vec<&[u32]> = Vec::new();
    let mut total = 0u64;
    for c in os.caches.iter().filter(relevant).filter(|c| c.level == top) {
        if seen.contains(&c.cpus.as_slice()) {
            continue;
        }
        seen.push(&c.cpus);
        total = total.saturating_add(c.size_bytes?);
    }
    (total > 0).then_some(total)
}

/// The data and unified cache sizes the OS lists for `cpu`, innermost first, bytes.
#[must_use]
pub fn cache_sizes(os: &OsView, cpu: u32) -> Vec<u64> {
    let mut v: Vec<(u8, u64)> = os
        .caches
        .iter()
        .filter(|c| c.kind != CacheType::Instruction && c.cpus.contains(&cpu))
        .filter_map(|c| Some((c.level, c.size_bytes?)))
        .collect();
    v.sort_unstable();
    v.dedup_by_key(|(l, _)| *l);
    v.into_iter().map(|(_, b)| b).collect()
}

impl Shape {
    /// The rates the plans of this shape are made at (those of [`Shape::speed`]).
    #[must_use]
    pub fn rates(&self) -> Rates {
        self.speed.rates()
    }

    /// Number of contexts.
    #[must_use]
    pub fn contexts(&self) -> usize {
        self.sockets.iter().map(|s| s.cpus.len()).sum()
    }

    /// Number of cores.
    #[must_use]
    pub fn cores(&self) -> usize {
        self.sockets.iter().map(|s| s.cores).sum()
    }

    /// The largest last-level cache of a socket, bytes.
    #[must_use]
    pub fn largest_llc(&self) -> Option<u64> {
        self.sockets.iter().filter_map(|s| s.llc_bytes).max()
    }

    /// The first context (the one single-threaded probes run on).
    #[must_use]
    pub fn first_cpu(&self) -> Option<u32> {
        self.sockets.first().and_then(|s| s.cpus.first().copied())
    }

    /// Distance from socket `socket`'s local node to node `node` (an index of
    /// [`Shape::nodes`]) in the OS's table: the class a socket -> node pair belongs to.
    /// Without a table, 10 for the local node and 20 for the others (the ACPI convention).
    #[must_use]
    pub fn distance(&self, socket: usize, node: usize) -> u32 {
        let Some(target) = self.nodes.get(node) else {
            return 10;
        };
        let local = self
            .sockets
            .get(socket)
            .and_then(|s| s.local_node)
            .and_then(|id| self.nodes.iter().position(|n| n.id == id));
        match local {
            Some(l) => self.nodes[l]
                .distances
                .get(node)
                .copied()
                .unwrap_or(if l == node { 10 } else { 20 }),
            None if Some(target.id) == self.sockets.get(socket).and_then(|s| s.local_node) => 10,
            None => 20,
        }
    }
}

/// The figures a plan assumes of a machine it has not measured yet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Time of a load from memory, ns.
    pub memory_ns: f64,
    /// Time of a load from each cache level (L1, L2, L3 and beyond), ns.
    pub cache_ns: [f64; 3],
    /// Streaming rate of one thread, GB/s.
    pub thread_gbps: f64,
    /// Streaming rate of a socket's memory, GB/s (what many threads share).
    pub socket_gbps: f64,
    /// Time to evict one cache line by instruction, ns (one thread).
    pub flush_ns: f64,
    /// Seconds to touch (fault in and zero) one GiB for the first time, one thread.
    pub touch_s_per_gib: f64,
    /// Seconds to start, pin and join a thread.
    pub thread_start_s: f64,
}

impl Rates {
    /// Ordinary figures of servers and guests today.
    pub const ASSUMED: Self = Self {
        memory_ns: 130.0,
        cache_ns: [1.5, 5.0, 25.0],
        thread_gbps: 10.0,
        socket_gbps: 100.0,
        flush_ns: 2.0,
        touch_s_per_gib: 0.5,
        thread_start_s: 100e-6,
    };

    /// Seconds to touch `bytes` for the first time, spread over `threads` threads.
    #[must_use]
    pub fn touch_seconds(&self, bytes: u64, threads: usize) -> f64 {
        bytes as f64 / GIB as f64 * self.touch_s_per_gib / threads.max(1) as f64
    }

    /// Seconds for `threads` threads to stream `bytes` together.
    #[must_use]
    pub fn stream_seconds(&self, bytes: u64, threads: usize) -> f64 {
        let gbps = (self.thread_gbps * threads.max(1) as f64).min(self.socket_gbps);
        bytes as f64 / (gbps * 1e9)
    }

    /// Seconds for `threads` threads to evict `bytes` from the caches by instruction.
    #[must_use]
    pub fn flush_seconds(&self, bytes: u64, threads: usize) -> f64 {
        (bytes / 64) as f64 * self.flush_ns * 1e-9 / threads.max(1) as f64
    }

    /// Time of one dependent load over an array of `bytes` on a machine whose caches are
    /// `levels` (innermost first), ns.
    #[must_use]
    pub fn access_ns(&self, bytes: u64, levels: &[u64]) -> f64 {
        for (i, &size) in levels.iter().enumerate() {
            if bytes <= size {
                return self.cache_ns[i.min(self.cache_ns.len() - 1)];
            }
        }
        self.memory_ns
    }
}

/// The speed of a machine, as [`crate::memory::pace::calibrate`] measures it cheaply
/// before a plan commits to large work ([`Speed::assumed`] until then).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Seconds to touch a GiB for the first time, one thread.
    pub touch_s_per_gib: f64,
    /// Streaming read rate of one thread over the touched pages, GB/s.
    pub thread_gbps: f64,
    /// ns per load of a dependent chase over the touched pages.
    pub chase_ns: f64,
    /// ns per load of a dependent chase inside the innermost cache.
    pub cache_ns: f64,
    /// Seconds to start, pin and join a thread.
    pub thread_start_s: f64,
    /// How many of the test's threads ran at once, on average (1 to their number).
    pub parallel: f64,
    /// Seconds the calibration took.
    pub seconds: f64,
}

impl Speed {
    /// The speed the plan assumes ([`Rates::ASSUMED`], threads all in parallel).
    #[must_use]
    pub fn assumed() -> Self {
        let r = Rates::ASSUMED;
        Self {
            touch_s_per_gib: r.touch_s_per_gib,
            thread_gbps: r.thread_gbps,
            chase_ns: r.memory_ns,
            cache_ns: r.cache_ns[0],
            thread_start_s: r.thread_start_s,
            parallel: f64::INFINITY,
            seconds: 0.0,
        }
    }

    /// The plan's rates on a machine of this speed: each never faster than
    /// [`Rates::ASSUMED`] (the calibration's buffer may sit in a cache a real measurement
    /// misses), and the socket's streaming rate no more than `parallel` threads give.
    #[must_use]
    pub fn rates(&self) -> Rates {
        let a = Rates::ASSUMED;
        let slower = |x: f64, assumed: f64| {
            if x.is_finite() {
                x.max(assumed)
            } else {
                assumed
            }
        };
        let memory_ns = slower(self.chase_ns, a.memory_ns);
        let thread_gbps = if self.thread_gbps.is_finite() && self.thread_gbps > 0.0 {
            self.thread_gbps.min(a.thread_gbps)
        } else {
            a.thread_gbps
        };
        let parallel = if self.parallel.is_finite() {
            self.parallel.max(1.0)
        } else {
            f64::INFINITY
        };
        // Every cache level as much slower than assumed as the innermost one (an emulated
        // CPU, a vCPU that shares its core): a load's cost there is the CPU's, not the
        // cache's.
        let cache_factor = slower(self.cache_ns, a.cache_ns[0]) / a.cache_ns[0];
        Rates {
            memory_ns,
            cache_ns: a.cache_ns.map(|ns| ns * cache_factor),
            thread_gbps,
            socket_gbps: a.socket_gbps.min(thread_gbps * parallel),
            flush_ns: a.flush_ns * memory_ns / a.memory_ns,
            touch_s_per_gib: slower(self.touch_s_per_gib, a.touch_s_per_gib),
            thread_start_s: slower(self.thread_start_s, a.thread_start_s),
        }
    }

    /// Threads of `threads` that run at once here.
    #[must_use]
    pub fn effective_threads(&self, threads: usize) -> usize {
        let t = threads.max(1);
        if self.parallel.is_finite() {
            t.min(self.parallel.round().max(1.0) as usize)
        } else {
            t
        }
    }

    /// Whether the machine is so much slower than assumed that the plan must be made again.
    #[must_use]
    pub fn slower_than_assumed(&self) -> bool {
        let r = self.rates();
        let a = Rates::ASSUMED;
        r.touch_s_per_gib > 1.5 * a.touch_s_per_gib
            || r.memory_ns > 1.5 * a.memory_ns
            || r.cache_ns[0] > 1.5 * a.cache_ns[0]
            || r.thread_gbps < a.thread_gbps / 1.5
            || r.thread_start_s > 3.0 * a.thread_start_s
            || self.parallel.is_finite()
    }
}

impl Speed {
    /// The plan's line on this speed ([`CostPlan::speed`]): what was measured, when it is
    /// slower than the rates plans assume ([`Speed::slower_than_assumed`]); `None` otherwise.
    #[must_use]
    pub fn note(&self) -> Option<String> {
        if !self.slower_than_assumed() {
            return None;
        }
        let at_once = if self.parallel.is_finite() {
            format!(", {:.1} threads at once", self.parallel)
        } else {
            String::new()
        };
        Some(format!(
            "slower than the rates plans assume, measured in {:.2} s before planning: first \
             touch {:.0} MB/s, a thread streams {:.1} GB/s, {:.0} ns a dependent load from \
             memory, {:.1} ns in the innermost cache, {:.1} ms to start a thread{at_once}",
            self.seconds,
            GIB as f64 / self.touch_s_per_gib / 1e6,
            self.thread_gbps,
            self.chase_ns,
            self.cache_ns,
            self.thread_start_s * 1e3
        ))
    }
}

impl Default for Speed {
    /// [`Speed::assumed`].
    fn default() -> Self {
        Self::assumed()
    }
}

/// Bytes a process needs besides the probes' buffers (its code, tables and thread stacks),
/// kept out of the memory budget of the buffers.
pub const PROCESS_BYTES: u64 = 24 * MIB;

/// A default memory budget grows to this many times the machine's largest last-level
/// cache (a socket's, every instance added up), plus [`PROCESS_BYTES`]: the cache walk
/// passes twice the cache and the bandwidth working sets reach several of it.
pub const LLC_BUDGET_FACTOR: u64 = 3;
/// A default memory budget never grows past this share of the memory available now
/// (`MemAvailable`).
pub const AVAILABLE_SHARE: f64 = 0.05;

/// The default memory budget of `default` bytes scaled to a machine whose largest
/// last-level cache is `llc` and which has `available` bytes available now:
/// [`LLC_BUDGET_FACTOR`] × `llc` (plus [`PROCESS_BYTES`]), within [`AVAILABLE_SHARE`] of
/// `available`, never below `default` (nor above it when the available memory is not
/// known); with the sentence that says how it was chosen, for the plan.
#[must_use]
pub fn scaled_memory(default: u64, llc: Option<u64>, available: Option<u64>) -> (u64, String) {
    let Some(llc) = llc.filter(|&l| l > 0) else {
        return (
            default,
            format!(
                "memory budget {}: the default (the OS lists no last-level cache to scale it by)",
                size_text(default)
            ),
        );
    };
    let want = llc
        .saturating_mul(LLC_BUDGET_FACTOR)
        .saturating_add(PROCESS_BYTES)
        .div_ceil(MIB)
        .saturating_mul(MIB);
    let factor = format!(
        "{LLC_BUDGET_FACTOR} × the {} last-level cache",
        size_text(llc)
    );
    if want <= default {
        return (
            default,
            format!(
                "memory budget {}: the default, more than {factor} needs",
                size_text(default)
            ),
        );
    }
    let Some(available) = available else {
        return (
            default,
            format!(
                "memory budget {}: the default ({factor} would need {}, and the memory available \
                 now is not known)",
                size_text(default),
                size_text(want)
            ),
        );
    };
    let share = format!(
        "{:.0}% of the {} available now",
        AVAILABLE_SHARE * 100.0,
        size_text(available)
    );
    let cap = ((available as f64 * AVAILABLE_SHARE) as u64) / MIB * MIB;
    if want <= cap {
        (
            want,
            format!(
                "memory budget {}: {factor} and the process's {}, within {share} (default {})",
                size_text(want),
                size_text(PROCESS_BYTES),
                size_text(default)
            ),
        )
    } else if cap > default {
        (
            cap,
            format!(
                "memory budget {}: {share}; {factor} would need {}",
                size_text(cap),
                size_text(want)
            ),
        )
    } else {
        (
            default,
            format!(
                "memory budget {}: the default; {factor} would need {}, more than {share}",
                size_text(default),
                size_text(want)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_estimate_the_usual_costs() {
        let r = Rates::ASSUMED;
        assert!((r.touch_seconds(GIB, 1) - 0.5).abs() < 1e-9);
        assert!((r.stream_seconds(10_000_000_000, 1) - 1.0).abs() < 1e-9);
        // Many threads share the socket's memory.
        assert!((r.stream_seconds(100_000_000_000, 64) - 1.0).abs() < 1e-9);
        assert_eq!(r.access_ns(16 << 10, &[32 << 10, MIB]), 1.5);
        assert_eq!(r.access_ns(2 * MIB, &[32 << 10, MIB]), r.memory_ns);
    }

    #[test]
    fn a_default_memory_budget_scales_with_the_last_level_cache_within_free_memory() {
        let default = 256 * MIB;
        // A 32 MiB L3 needs less than the default: the default stays.
        let (b, why) = scaled_memory(default, Some(32 * MIB), Some(20 * GIB));
        assert_eq!(b, default);
        assert!(
            why.contains("the default, more than 3 × the 32 MiB"),
            "{why}"
        );
        // A 480 MiB L3 with plenty of memory: three of it and the process.
        let (b, why) = scaled_memory(default, Some(480 * MIB), Some(64 * GIB));
        assert_eq!(b, 3 * 480 * MIB + PROCESS_BYTES);
        assert!(
            why.starts_with("memory budget 1.43 GiB: 3 × the 480 MiB last-level cache"),
            "{why}"
        );
        // Little memory available: 5% of it, never below the default.
        let (b, why) = scaled_memory(default, Some(480 * MIB), Some(16 * GIB));
        assert_eq!(b, 16 * GIB / 20 / MIB * MIB);
        assert!(why.contains("5% of the 16 GiB available now"), "{why}");
        let (b, _) = scaled_memory(default, Some(480 * MIB), Some(2 * GIB));
        assert_eq!(b, default);
        // Unknown: the default.
        assert_eq!(scaled_memory(default, None, Some(64 * GIB)).0, default);
        assert_eq!(scaled_memory(default, Some(GIB), None).0, default);
    }
}
