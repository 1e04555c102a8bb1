//! Memory bandwidth of one or more pinned threads streaming through node-bound buffers.
//!
//! The threads run in rounds: a barrier starts every round, each thread times its own pass,
//! and the round's bandwidth is the bytes of all passes over the slowest pass. Rounds are
//! added until the last few agree ([`SteadyRule`]); the figure is their median. A round in
//! which the host took a virtual CPU away is slow and is left out by the median, instead of
//! weighing on one long timed run (what made two threads read at 0.65× likwid-bench on a
//! busy AMD guest, whose vCPUs are descheduled often).
//!
//! Before every timed pass each thread evicts its buffers from every cache (`clflush` /
//! `dc civac`, [`topoprobe_sys::counter::flush_line`]), so that the pass streams from memory
//! however much cache the host lends the guest: a guest told of one 32 MiB L3 may have its
//! two vCPUs on two dies with an L3 each, which a working set of a few times the L3 the
//! guest knows of does not defeat.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use super::kernels::{self, Isa, Kernel};
use super::MemError;
use crate::steady::{Steady, SteadyFigure, SteadyRule};
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};
use topoprobe_sys::counter::{can_flush, fence, flush_line};

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
    /// When to stop adding rounds.
    pub rule: SteadyRule,
}

/// What one round of one thread did.
#[derive(Debug, Clone, Copy, Default)]
struct Pass {
    seconds: f64,
    bytes: u64,
}

/// Runs `stream` on every CPU of `cpus` at once (one thread each, buffers first touched
/// by their thread), in rounds until the rule is met; returns the bandwidth of all of them
/// together in GB/s (10^9 bytes per second; copy counts the bytes read and the bytes
/// written), with its spread and the rounds it took.
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffers allocated or bound.
pub fn measure(cpus: &[u32], stream: &Stream) -> Result<SteadyFigure, MemError> {
    if cpus.is_empty() {
        return Err(MemError::NoCpus);
    }
    let share = (stream.bytes / cpus.len() as u64).max(4096);
    let barrier = Barrier::new(cpus.len());
    let placement = PagePlacement {
        node: stream.node,
        huge_pages: Some(false),
    };
    let passes = Mutex::new(vec![Pass::default(); cpus.len()]);
    let steady = Mutex::new(Steady::new(stream.rule));
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<(), MemError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let (barrier, passes, steady, stop, failed) =
                    (&barrier, &passes, &steady, &stop, &failed);
                s.spawn(move || {
                    let ready = prepare(cpu, share, stream.kernel, placement);
                    if ready.is_err() {
                        failed.store(true, Ordering::Release);
                    }
                    barrier.wait();
                    if failed.load(Ordering::Acquire) {
                        return ready.map(|_| ());
                    }
                    let (mut src, mut dst) = ready?;
                    // One untimed pass brings every page and TLB entry in.
                    pass(stream, &mut src, &mut dst);
                    loop {
                        evict(&src);
                        evict(&dst);
                        barrier.wait();
                        let t = Instant::now();
                        let bytes = pass(stream, &mut src, &mut dst);
                        let seconds = t.elapsed().as_secs_f64();
                        if let Ok(mut p) = passes.lock() {
                            p[i] = Pass { seconds, bytes };
                        }
                        if barrier.wait().is_leader() {
                            let round = passes.lock().map(|p| p.clone()).unwrap_or_default();
                            let slowest = round.iter().map(|p| p.seconds).fold(0.0, f64::max);
                            let bytes: u64 = round.iter().map(|p| p.bytes).sum();
                            let gbps = bytes as f64 / slowest.max(1e-9) / 1e9;
                            let done = steady.lock().map_or(true, |mut s| s.push(gbps, slowest));
                            stop.store(done, Ordering::Release);
                        }
                        barrier.wait();
                        if stop.load(Ordering::Acquire) {
                            return Ok(());
                        }
                    }
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
    let figure = steady.lock().ok().and_then(|s| s.figure());
    figure.ok_or(MemError::NoCpus)
}

type Buffers = (Buffer, Buffer);

fn prepare(
    cpu: u32,
    share: u64,
    kernel: Kernel,
    placement: PagePlacement,
) -> Result<Buffers, MemError> {
    pin_current_thread(cpu)?;
    let (a, b) = match kernel {
        Kernel::Read | Kernel::Write => (share, 4096),
        Kernel::Copy => (share / 2, share / 2),
    };
    let mut src = Buffer::new(a as usize, placement)?;
    let mut dst = Buffer::new(b as usize, placement)?;
    src.words_mut().fill(1);
    dst.words_mut().fill(0);
    Ok((src, dst))
}

/// Evicts every line of `buffer` from every cache, flushing every 64 bytes (no cache line
/// is smaller); nothing where the architecture has no flush.
fn evict(buffer: &Buffer) {
    if can_flush() {
        for w in buffer.words().iter().step_by(8) {
            flush_line(w);
        }
        fence();
    }
}

/// One pass; returns the bytes it moved.
fn pass(stream: &Stream, src: &mut Buffer, dst: &mut Buffer) -> u64 {
    let (k, isa, nt) = (stream.kernel, stream.isa, stream.non_temporal);
    match k {
        Kernel::Read => {
            std::hint::black_box(kernels::run(k, isa, nt, src.words(), &mut []));
            src.len_bytes() as u64
        }
        Kernel::Write => {
            kernels::run(k, isa, nt, &[], src.words_mut());
            src.len_bytes() as u64
        }
        Kernel::Copy => {
            kernels::run(k, isa, nt, src.words(), dst.words_mut());
            2 * src.len_bytes().min(dst.len_bytes()) as u64
        }
    }
}
