//! A counting global allocator: the system allocator, with the bytes each thread holds
//! and the most it held since [`measure`] began, and the same of the whole process
//! ([`measure_process`]). The fuzz binaries and the corpus replay
//! link it (it is this crate's `#[global_allocator]`), so a target can assert that a
//! reader's memory stays proportional to its input: a crafted description of a few
//! megabytes once made the loader allocate 1.8 GB before refusing it.
//!
//! The counts are per thread (the readers are single-threaded, and `cargo test` runs tests
//! side by side). A reallocation counts both blocks while it lasts, the upper bound of
//! what it costs. No crate on crates.io does exactly this (per thread, with a peak that
//! can be reset); the wrapper is a few lines over [`System`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread.
    static HELD: Cell<isize> = const { Cell::new(0) };
    /// The most [`HELD`] reached since the last [`measure`] began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Bytes allocated minus bytes freed by every thread of the process.
static PROCESS_HELD: AtomicIsize = AtomicIsize::new(0);
/// The most [`PROCESS_HELD`] reached since the last [`measure_process`] began.
static PROCESS_PEAK: AtomicIsize = AtomicIsize::new(0);

/// Adds `delta` bytes to this thread's count and the process's, raising their peaks when
/// `peak` is set. `try_with`: after a thread's locals are gone, its last frees go
/// uncounted in its own count (never in the process's).
fn count(delta: isize, peak: bool) {
    let now = PROCESS_HELD
        .fetch_add(delta, Ordering::Relaxed)
        .wrapping_add(delta);
    if peak {
        PROCESS_PEAK.fetch_max(now, Ordering::Relaxed);
    }
    let _ = HELD.try_with(|held| {
        let now = held.get().wrapping_add(delta);
        held.set(now);
        if peak {
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        }
    });
}

/// A size as a count (a layout's size is at most `isize::MAX`).
fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and
// returns its result; the counting touches only this thread's plain `Cell`s (const
// thread locals without destructors, which never allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(signed(layout.size()), true);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed` is `System.alloc_zeroed`'s.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(signed(layout.size()), true);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-signed(layout.size()), false);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // While it lasts, a reallocation may hold the old block and the new one.
        count(signed(new_size), true);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller's contract for
        // `realloc` is `System.realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            count(-signed(new_size), false);
        } else {
            count(-signed(layout.size()), false);
        }
        p
    }
}

/// Runs `f` and returns its result with the most bytes this thread held during it, above
/// what it held when `f` began (0 when `f` frees more than it allocates).
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = HELD.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, usize::try_from(peak - start).unwrap_or(0))
}

/// Runs `f` and returns its result with the most bytes all the threads of the process
/// held during it, above what they held when `f` began: the memory of work that spreads
/// over threads. Whatever else the process runs at the time counts too, so a test that
/// uses it runs alone in its test binary.
pub fn measure_process<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = PROCESS_HELD.load(Ordering::Relaxed);
    PROCESS_PEAK.store(start, Ordering::Relaxed);
    let r = f();
    let peak = PROCESS_PEAK.load(Ordering::Relaxed);
    (r, usize::try_from(peak - start).unwrap_or(0))
}

/// The most memory a reader may hold while reading `len` bytes of text: 64 MiB and 32
/// bytes per byte of text (a latency `1,` of two bytes is 16 in memory, doubled while
/// its table grows).
#[must_use]
pub const fn reading_bound(len: usize) -> usize {
    (64 << 20) + len.saturating_mul(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_is_counted_and_freed() {
        let (len, peak) = measure(|| vec![1_u8; 10 << 20].len());
        assert_eq!(len, 10 << 20);
        assert!((10 << 20..11 << 20).contains(&peak), "{peak}");
        let ((), peak) = measure(|| {});
        assert!(peak < 4096, "{peak}");
    }

    #[test]
    fn growth_counts_both_blocks() {
        let (_, peak) = measure(|| {
            let mut v = vec![0_u64; 1 << 20];
            v.reserve_exact(1 << 20);
            v
        });
        assert!(peak >= 3 * (8 << 20), "{peak}");
    }
}
