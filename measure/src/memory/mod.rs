//! Memory latency and bandwidth from the sockets to the memory nodes (libmctop's memory
//! plugin), planned within a time and memory budget ([`plan`]).
//!
//! - Latency ([`chase`]): a dependent chase in a random cyclic order through one line of
//!   every 128-byte slot of a node-bound buffer, evicted from every cache first, from one
//!   context of each socket (every context with `all_contexts`), window by window on
//!   transparent huge pages (the memory's own latency, as multichase and MLC report it)
//!   and, beside it, scattered over the whole buffer on 4 KiB pages (plus the TLB misses,
//!   page walks and DRAM page changes a program jumping across a large buffer pays).
//! - Bandwidth ([`bandwidth`]): read, write and copy with the widest vector unit
//!   ([`kernels`]), one thread and one per context of the socket (or a given count), on one
//!   set of buffers evicted before every pass; each kernel repeated in rounds until the last
//!   three agree within 3% ([`crate::steady`]) or its share of the budget is spent.
//!
//! One buffer per running thread, released after each measurement: memory stays within the
//! budget (libmctop kept contexts × nodes × 2 GB). Which socket -> node pairs are measured,
//! with which sizes and how, is the [`plan`]'s choice, said in [`MemReport::notes`].

pub mod bandwidth;
pub mod chase;
pub mod full_plan;
pub mod kernel_kinds;
pub mod kernels;
pub mod loaded;
pub mod matrix;
pub mod mixes;
pub mod pace;
pub mod plan;
pub mod plausible;
mod run;
pub mod steps;

use topoprobe_model::{Budget, CostPlan, LoadedCurve, MixBandwidth, NodeMatrix, Saturation};

use crate::plan::Shape;
use chase::{ChaseRounds, LATENCY_MAX_STEPS, LATENCY_ROUNDS, STEADY_CHASE_STEPS};
use kernel_kinds::Isa;
use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};
use topoprobe_sys::usage::WaitClock;

pub use crate::steady::SteadyFigure;
pub use run::run_plan;

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

/// The budget of `topoprobe mem` and of a memory measurement by default: 15 s and 512 MiB.
pub const DEFAULT_BUDGET: Budget = Budget::new(15.0, 512 << 20);

/// What [`measure_memory`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct MemOptions {
    /// The latency buffer and the bandwidth working set of all threads together, bytes
    /// (`None`: planned, see [`plan`]).
    pub size: Option<u64>,
    /// Threads for the many-thread bandwidth (`None`: every context of the socket).
    pub threads: Option<usize>,
    /// Measure latency from every context, not one per socket.
    pub all_contexts: bool,
    /// Non-temporal stores for write and copy (`None`: only where the working set cannot
    /// exceed the last-level cache within the budget).
    pub non_temporal: Option<bool>,
    /// Also chase the latency buffer scattered over all of it on 4 KiB pages (what a
    /// program that jumps across a large buffer pays in TLB misses, page walks and DRAM
    /// page changes, beside the memory's own latency).
    pub scattered: bool,
    /// Bandwidth rounds of a kernel at most.
    pub max_rounds: usize,
    /// Instruction set of the bandwidth kernels.
    pub isa: Isa,
    /// Cycles per ns of the timer, to report latencies in cycles too.
    pub ghz: Option<f64>,
    /// Skip bandwidth (latency only).
    pub latency_only: bool,
    /// Time and memory the measurement may take.
    pub budget: Budget,
    /// Also the node × node matrices, the read/write mixes, the saturating thread counts
    /// and the loaded-latency curves ([`full_plan`]; give it [`full_plan::FULL_BUDGET`]).
    pub full: bool,
}

impl Default for MemOptions {
    fn default() -> Self {
        Self {
            size: None,
            threads: None,
            all_contexts: false,
            non_temporal: None,
            scattered: true,
            max_rounds: 20,
            isa: Isa::detect(),
            ghz: None,
            latency_only: false,
            budget: DEFAULT_BUDGET,
            full: false,
        }
    }
}

/// Share of the budget kept free of the steps: starting the process, reading the
/// topology, writing the result.
pub const HEADROOM: f64 = 0.05;

/// A measurement's threads may wait this share of its time for their CPUs (other
/// programs running on them) before it is flagged: a chase or a stream timed by the wall
/// clock counts their time as its own.
pub const WAIT_SHARE: f64 = 0.05;

/// Memory latency from one context to one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyResult {
    /// OS CPU number.
    pub cpu: u32,
    /// Socket of the context.
    pub socket: usize,
    /// Node of the buffer.
    pub node: u32,
    /// ns per load of the page-local chase on huge pages (`None` when the kernel refused
    /// them: then `small_ns` is the figure).
    pub huge_ns: Option<f64>,
    /// ns per load of the page-local chase on 4 KiB pages (only when huge pages were
    /// refused).
    pub small_ns: Option<f64>,
    /// ns per load of the chase scattered over the whole buffer on 4 KiB pages: the
    /// memory's latency plus TLB misses, page walks and DRAM page changes (`None` when not
    /// asked for).
    pub scattered_ns: Option<f64>,
    /// The largest share of its chases' time the chase waited for its CPU (other programs
    /// held it), 0 to 1; `None` where the kernel does not say.
    pub waited: Option<f64>,
    /// Share of the huge-page chase's buffer the kernel backed with huge pages, 0 to 1
    /// ([`crate::pages::share_of`]; `None` when huge pages were not asked for or
    /// `/proc/self/smaps` cannot be read).
    pub huge_share: Option<f64>,
}

impl LatencyResult {
    /// The memory latency: the page-local chase on huge pages when there were, else on
    /// 4 KiB pages.
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
#[derive(Debug, Clone, PartialEq)]
pub struct MemReport {
    /// Latencies, per context and node.
    pub latency: Vec<LatencyResult>,
    /// Bandwidths, per socket, node and thread count.
    pub bandwidth: Vec<BandwidthResult>,
    /// Each socket's local node by measurement (lowest latency).
    pub local_nodes: Vec<(usize, u32)>,
    /// Remarks: how the sizes were chosen, what the budget left out, disagreements with
    /// the OS, refused huge pages.
    pub notes: Vec<String>,
    /// What makes the figures doubtful ([`steps::MemPlan::warnings`]).
    pub warnings: Vec<String>,
    /// Latency buffer, bytes.
    pub latency_bytes: u64,
    /// Whether the latency buffer was evicted from the caches before its chase.
    pub evicted: bool,
    /// Bandwidth working set of all threads together, bytes.
    pub bandwidth_bytes: u64,
    /// Whether write and copy used non-temporal stores.
    pub non_temporal: bool,
    /// Socket -> node pairs measured and in all.
    pub pairs: (usize, usize),
    /// The plan, with what each step spent.
    pub cost: CostPlan,
    /// Idle latency and read bandwidth node × node (`--full`).
    pub node_matrix: Option<NodeMatrix>,
    /// Bandwidth of the read/write mixes (`--full`).
    pub mixes: Vec<MixBandwidth>,
    /// The thread counts that saturate the nodes (`--full`).
    pub saturation: Vec<Saturation>,
    /// Loaded-latency curves (`--full`).
    pub loaded_latency: Vec<LoadedCurve>,
}

/// Memory latency of `cpu` to `node` (`None`: first touch) over `bytes`, evicted first
/// when `evict` (see [`chase`]): the page-local chase on huge pages (on 4 KiB pages where
/// the kernel refuses them) and, with `scattered`, the chase scattered over the buffer on
/// 4 KiB pages.
///
/// # Errors
///
/// [`MemError`] when pinning, allocating or binding fails.
pub fn latency(
    cpu: u32,
    node: Option<u32>,
    bytes: u64,
    evict: bool,
    scattered: bool,
) -> Result<LatencyResult, MemError> {
    // ns per load, the share of the time waited for the CPU, the share on huge pages.
    type Run = (f64, Option<f64>, Option<f64>);
    let run = |huge: bool, order: chase::ChaseOrder| -> Result<Run, MemError> {
        std::thread::scope(|s| {
            s.spawn(|| {
                topoprobe_sys::affinity::pin_current_thread(cpu)?;
                let mut buf = Buffer::new(
                    bytes as usize,
                    PagePlacement {
                        node,
                        huge_pages: Some(huge),
                    },
                )?;
                buf.touch();
                let share = if huge {
                    crate::pages::share_of(&buf)
                } else {
                    None
                };
                let slots = chase::link_cycle(&mut buf, order, 0x5eed ^ u64::from(cpu));
                let how = if evict {
                    ChaseRounds::within_one_lap(slots, LATENCY_ROUNDS, LATENCY_MAX_STEPS)
                } else {
                    ChaseRounds {
                        rounds: LATENCY_ROUNDS,
                        steps: STEADY_CHASE_STEPS,
                        warm_up: slots.max(STEADY_CHASE_STEPS / 8),
                        evict: false,
                    }
                };
                let waiting = WaitClock::start();
                let ns = chase::timed_rounds(&buf, how);
                Ok((
                    topoprobe_model::median(&ns).unwrap_or(f64::NAN),
                    waiting.share(),
                    share,
                ))
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    };
    let huge = if thp_available() {
        Some(run(true, chase::ChaseOrder::PageLocal)?)
    } else {
        None
    };
    let small = if huge.is_none() {
        Some(run(false, chase::ChaseOrder::PageLocal)?)
    } else {
        None
    };
    let scattered = if scattered {
        Some(run(false, chase::ChaseOrder::Scattered)?)
    } else {
        None
    };
    let runs = [huge, small, scattered];
    Ok(LatencyResult {
        cpu,
        socket: 0,
        node: node.unwrap_or(0),
        huge_ns: huge.map(|r| r.0),
        small_ns: small.map(|r| r.0),
        scattered_ns: scattered.map(|r| r.0),
        waited: most_waited(runs.iter().flatten().map(|r| r.1)),
        huge_share: huge.and_then(|r| r.2),
    })
}

/// Smallest working set that measures memory, bytes: a chase through fewer lines times the
/// timer and the prefetchers rather than the memory (1 KiB is 8 lines: 7 ns a "load"), and
/// one of 1 MiB evicted from the caches still takes every load to memory.
pub const MIN_SIZE: u64 = 1 << 20;

/// Times the last-level cache that makes a cache-sized working set.
pub const WORKING_SET_FACTOR: u64 = 6;
/// Smallest cache-sized working set, bytes.
pub const MIN_WORKING_SET: u64 = 64 << 20;
/// Largest cache-sized working set, bytes.
pub const MAX_WORKING_SET: u64 = 1 << 30;
/// Cache-sized working set when the last-level cache is unknown, bytes.
pub const UNKNOWN_WORKING_SET: u64 = 256 << 20;

/// The cache-sized working set for a last-level cache of `llc` bytes:
/// [`WORKING_SET_FACTOR`] times it, between [`MIN_WORKING_SET`] and [`MAX_WORKING_SET`]
/// ([`UNKNOWN_WORKING_SET`] when unknown). A stream over it finds none of its lines left
/// from the pass before; the plans cap it by their memory budget.
#[must_use]
pub fn working_set(llc: Option<u64>) -> u64 {
    llc.map_or(UNKNOWN_WORKING_SET, |b| {
        b.saturating_mul(WORKING_SET_FACTOR)
            .clamp(MIN_WORKING_SET, MAX_WORKING_SET)
    })
}

/// Whether transparent huge pages can be asked for (`always` or `madvise` mode).
#[must_use]
pub fn thp_available() -> bool {
    topoprobe_files::read_string_lossy(
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled"),
        topoprobe_files::Rules::file(topoprobe_model::limits::MAX_SYSFS_FILE_BYTES),
    )
    .is_ok_and(|s| s.contains("[always]") || s.contains("[madvise]"))
}

/// Plans the measurement on `shape` ([`plan::plan_memory`]) and runs it.
///
/// # Errors
///
/// As [`run_plan`].
pub fn measure_memory(
    shape: &Shape,
    opts: &MemOptions,
    progress: impl FnMut(&str),
) -> Result<MemReport, MemError> {
    let mut p = plan::plan_memory(shape, opts);
    run_plan(shape, &mut p, opts, progress)
}

/// The largest of the shares known.
fn most_waited(shares: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    shares.into_iter().flatten().reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_chase_sharing_its_cpu_with_a_busy_thread_says_it_waited() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let Some(cpu) = topoprobe_sys::affinity::first_allowed_cpu() else {
            return;
        };
        let stop = AtomicBool::new(false);
        let quiet = latency(cpu, None, 8 * MIB, false, false).expect("latency");
        let busy = std::thread::scope(|s| {
            let spinner = s.spawn(|| {
                let pinned = topoprobe_sys::affinity::pin_current_thread(cpu).is_ok();
                while pinned && !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                pinned
            });
            let l = latency(cpu, None, 8 * MIB, false, false);
            // Stopped before anything can fail, so that the scope never waits on it.
            stop.store(true, Ordering::Relaxed);
            spinner.join().unwrap_or(false).then_some(l)
        });
        let busy = busy.transpose().expect("latency");
        let (Some(busy), Some(quiet_share)) = (busy, quiet.waited) else {
            return; // No run delays from this kernel, or the CPU could not be shared.
        };
        assert!((0.0..=1.0).contains(&quiet_share), "{quiet_share}");
        let share = busy.waited.expect("a share");
        // Two runnable threads on one CPU: the chase waits about half of its time.
        assert!(share > WAIT_SHARE, "{share}");
    }

    #[test]
    fn the_cache_sized_working_set_is_six_last_level_caches_within_its_bounds() {
        assert_eq!(working_set(Some(32 * MIB)), 192 * MIB);
        assert_eq!(working_set(Some(2 * MIB)), MIN_WORKING_SET);
        assert_eq!(working_set(Some(768 * MIB)), MAX_WORKING_SET);
        assert_eq!(working_set(None), UNKNOWN_WORKING_SET);
    }
}
