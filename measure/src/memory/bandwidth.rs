//! Memory bandwidth of one or more pinned threads streaming through node-bound buffers.
//!
//! The threads run in rounds. Every round starts at a spinning gate (`SpinGate`: the
//! threads leave it within the time a cache line takes to travel, where a sleeping barrier
//! wakes them one after another), and the round's bandwidth is the bytes of all passes over
//! the time from the first start to the last end, read from one clock: the part of a round
//! in which some threads have finished and the others stream alone is counted as such, not
//! as time when all of them streamed (dividing by the slowest thread's own pass did that, and
//! with many threads woken one by one it overstates the rate by the wake-up skew). Rounds
//! are added until the last few agree ([`SteadyRule`]); the figure is their median. A round in
//! which the host took a virtual CPU away is slow and is left out by the median, instead of
//! weighing on one long timed run (what made two threads read at 0.65× likwid-bench on a
//! busy AMD guest, whose vCPUs are descheduled often).
//!
//! Before every timed pass each thread evicts its buffer from every cache (`clflush` /
//! `dc civac`, [`topoprobe_sys::counter::flush_line`]), so that the pass streams from memory
//! however much cache there is: a guest told of one 32 MiB L3 may have its two vCPUs on two
//! dies with an L3 each, and a server's L3 may be larger than any buffer a budget allows.
//! The rule's time limit counts a round's whole wall time: the eviction, the wait at the gate
//! and the pass (counting only the passes let evictions of a 1 GiB working set stretch a
//! measurement to a minute on a 16-vCPU guest). Several kernels run on one set of buffers
//! ([`measure_kernels`]): one allocation and first touch serve read, write and copy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use super::kernel_kinds::{Isa, Kernel};
use super::kernels;
use super::MemError;
use crate::steady::{Steady, SteadyFigure, SteadyRule};
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};
use topoprobe_sys::counter::flush_lines;
use topoprobe_sys::usage::WaitClock;

/// One bandwidth run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stream {
    /// What the threads do.
    pub kernel: Kernel,
    /// Instruction set.
    pub isa: Isa,
    /// Non-temporal stores for write and copy.
    pub non_temporal: bool,
    /// Working set of all threads together, bytes (split evenly; copy splits each share
    /// between its source and destination, as likwid-bench does).
    pub bytes: u64,
    /// Node the buffers are bound to (`None`: first touch).
    pub node: Option<u32>,
    /// When to stop adding rounds (its time limit counts everything a round does: the
    /// eviction, the wait at the gate and the pass).
    pub rule: SteadyRule,
}

/// Several kernels run one after another on the same buffers (one allocation and first
/// touch for all of them).
#[derive(Debug, Clone, PartialEq)]
pub struct Streams {
    /// The kernels, in the order they run.
    pub kernels: Vec<Kernel>,
    /// Instruction set.
    pub isa: Isa,
    /// Non-temporal stores for write and copy.
    pub non_temporal: bool,
    /// Working set of all threads together, bytes (split evenly; copy splits each share
    /// between its source and destination).
    pub bytes: u64,
    /// Node the buffers are bound to (`None`: first touch).
    pub node: Option<u32>,
    /// When each kernel stops adding rounds.
    pub rule: SteadyRule,
}

/// What one round of one thread did.
#[derive(Debug, Clone, Copy)]
struct Pass {
    start: Instant,
    end: Instant,
    bytes: u64,
}

/// A barrier whose waiters spin: all leave within the time a cache line takes to travel,
/// so that timed passes start together. Only for threads pinned one per CPU (a spinning
/// waiter holds its CPU).
struct SpinGate {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinGate {
    fn new(threads: usize) -> Self {
        Self {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Waits until every thread has arrived.
    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            while self.generation.load(Ordering::Acquire) == generation {
                std::hint::spin_loop();
            }
        }
    }
}

/// Bandwidth of one round in GB/s and its wall time in seconds: the bytes of every pass
/// over the time from the earliest start to the latest end (`None` without passes).
fn round_rate<'a>(passes: impl Iterator<Item = &'a Pass> + Clone) -> Option<(f64, f64)> {
    let start = passes.clone().map(|p| p.start).min()?;
    let end = passes.clone().map(|p| p.end).max()?;
    let seconds = end.duration_since(start).as_secs_f64().max(1e-9);
    let bytes: u64 = passes.map(|p| p.bytes).sum();
    Some((bytes as f64 / seconds / 1e9, seconds))
}

/// Bytes of one thread's buffer: its share of `bytes`, a whole number of 8 KiB (so that
/// the halves a copy uses are whole pages), at least 8 KiB.
fn share_of(bytes: u64, threads: usize) -> u64 {
    const GRAIN: u64 = 8 << 10;
    (bytes / threads.max(1) as u64 / GRAIN).max(1) * GRAIN
}

/// Runs `stream` on every CPU of `cpus` at once (one thread each, buffers first touched
/// by their thread), in rounds until the rule is met; returns the bandwidth of all of them
/// together in GB/s (10^9 bytes per second; copy counts the bytes read and the bytes
/// written), with its spread, the rounds it took and how long its threads waited for their
/// CPUs.
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffers allocated or bound.
pub fn measure(cpus: &[u32], stream: &Stream) -> Result<SteadyFigure, MemError> {
    let figures = measure_kernels(
        cpus,
        &Streams {
            kernels: vec![stream.kernel],
            isa: stream.isa,
            non_temporal: stream.non_temporal,
            bytes: stream.bytes,
            node: stream.node,
            rule: stream.rule,
        },
    )?;
    figures.into_iter().next().ok_or(MemError::NoCpus)
}

/// Runs every kernel of `streams` in turn on every CPU of `cpus` at once, on buffers
/// allocated and first touched once by their threads; returns one figure per kernel, in
/// order (see [`measure`]).
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffer allocated or bound.
pub fn measure_kernels(cpus: &[u32], streams: &Streams) -> Result<Vec<SteadyFigure>, MemError> {
    if cpus.is_empty() {
        return Err(MemError::NoCpus);
    }
    let share = share_of(streams.bytes, cpus.len());
    let barrier = Barrier::new(cpus.len());
    let gate = SpinGate::new(cpus.len());
    let placement = PagePlacement {
        node: streams.node,
        huge_pages: Some(false),
    };
    let passes: Mutex<Vec<Option<Pass>>> = Mutex::new(vec![None; cpus.len()]);
    let figures: Mutex<Vec<SteadyFigure>> = Mutex::new(Vec::new());
    // The kernel under way: its rounds so far, and when its last round ended.
    let round: Mutex<(Steady, Instant)> = Mutex::new((Steady::new(streams.rule), Instant::now()));
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    // The share of each kernel's rounds each thread waited for its CPU.
    let waited: Mutex<Vec<Option<f64>>> = Mutex::new(vec![None; streams.kernels.len()]);
    let results: Vec<Result<(), MemError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let (barrier, gate, passes, figures, round, stop, failed, waited) = (
                    &barrier, &gate, &passes, &figures, &round, &stop, &failed, &waited,
                );
                s.spawn(move || {
                    let ready = prepare(cpu, share, placement);
                    if ready.is_err() {
                        failed.store(true, Ordering::Release);
                    }
                    barrier.wait();
                    if failed.load(Ordering::Acquire) {
                        return ready.map(|_| ());
                    }
                    let mut buf = ready?;
                    for (k, &kernel) in streams.kernels.iter().enumerate() {
                        if k == 0 {
                            // One untimed pass brings every page and TLB entry in.
                            pass(kernel, streams, &mut buf);
                        }
                        if barrier.wait().is_leader() {
                            if let Ok(mut r) = round.lock() {
                                *r = (Steady::new(streams.rule), Instant::now());
                            }
                            stop.store(false, Ordering::Release);
                        }
                        barrier.wait();
                        let waiting = WaitClock::start();
                        loop {
                            flush_lines(buf.words());
                            gate.wait();
                            let start = Instant::now();
                            let bytes = pass(kernel, streams, &mut buf);
                            let end = Instant::now();
                            if let Ok(mut p) = passes.lock() {
                                p[i] = Some(Pass { start, end, bytes });
                            }
                            if barrier.wait().is_leader() {
                                let rate = passes
                                    .lock()
                                    .ok()
                                    .and_then(|p| round_rate(p.iter().flatten()));
                                let done = round.lock().map_or(true, |mut r| {
                                    // A round's wall time counts everything since the last
                                    // one ended: the eviction, the gate and the pass.
                                    let now = Instant::now();
                                    let seconds = now.duration_since(r.1).as_secs_f64();
                                    r.1 = now;
                                    let done = rate.is_none_or(|(gbps, _)| r.0.push(gbps, seconds));
                                    if done {
                                        if let (Ok(mut f), Some(fig)) =
                                            (figures.lock(), r.0.figure())
                                        {
                                            f.push(fig);
                                        }
                                    }
                                    done
                                });
                                stop.store(done, Ordering::Release);
                            }
                            barrier.wait();
                            if stop.load(Ordering::Acquire) {
                                break;
                            }
                        }
                        if let (Ok(mut w), Some(share)) = (waited.lock(), waiting.share()) {
                            w[k] = Some(w[k].map_or(share, |x: f64| x.max(share)));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    for r in results {
        r?;
    }
    let mut figures = figures.into_inner().unwrap_or_default();
    for (f, w) in figures
        .iter_mut()
        .zip(waited.into_inner().unwrap_or_default())
    {
        f.waited = w;
    }
    if figures.len() == streams.kernels.len() {
        Ok(figures)
    } else {
        Err(MemError::NoCpus)
    }
}

/// Pins the thread and makes its buffer, first touched here.
fn prepare(cpu: u32, share: u64, placement: PagePlacement) -> Result<Buffer, MemError> {
    pin_current_thread(cpu)?;
    let mut buf = Buffer::new(share as usize, placement)?;
    buf.words_mut().fill(1);
    Ok(buf)
}

/// One pass of `kernel` over the thread's buffer (copy reads its first half into its
/// second); returns the bytes it moved.
fn pass(kernel: Kernel, streams: &Streams, buf: &mut Buffer) -> u64 {
    let (isa, nt) = (streams.isa, streams.non_temporal);
    match kernel {
        Kernel::Read => {
            std::hint::black_box(kernels::run(kernel, isa, nt, buf.words(), &mut []));
            buf.len_bytes() as u64
        }
        Kernel::Write => {
            kernels::run(kernel, isa, nt, &[], buf.words_mut());
            buf.len_bytes() as u64
        }
        Kernel::Copy => {
            let words = buf.words_mut();
            let half = words.len() / 2;
            let (src, dst) = words.split_at_mut(half);
            kernels::run(kernel, isa, nt, src, &mut dst[..half]);
            2 * 8 * half as u64
        }
        Kernel::Mix(mix) => {
            let per = super::mixes::stream_words(mix, buf.words().len());
            let (reads, writes) = mix.streams();
            let words = buf.words_mut();
            let (src, dst) = words.split_at_mut(reads * per);
            kernels::run(kernel, isa, nt, src, &mut dst[..per]);
            (8 * per * (reads + writes)) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_round_is_timed_from_the_first_start_to_the_last_end() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Two threads of 1 GB each: one from 0 to 10 ms, the other from 5 to 20 ms.
        let passes = [
            Pass {
                start: at(0),
                end: at(10),
                bytes: 1_000_000_000,
            },
            Pass {
                start: at(5),
                end: at(20),
                bytes: 1_000_000_000,
            },
        ];
        let (gbps, seconds) = round_rate(passes.iter()).unwrap();
        assert!((seconds - 0.020).abs() < 1e-9, "{seconds}");
        // 2 GB in 20 ms, not 2 GB over the slowest pass's own 15 ms.
        assert!((gbps - 100.0).abs() < 1e-6, "{gbps}");
        assert!(round_rate([].iter()).is_none());
    }

    #[test]
    fn the_spinning_gate_holds_every_thread_until_the_last_arrives_round_after_round() {
        const THREADS: usize = 3;
        const ROUNDS: usize = 50;
        let gate = SpinGate::new(THREADS);
        let arrivals = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for round in 0..ROUNDS {
                        arrivals.fetch_add(1, Ordering::SeqCst);
                        gate.wait();
                        // Nobody leaves round `round` before all have arrived at it.
                        assert!(arrivals.load(Ordering::SeqCst) >= (round + 1) * THREADS);
                        gate.wait();
                    }
                });
            }
        });
        assert_eq!(arrivals.load(Ordering::SeqCst), THREADS * ROUNDS);
    }
}
