//! The CPU's cycle counter and cache-line maintenance: the few instructions that timing and
//! cache-state experiments need, each behind a safe function.
//!
//! - [`read`]: the time-stamp counter on x86_64 (`rdtsc`), the generic timer's virtual count
//!   on aarch64 (`cntvct_el0`); [`probe`] says whether it runs at a constant rate.
//! - [`flush_line`]: evicts the cache line holding an address from every cache
//!   (`clflush` on x86_64, `dc civac` on aarch64), for experiments that need a line in the
//!   invalid state.

/// Which counter [`read`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// x86_64 time-stamp counter.
    Tsc,
    /// aarch64 generic timer (virtual count register).
    ArmCounter,
}

impl std::fmt::Display for CounterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Tsc => "tsc",
            Self::ArmCounter => "arm-counter",
        })
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::CounterKind;

    /// Reads the time-stamp counter.
    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: rdtsc exists on every x86_64 CPU and only reads the counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    /// The TSC when the kernel reports it invariant.
    pub(super) fn probe() -> Result<CounterKind, String> {
        let cpuinfo = crate::proc::read_small(std::path::Path::new("/proc/cpuinfo"))
            .map_err(|e| format!("cannot read the TSC's flags: {e}"))?;
        let flags = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        if has("constant_tsc") && has("nonstop_tsc") {
            Ok(CounterKind::Tsc)
        } else {
            Err("the TSC is not invariant (no constant_tsc and nonstop_tsc flags)".to_string())
        }
    }

    /// Flushes the line of `p` from every cache.
    #[inline]
    pub(super) fn flush(p: *const u8) {
        // SAFETY: clflush is part of SSE2, which every x86_64 CPU has; it takes any address
        // the process can read (callers pass a reference) and changes no memory contents.
        unsafe { core::arch::x86_64::_mm_clflush(p) };
    }

    /// Waits for earlier flushes and memory accesses to complete.
    #[inline]
    pub(super) fn fence() {
        // SAFETY: mfence exists on every x86_64 CPU (SSE2) and has no operands.
        unsafe { core::arch::x86_64::_mm_mfence() };
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    use super::CounterKind;

    /// Reads the virtual count register.
    #[inline]
    pub(super) fn read() -> u64 {
        let v: u64;
        // SAFETY: cntvct_el0 is readable from user space on Linux (the kernel enables
        // EL0 access) and reading it has no side effects.
        unsafe {
            core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack))
        };
        v
    }

    /// The generic timer (constant frequency by architecture).
    pub(super) fn probe() -> Result<CounterKind, String> {
        Ok(CounterKind::ArmCounter)
    }

    /// Cleans and invalidates the line of `p` to the point of coherency.
    #[inline]
    pub(super) fn flush(p: *const u8) {
        // SAFETY: Linux enables `dc civac` at EL0 (SCTLR_EL1.UCI); it takes an address the
        // process can read (callers pass a reference) and changes no memory contents.
        unsafe { core::arch::asm!("dc civac, {}", in(reg) p, options(nostack)) };
    }

    /// Waits for earlier cache maintenance and memory accesses to complete.
    #[inline]
    pub(super) fn fence() {
        // SAFETY: `dsb ish` is a barrier with no operands.
        unsafe { core::arch::asm!("dsb ish", options(nostack)) };
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    use super::CounterKind;

    pub(super) fn read() -> u64 {
        0
    }

    pub(super) fn probe() -> Result<CounterKind, String> {
        Err("no cycle counter is supported on this architecture".to_string())
    }

    pub(super) fn flush(_p: *const u8) {}

    pub(super) fn fence() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Reads the cycle counter (0 on architectures without a supported one: check [`probe`]).
#[inline]
#[must_use]
pub fn read() -> u64 {
    imp::read()
}

/// The counter [`read`] uses, when it runs at a constant rate on this machine.
///
/// # Errors
///
/// Returns the reason when there is no usable counter: an x86_64 TSC that the kernel does
/// not report invariant, or an unsupported architecture.
pub fn probe() -> Result<CounterKind, String> {
    imp::probe()
}

/// Whether [`flush_line`] really evicts lines on this architecture.
#[must_use]
pub const fn can_flush() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

/// Evicts the cache line holding `value` from every cache of the machine (a no-op where
/// [`can_flush`] is false).
#[inline]
pub fn flush_line<T: ?Sized>(value: &T) {
    imp::flush(std::ptr::from_ref(value).cast::<u8>());
}

/// Evicts every cache line holding part of `values` from every cache, then waits for the
/// evictions to complete (a no-op where [`can_flush`] is false). No cache line is smaller
/// than 64 bytes, so one flush per 64 bytes covers them all.
pub fn flush_lines<T>(values: &[T]) {
    if !can_flush() {
        return;
    }
    let bytes = std::mem::size_of_val(values);
    let base = values.as_ptr().cast::<u8>();
    for offset in (0..bytes).step_by(64) {
        // SAFETY: `offset < bytes`, so the pointer stays inside `values`, one allocation.
        imp::flush(unsafe { base.add(offset) });
    }
    fence();
}

/// A full memory fence that also orders cache flushes (`mfence`, `dsb ish`).
#[inline]
pub fn fence() {
    imp::fence();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_advances_where_there_is_one() {
        if probe().is_err() {
            return;
        }
        let a = read();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(read() > a);
    }

    #[test]
    fn flushing_keeps_the_value() {
        let x = std::sync::atomic::AtomicU64::new(7);
        flush_line(&x);
        fence();
        assert_eq!(x.load(std::sync::atomic::Ordering::Relaxed), 7);
    }
}
