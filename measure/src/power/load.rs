//! The busy load of the power measurement: one pinned thread per CPU streaming over its
//! own buffer (memory intensive, as libmctop's power plugin), or a compute loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use super::{PowerError, Workload};
use topoprobe_sys::affinity::pin_current_thread;

/// Words of a buffer processed between two looks at the stop flag (256 KiB).
const CHUNK_WORDS: usize = 32 * 1024;

/// Keeps a set of CPUs busy with pinned threads until stopped (or dropped).
#[derive(Debug)]
pub struct BusyLoad {
    memory_bytes: usize,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BusyLoad {
    /// A load whose threads stream over `memory_bytes` together (split evenly; each buffer
    /// is allocated and first touched by its thread after pinning, so it lies on the
    /// thread's local node); 0 for a compute loop.
    #[must_use]
    pub fn new(memory_bytes: usize) -> Self {
        Self {
            memory_bytes,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        }
    }

    /// Number of threads running.
    #[must_use]
    pub fn running(&self) -> usize {
        self.threads.len()
    }
}

/// Streams over `buf` (read, modify, write) until `stop` is set; a compute loop when the
/// buffer is empty.
fn busy(buf: &mut [u64], stop: &AtomicBool) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while !stop.load(Ordering::Relaxed) {
        if buf.is_empty() {
            for _ in 0..100_000 {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            x = std::hint::black_box(x);
            continue;
        }
        for chunk in buf.chunks_mut(CHUNK_WORDS) {
            for v in chunk.iter_mut() {
                *v = v.wrapping_add(x);
            }
            x = std::hint::black_box(x.rotate_left(1));
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

/// The body of a load thread: pin, allocate, report, run.
fn thread_main(
    cpu: u32,
    words: usize,
    stop: &AtomicBool,
    ready: &mpsc::Sender<Result<(), PowerError>>,
) {
    if let Err(e) = pin_current_thread(cpu) {
        let _ = ready.send(Err(PowerError::Load {
            cpu,
            reason: e.to_string(),
        }));
        return;
    }
    let mut buf: Vec<u64> = Vec::new();
    if buf.try_reserve_exact(words).is_err() {
        let _ = ready.send(Err(PowerError::Load {
            cpu,
            reason: format!("cannot allocate a buffer of {} bytes", words * 8),
        }));
        return;
    }
    // First touch on the pinned CPU.
    buf.resize(words, 1);
    if ready.send(Ok(())).is_err() {
        return;
    }
    busy(&mut buf, stop);
}

impl Workload for BusyLoad {
    fn start(&mut self, cpus: &[u32]) -> Result<(), PowerError> {
        self.stop();
        self.stop = Arc::new(AtomicBool::new(false));
        let words = self
            .memory_bytes
            .checked_div(cpus.len())
            .map_or(0, |bytes| bytes / 8);
        let (tx, rx) = mpsc::channel();
        for &cpu in cpus {
            let tx = tx.clone();
            let stop = Arc::clone(&self.stop);
            let spawned = std::thread::Builder::new()
                .name(format!("power-load-{cpu}"))
                .spawn(move || thread_main(cpu, words, &stop, &tx));
            match spawned {
                Ok(h) => self.threads.push(h),
                Err(e) => {
                    self.stop();
                    return Err(PowerError::Load {
                        cpu,
                        reason: format!("cannot start a thread: {e}"),
                    });
                }
            }
        }
        drop(tx);
        for &cpu in cpus {
            let outcome = rx.recv().unwrap_or_else(|_| {
                Err(PowerError::Load {
                    cpu,
                    reason: "a load thread ended before it was ready".to_string(),
                })
            });
            if let Err(e) = outcome {
                self.stop();
                return Err(e);
            }
        }
        Ok(())
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.threads.drain(..) {
            // A load thread has nothing to report; a panic in one has already printed.
            let _ = h.join();
        }
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_sys::affinity::allowed_cpus;

    #[test]
    fn threads_start_pinned_and_stop() {
        let cpus = allowed_cpus().expect("affinity").to_vec();
        let first = cpus[0];
        let mut load = BusyLoad::new(1 << 20);
        load.start(&[first]).expect("start");
        assert_eq!(load.running(), 1);
        load.stop();
        assert_eq!(load.running(), 0);
        // Idle: no thread.
        load.start(&[]).expect("idle");
        assert_eq!(load.running(), 0);
    }

    #[test]
    fn a_cpu_that_cannot_be_used_is_named() {
        let mut load = BusyLoad::new(0);
        let e = load.start(&[1 << 20]).unwrap_err();
        assert!(
            matches!(e, PowerError::Load { cpu, .. } if cpu == 1 << 20),
            "{e:?}"
        );
        assert!(e.to_string().contains("CPU 1048576"), "{e}");
        assert_eq!(load.running(), 0);
    }

    #[test]
    fn the_stream_loop_ends_when_told() {
        let stop = AtomicBool::new(true);
        let mut buf = vec![1_u64; 10];
        busy(&mut buf, &stop);
        assert_eq!(buf, vec![1; 10], "a stopped loop does not run");
        let mut empty: Vec<u64> = Vec::new();
        busy(&mut empty, &stop);
    }
}
