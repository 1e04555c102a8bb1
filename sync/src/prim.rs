//! The atomics and the spin hint the locks use: `std`'s, or loom's when the crate is built
//! with `--cfg loom` for model checking (`tests/loom.rs`), where every spin is a yield so
//! that loom explores the interleavings instead of one thread's spinning.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

/// Yields the CPU to another thread (loom's yield under loom).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// One iteration of a busy wait: `pause` (x86) / `yield` (Arm); a scheduler yield under loom.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
