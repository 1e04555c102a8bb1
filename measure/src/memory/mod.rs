//! Memory latency and bandwidth from every socket to every memory node (libmctop's memory
//! plugin, with bounded memory).
//!
//! - Latency ([`chase`]): a dependent chase through every line of a node-bound buffer much
//!   larger than the last-level cache, in a random cyclic order, from one context of each
//!   socket (every context with `all_contexts`). Measured twice: on transparent huge pages
//!   (the memory's own latency) and on 4 KiB pages (plus the page walks a program with
//!   small pages pays) — the cross-check the user sees side by side.
//! - Bandwidth ([`bandwidth`]): read, write and copy with the widest vector unit
//!   ([`kernels`]), one thread and one per context of the socket (or a given count).
//!
//! One buffer per running thread, released after each measurement: memory use stays at
//! the configured working set (libmctop kept contexts × nodes × 2 GB). The working set is
//! sized from the last-level cache ([`working_set`]: 6 × the socket's last-level cache, at
//! least 64 MiB and at most 1 GiB), large enough that neither the chase nor the streams hit
//! in it, small enough for a login node. A dedicated bandwidth run may stream over a large
//! array instead ([`MemOptions::bandwidth_bytes`], [`large_array_working_set`]), to include
//! the page walks a program with large arrays on 4 KiB pages pays. Bandwidth is repeated in
//! rounds until the last three agree within 3% ([`crate::steady`]).

pub mod bandwidth;
pub mod chase;
pub mod kernels;

use topoprobe_model::{CacheType, OsView, Topology};

use crate::steady::SteadyRule;
use bandwidth::Stream;
use kernels::{Isa, Kernel};
use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};
use topoprobe_sys::memory::online_nodes;

pub use crate::steady::SteadyFigure;

/// Why memory could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// A thread could not be pinned.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// A buffer could not be made or bound.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Nothing to run on.
    #[error("no CPU to measure on")]
    NoCpus,
}

/// What [`measure_memory`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct MemOptions {
    /// Working set, bytes: the latency buffer, and the bandwidth buffers of all threads
    /// together unless `bandwidth_bytes` is given.
    pub bytes: u64,
    /// Working set of the bandwidth buffers of all threads together, bytes (`None`:
    /// `bytes`).
    pub bandwidth_bytes: Option<u64>,
    /// Threads for the many-thread bandwidth (`None`: every context of the socket).
    pub threads: Option<usize>,
    /// Measure latency from every context, not one per socket.
    pub all_contexts: bool,
    /// Non-temporal stores for write and copy.
    pub non_temporal: bool,
    /// Loads per latency measurement.
    pub chase_steps: usize,
    /// Also measure latency on 4 KiB pages when huge pages are available (the page walks
    /// a program with small pages pays, beside the memory's own latency).
    pub small_pages: bool,
    /// When the bandwidth rounds stop.
    pub rule: SteadyRule,
    /// Instruction set of the bandwidth kernels.
    pub isa: Isa,
    /// Cycles per ns of the timer, to report latencies in cycles too.
    pub ghz: Option<f64>,
    /// Skip bandwidth (latency only).
    pub latency_only: bool,
}

impl MemOptions {
    /// Working set of the bandwidth buffers of all threads together, bytes:
    /// `bandwidth_bytes`, else `bytes`.
    #[must_use]
    pub fn bandwidth_working_set(&self) -> u64 {
        self.bandwidth_bytes.unwrap_or(self.bytes)
    }
}

impl Default for MemOptions {
    fn default() -> Self {
        Self {
            bytes: 1 << 30,
            bandwidth_bytes: None,
            threads: None,
            all_contexts: false,
            non_temporal: false,
            chase_steps: 1 << 22,
            small_pages: true,
            rule: SteadyRule::default(),
            isa: Isa::detect(),
            ghz: None,
            latency_only: false,
        }
    }
}

/// Memory latency from one context to one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyResult {
    /// OS CPU number.
    pub cpu: u32,
    /// Socket of the context.
    pub socket: usize,
    /// Node of the buffer.
    pub node: u32,
    /// ns per load on huge pages (`None` when the kernel refused them: then `small_ns` is
    /// the figure).
    pub huge_ns: Option<f64>,
    /// ns per load on 4 KiB pages (`None` when not asked for beside huge pages).
    pub small_ns: Option<f64>,
}

impl LatencyResult {
    /// The memory latency: on huge pages when there were, else on 4 KiB pages.
    #[must_use]
    pub fn ns(&self) -> f64 {
        self.huge_ns.or(self.small_ns).unwrap_or(f64::NAN)
    }
}

/// Bandwidth from one socket to one node with a thread count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthResult {
    /// Socket.
    pub socket: usize,
    /// Node.
    pub node: u32,
    /// Threads.
    pub threads: usize,
    /// Read GB/s.
    pub read: f64,
    /// Write GB/s.
    pub write: f64,
    /// Copy GB/s (bytes read + bytes written).
    pub copy: f64,
    /// Largest spread of the last rounds of the three, (max − min) / median.
    pub spread: f64,
    /// Most rounds one of the three took.
    pub rounds: usize,
}

/// Everything [`measure_memory`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemReport {
    /// Latencies, per context and node.
    pub latency: Vec<LatencyResult>,
    /// Bandwidths, per socket, node and thread count.
    pub bandwidth: Vec<BandwidthResult>,
    /// Each socket's local node by measurement (lowest latency).
    pub local_nodes: Vec<(usize, u32)>,
    /// Remarks: disagreements with the OS, refused huge pages.
    pub notes: Vec<String>,
}

/// Memory latency of `cpu` to `node` on huge and on small pages.
///
/// # Errors
///
/// [`MemError`] when pinning, allocating or binding fails.
pub fn latency(cpu: u32, node: Option<u32>, opts: &MemOptions) -> Result<LatencyResult, MemError> {
    let run = |huge: bool| -> Result<f64, MemError> {
        std::thread::scope(|s| {
            s.spawn(|| {
                topoprobe_sys::affinity::pin_current_thread(cpu)?;
                let mut buf = Buffer::new(
                    opts.bytes as usize,
                    PagePlacement {
                        node,
                        huge_pages: Some(huge),
                    },
                )?;
                buf.touch();
                chase::link_random_cycle(&mut buf, 0x5eed ^ u64::from(cpu));
                Ok(chase::ns_per_load(buf.words(), opts.chase_steps))
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    };
    let huge_ns = if thp_available() {
        Some(run(true)?)
    } else {
        None
    };
    let small_ns = if huge_ns.is_none() || opts.small_pages {
        Some(run(false)?)
    } else {
        None
    };
    Ok(LatencyResult {
        cpu,
        socket: 0,
        node: node.unwrap_or(0),
        huge_ns,
        small_ns,
    })
}

/// Bytes of the last-level cache that `cpus` use: the sizes of every instance of the
/// highest data or unified level the OS lists that holds one of them, added up (a socket of
/// several dies has one instance per die). `None` when the OS lists no cache for them.
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

/// Times the last-level cache that makes the working set.
pub const WORKING_SET_FACTOR: u64 = 6;
/// Smallest working set, bytes.
pub const MIN_WORKING_SET: u64 = 64 << 20;
/// Largest working set, bytes.
pub const MAX_WORKING_SET: u64 = 1 << 30;
/// Working set when the last-level cache is unknown, bytes.
pub const UNKNOWN_WORKING_SET: u64 = 256 << 20;

/// The working set of the memory probes for a last-level cache of `llc` bytes:
/// [`WORKING_SET_FACTOR`] times it, between [`MIN_WORKING_SET`] and [`MAX_WORKING_SET`]
/// ([`UNKNOWN_WORKING_SET`] when unknown). A random chase over it hits the cache on at most
/// one access in six; a stream finds none of its lines left from the pass before.
#[must_use]
pub fn working_set(llc: Option<u64>) -> u64 {
    llc.map_or(UNKNOWN_WORKING_SET, |b| {
        b.saturating_mul(WORKING_SET_FACTOR)
            .clamp(MIN_WORKING_SET, MAX_WORKING_SET)
    })
}

/// Working set of a large array: what the dedicated bandwidth run streams over (1 GiB, the
/// size STREAM-style runs and `likwid-bench -w S0:1GB` use), bytes.
pub const LARGE_ARRAY_WORKING_SET: u64 = 1 << 30;
/// The large-array working set takes at most this share of free memory (1 / this).
pub const FREE_MEMORY_SHARE: u64 = 4;

/// The bandwidth working set of a dedicated memory run: a large array
/// ([`LARGE_ARRAY_WORKING_SET`]), at most a quarter of `free` memory (whole MiB) and never
/// less than `cache_sized` (the [`working_set`] from the last-level cache); `cache_sized`
/// when free memory is unknown.
///
/// Streaming a buffer a few times the last-level cache reads the memory without cache
/// hits, but on 4 KiB pages it also stays within the reach of the page-walk caches; a
/// program streaming a large array on 4 KiB pages walks page tables that no longer fit
/// them, and on some machines reads several percent slower (an AMD EPYC guest: 7% with two
/// threads, `docs/MEASURING.md`). The large array measures what such a program gets.
#[must_use]
pub fn large_array_working_set(cache_sized: u64, free: Option<u64>) -> u64 {
    free.map_or(cache_sized, |f| {
        let share = (f / FREE_MEMORY_SHARE) & !((1 << 20) - 1);
        share.min(LARGE_ARRAY_WORKING_SET).max(cache_sized)
    })
}

/// Whether transparent huge pages can be asked for (`always` or `madvise` mode).
#[must_use]
pub fn thp_available() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]") || s.contains("[madvise]"))
}

/// Read, write and copy bandwidth of `cpus` together to `node`, each repeated until it is
/// steady.
///
/// # Errors
///
/// [`MemError`] when pinning, allocating or binding fails.
pub fn bandwidth_of(
    cpus: &[u32],
    node: Option<u32>,
    opts: &MemOptions,
) -> Result<[SteadyFigure; 3], MemError> {
    let run = |kernel| {
        bandwidth::measure(
            cpus,
            &Stream {
                kernel,
                isa: opts.isa,
                non_temporal: opts.non_temporal,
                bytes: opts.bandwidth_working_set(),
                node,
                rule: opts.rule,
            },
        )
    };
    Ok([run(Kernel::Read)?, run(Kernel::Write)?, run(Kernel::Copy)?])
}

/// The contexts a socket's many-thread bandwidth runs on: one per core first, then the
/// cores' further contexts, `n` of them (all when `None`).
#[must_use]
pub fn spread_contexts(topo: &Topology, socket: usize, n: Option<usize>) -> Vec<u32> {
    let s = &topo.sockets()[socket];
    let mut order: Vec<u32> = Vec::new();
    let max_smt = s
        .cores
        .iter()
        .map(|c| topo.core_contexts(*c).len())
        .max()
        .unwrap_or(0);
    for k in 0..max_smt {
        for c in &s.cores {
            if let Some(ctx) = topo.core_contexts(*c).get(k) {
                order.push(topo.contexts()[ctx.0].os_id);
            }
        }
    }
    order.truncate(n.unwrap_or(order.len()).max(1));
    order
}

/// Measures latency and bandwidth from every socket of `topo` to every online node.
/// `progress` is called with a description of each step before it runs.
///
/// # Errors
///
/// [`MemError`] from the first measurement that fails.
pub fn measure_memory(
    topo: &Topology,
    opts: &MemOptions,
    mut progress: impl FnMut(&str),
) -> Result<MemReport, MemError> {
    let nodes = online_nodes();
    let numa = nodes.len() > 1;
    let mut report = MemReport::default();
    if !thp_available() {
        report
            .notes
            .push("transparent huge pages are off: latencies include 4 KiB page walks".into());
    }
    for (si, socket) in topo.sockets().iter().enumerate() {
        let contexts: Vec<u32> = if opts.all_contexts {
            socket
                .contexts
                .iter()
                .map(|c| topo.contexts()[c.0].os_id)
                .collect()
        } else {
            spread_contexts(topo, si, Some(1))
        };
        for node in nodes.iter() {
            let bind = numa.then_some(node);
            for &cpu in &contexts {
                progress(&format!("latency CPU {cpu} -> node {node}"));
                let mut l = latency(cpu, bind, opts)?;
                l.socket = si;
                l.node = node;
                report.latency.push(l);
            }
            if opts.latency_only {
                continue;
            }
            let many = spread_contexts(topo, si, opts.threads);
            let mut counts = vec![1];
            if many.len() > 1 {
                counts.push(many.len());
            }
            for n in counts {
                progress(&format!(
                    "bandwidth socket {si} -> node {node}, {n} thread(s)"
                ));
                let [read, write, copy] = bandwidth_of(&many[..n], bind, opts)?;
                report.bandwidth.push(BandwidthResult {
                    socket: si,
                    node,
                    threads: n,
                    read: read.value,
                    write: write.value,
                    copy: copy.value,
                    spread: read.spread.max(write.spread).max(copy.spread),
                    rounds: read.rounds.max(write.rounds).max(copy.rounds),
                });
            }
        }
        let best = report
            .latency
            .iter()
            .filter(|l| l.socket == si)
            .min_by(|a, b| a.ns().total_cmp(&b.ns()))
            .map(|l| l.node);
        if let Some(node) = best {
            report.local_nodes.push((si, node));
            if let Some(os_node) = socket.local_node {
                if os_node.0 != node as usize {
                    report.notes.push(format!(
                        "socket {si}: the OS says node {} is local, measurement says node {node}",
                        os_node.0
                    ));
                }
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn the_cache_sized_working_set_is_six_last_level_caches_within_its_bounds() {
        assert_eq!(working_set(Some(32 * MIB)), 192 * MIB);
        assert_eq!(working_set(Some(2 * MIB)), MIN_WORKING_SET);
        assert_eq!(working_set(Some(768 * MIB)), MAX_WORKING_SET);
        assert_eq!(working_set(None), UNKNOWN_WORKING_SET);
    }

    #[test]
    fn the_large_array_takes_a_gibibyte_when_a_quarter_of_free_memory_allows() {
        assert_eq!(large_array_working_set(192 * MIB, Some(20 * GIB)), GIB);
        // 2 GiB free: a quarter is 512 MiB.
        assert_eq!(large_array_working_set(192 * MIB, Some(2 * GIB)), 512 * MIB);
        // A quarter, rounded down to whole MiB.
        assert_eq!(
            large_array_working_set(64 * MIB, Some(1200 * MIB + 3)),
            300 * MIB
        );
    }

    #[test]
    fn the_large_array_is_never_smaller_than_the_cache_sized_working_set() {
        assert_eq!(
            large_array_working_set(192 * MIB, Some(400 * MIB)),
            192 * MIB
        );
        assert_eq!(large_array_working_set(192 * MIB, Some(0)), 192 * MIB);
        assert_eq!(large_array_working_set(192 * MIB, None), 192 * MIB);
        // A cache-sized set above the large array (a 1 GiB L3 capped at 1 GiB) stays.
        assert_eq!(large_array_working_set(GIB, Some(64 * GIB)), GIB);
    }
}
