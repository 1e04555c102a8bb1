//! Memory bandwidth of one or more pinned threads streaming through node-bound buffers.

use std::sync::Barrier;
use std::time::Instant;

use super::kernels::{self, Isa, Kernel};
use super::MemError;
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};

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
    /// Timed passes over the buffers.
    pub passes: usize,
}

/// Runs `stream` on every CPU of `cpus` at once (one thread each, buffers first touched
/// by their thread); returns the bandwidth of all of them together in GB/s (10^9 bytes
/// per second; copy counts the bytes read and the bytes written).
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffers allocated or bound.
pub fn measure(cpus: &[u32], stream: &Stream) -> Result<f64, MemError> {
    if cpus.is_empty() {
        return Err(MemError::NoCpus);
    }
    let share = (stream.bytes / cpus.len() as u64).max(4096);
    let barrier = Barrier::new(cpus.len());
    let placement = PagePlacement {
        node: stream.node,
        huge_pages: Some(false),
    };
    let results: Vec<Result<(f64, u64), MemError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let barrier = &barrier;
                s.spawn(move || {
                    let ready = prepare(cpu, share, stream.kernel, placement);
                    barrier.wait();
                    let (mut src, mut dst) = ready?;
                    // One untimed pass brings every page and TLB entry in.
                    let mut moved = 0u64;
                    pass(stream, &mut src, &mut dst);
                    barrier.wait();
                    let t = Instant::now();
                    for _ in 0..stream.passes.max(1) {
                        moved += pass(stream, &mut src, &mut dst);
                    }
                    Ok((t.elapsed().as_secs_f64(), moved))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut slowest = 0f64;
    let mut bytes = 0u64;
    for r in results {
        let (secs, moved) = r?;
        slowest = slowest.max(secs);
        bytes += moved;
    }
    Ok(bytes as f64 / slowest.max(1e-9) / 1e9)
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
