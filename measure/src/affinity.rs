//! Pinning threads to hardware contexts (Linux `sched_setaffinity`).
//!
//! Masks are sized for the CPU ids involved, so machines with more than 1024 CPUs (the
//! size of glibc's fixed `cpu_set_t`) work too.

use std::io;

/// Why an affinity call failed.
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    /// The kernel refused the mask (the CPU is offline, outside the cgroup's cpuset, or
    /// does not exist).
    #[error("cannot pin to CPU {cpu}: {source} (is it online and allowed for this process?)")]
    Pin {
        /// The CPU asked for.
        cpu: u32,
        /// What the kernel said.
        source: io::Error,
    },
    /// The calling thread's affinity could not be read.
    #[error("cannot read this thread's CPU affinity: {0}")]
    Read(io::Error),
    /// The calling thread's affinity could not be restored or set.
    #[error("cannot set this thread's CPU affinity to {cpus:?}: {source}")]
    Set {
        /// The CPUs asked for.
        cpus: Vec<u32>,
        /// What the kernel said.
        source: io::Error,
    },
    /// An empty CPU set was asked for.
    #[error("an empty set of CPUs was asked for")]
    Empty,
}

/// Bits per mask word.
const WORD_BITS: usize = 64;

/// A CPU mask of `words` 64-bit words with `cpus` set.
fn mask_of(cpus: &[u32], words: usize) -> Vec<u64> {
    let mut mask = vec![0_u64; words];
    for &c in cpus {
        let c = c as usize;
        if let Some(w) = mask.get_mut(c / WORD_BITS) {
            *w |= 1 << (c % WORD_BITS);
        }
    }
    mask
}

/// The CPUs set in `mask`.
fn cpus_of(mask: &[u64]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, &w) in mask.iter().enumerate() {
        for bit in 0..WORD_BITS {
            if w & (1 << bit) != 0 {
                // A mask is at most a few thousand words: the id fits in u32.
                out.push(u32::try_from(i * WORD_BITS + bit).unwrap_or(u32::MAX));
            }
        }
    }
    out
}

/// Sets the calling thread's affinity to `cpus`.
fn set_mask(cpus: &[u32]) -> io::Result<()> {
    let highest = cpus.iter().copied().max().unwrap_or(0) as usize;
    let mask = mask_of(cpus, highest / WORD_BITS + 1);
    // SAFETY: `mask` is a live, initialised buffer of exactly the byte length passed, and
    // the kernel only reads it; pid 0 names the calling thread.
    let rc = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of_val(mask.as_slice()),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to one CPU (operating-system CPU number).
///
/// # Errors
///
/// Returns [`AffinityError::Pin`] when the kernel refuses: the CPU is offline, not in this
/// process's cpuset, or does not exist.
pub fn pin_current_thread(cpu: u32) -> Result<(), AffinityError> {
    set_mask(&[cpu]).map_err(|source| AffinityError::Pin { cpu, source })
}

/// Sets the calling thread's affinity to a set of CPUs (to undo a pin).
///
/// # Errors
///
/// Returns [`AffinityError::Empty`] for an empty set and [`AffinityError::Set`] when the
/// kernel refuses the set.
pub fn set_current_thread_affinity(cpus: &[u32]) -> Result<(), AffinityError> {
    if cpus.is_empty() {
        return Err(AffinityError::Empty);
    }
    set_mask(cpus).map_err(|source| AffinityError::Set {
        cpus: cpus.to_vec(),
        source,
    })
}

/// The CPUs the calling thread may run on (its affinity mask, which the cgroup cpuset
/// and `taskset` restrict), in increasing order.
///
/// # Errors
///
/// Returns [`AffinityError::Read`] when the kernel refuses even the largest mask tried.
pub fn allowed_cpus() -> Result<Vec<u32>, AffinityError> {
    let mut words = 16; // 1024 CPUs
    loop {
        let mut mask = vec![0_u64; words];
        // SAFETY: `mask` is a live, writable buffer of exactly the byte length passed; the
        // kernel writes at most that many bytes; pid 0 names the calling thread.
        let rc = unsafe {
            libc::sched_getaffinity(
                0,
                std::mem::size_of_val(mask.as_slice()),
                mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc >= 0 {
            return Ok(cpus_of(&mask));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the mask is smaller than the kernel's; try a larger one.
        if err.raw_os_error() == Some(libc::EINVAL) && words < 1 << 14 {
            words *= 4;
        } else {
            return Err(AffinityError::Read(err));
        }
    }
}

/// The CPU the calling thread runs on now.
#[must_use]
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_beyond_1024_cpus() {
        let cpus = vec![0, 5, 63, 64, 1023, 1024, 4097];
        let mask = mask_of(&cpus, 4097 / 64 + 1);
        assert_eq!(cpus_of(&mask), cpus);
    }

    #[test]
    fn pinning_moves_the_thread_and_can_be_undone() {
        let allowed = allowed_cpus().expect("affinity");
        assert!(!allowed.is_empty());
        let last = *allowed.last().expect("one CPU");
        std::thread::spawn(move || {
            pin_current_thread(last).expect("pin");
            assert_eq!(allowed_cpus().expect("affinity"), vec![last]);
            assert_eq!(current_cpu(), Some(last));
            set_current_thread_affinity(&allowed).expect("unpin");
            assert_eq!(allowed_cpus().expect("affinity"), allowed);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn pinning_to_a_missing_cpu_is_a_clear_error() {
        let e = std::thread::spawn(|| pin_current_thread(100_000).unwrap_err())
            .join()
            .expect("thread");
        let text = e.to_string();
        assert!(text.contains("CPU 100000"), "{text}");
        assert!(matches!(
            set_current_thread_affinity(&[]),
            Err(AffinityError::Empty)
        ));
    }
}
