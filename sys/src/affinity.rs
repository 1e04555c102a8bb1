//! Thread and process CPU affinity (Linux `sched_setaffinity`/`sched_getaffinity`).
//!
//! Masks are sized for the CPU ids involved ([`CpuSet`]), so machines with more than 1024
//! CPUs work too. Functions named `*_current_thread` act on the calling thread; the others
//! take a thread id (`tid`, as in `/proc/<pid>/task/<tid>`; a process id names its main
//! thread).

use std::io;

use crate::CpuSet;

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
    /// A thread's affinity could not be read.
    #[error("cannot read the CPU affinity of {who}: {source}")]
    Read {
        /// `this thread` or `thread <tid>`.
        who: String,
        /// What the kernel said.
        source: io::Error,
    },
    /// A thread's affinity could not be set.
    #[error("cannot set the CPU affinity of {who} to CPUs {cpus}: {source}")]
    Set {
        /// `this thread` or `thread <tid>`.
        who: String,
        /// The CPUs asked for.
        cpus: CpuSet,
        /// What the kernel said.
        source: io::Error,
    },
    /// An empty CPU set was asked for.
    #[error("an empty set of CPUs was asked for")]
    Empty,
}

impl AffinityError {
    /// The OS error behind this failure, if any (`EPERM`: the thread belongs to another
    /// user; `ESRCH`: it has exited).
    #[must_use]
    pub fn os_error(&self) -> Option<&io::Error> {
        match self {
            Self::Pin { source, .. } | Self::Read { source, .. } | Self::Set { source, .. } => {
                Some(source)
            }
            Self::Empty => None,
        }
    }
}

/// Sets the affinity of thread `tid` (0: the calling thread).
fn set_mask(tid: libc::pid_t, cpus: &CpuSet) -> io::Result<()> {
    let mask = cpus.to_words();
    // SAFETY: `mask` is a live, initialised buffer of exactly the byte length passed, and
    // the kernel only reads it.
    let rc = unsafe {
        libc::sched_setaffinity(
            tid,
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

/// Reads the affinity of thread `tid` (0: the calling thread), growing the mask until the
/// kernel's fits.
fn get_mask(tid: libc::pid_t) -> io::Result<CpuSet> {
    let mut words = 16; // 1024 CPUs
    loop {
        let mut mask = vec![0_u64; words];
        // SAFETY: `mask` is a live, writable buffer of exactly the byte length passed; the
        // kernel writes at most that many bytes.
        let rc = unsafe {
            libc::sched_getaffinity(
                tid,
                std::mem::size_of_val(mask.as_slice()),
                mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc >= 0 {
            return Ok(CpuSet::from_words(&mask));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the mask is smaller than the kernel's; try a larger one.
        if err.raw_os_error() == Some(libc::EINVAL) && words < 1 << 14 {
            words *= 4;
        } else {
            return Err(err);
        }
    }
}

/// Pins the calling thread to one CPU (operating-system CPU number).
///
/// # Errors
///
/// Returns [`AffinityError::Pin`] when the kernel refuses: the CPU is offline, not in this
/// process's cpuset, or does not exist.
pub fn pin_current_thread(cpu: u32) -> Result<(), AffinityError> {
    set_mask(0, &CpuSet::from([cpu])).map_err(|source| AffinityError::Pin { cpu, source })
}

/// Sets the calling thread's affinity to a set of CPUs (to undo a pin).
///
/// # Errors
///
/// Returns [`AffinityError::Empty`] for an empty set and [`AffinityError::Set`] when the
/// kernel refuses the set.
pub fn set_current_thread_affinity(cpus: &CpuSet) -> Result<(), AffinityError> {
    set_thread_affinity(0, cpus)
}

/// Sets the affinity of thread `tid` (0: the calling thread).
///
/// # Errors
///
/// Returns [`AffinityError::Empty`] for an empty set and [`AffinityError::Set`] when the
/// kernel refuses: `EPERM` for another user's thread, `ESRCH` for a thread that exited,
/// `EINVAL` for CPUs outside its cpuset.
pub fn set_thread_affinity(tid: i32, cpus: &CpuSet) -> Result<(), AffinityError> {
    if cpus.is_empty() {
        return Err(AffinityError::Empty);
    }
    set_mask(tid, cpus).map_err(|source| AffinityError::Set {
        who: who(tid),
        cpus: cpus.clone(),
        source,
    })
}

/// The CPUs the calling thread may run on (its affinity mask, which the cgroup cpuset
/// and `taskset` restrict), in increasing order.
///
/// # Errors
///
/// Returns [`AffinityError::Read`] when the kernel refuses even the largest mask tried.
pub fn allowed_cpus() -> Result<CpuSet, AffinityError> {
    thread_affinity(0)
}

/// The lowest-numbered CPU the calling thread may run on; `None` when the set cannot be
/// read or is empty.
#[must_use]
pub fn first_allowed_cpu() -> Option<u32> {
    allowed_cpus().ok().and_then(|s| s.iter().next())
}

/// The affinity mask of thread `tid` (0: the calling thread).
///
/// # Errors
///
/// Returns [`AffinityError::Read`] when the kernel refuses (`ESRCH`: the thread exited).
pub fn thread_affinity(tid: i32) -> Result<CpuSet, AffinityError> {
    get_mask(tid).map_err(|source| AffinityError::Read {
        who: who(tid),
        source,
    })
}

/// The CPUs the kernel has online (`/sys/devices/system/cpu/online`).
///
/// # Errors
///
/// When the file cannot be read or is not a CPU list.
pub fn online_cpus() -> io::Result<CpuSet> {
    let path = "/sys/devices/system/cpu/online";
    let text = topoprobe_files::read_string_lossy(
        std::path::Path::new(path),
        topoprobe_files::Rules::file(1 << 16),
    )?;
    CpuSet::parse_list(text.trim())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}")))
}

/// How a thread is named in messages.
fn who(tid: i32) -> String {
    if tid == 0 {
        "this thread".to_string()
    } else {
        format!("thread {tid}")
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
    fn pinning_moves_the_thread_and_can_be_undone() {
        let allowed = allowed_cpus().expect("affinity");
        assert!(!allowed.is_empty());
        let last = allowed.highest().expect("one CPU");
        std::thread::spawn(move || {
            pin_current_thread(last).expect("pin");
            assert_eq!(allowed_cpus().expect("affinity").to_vec(), vec![last]);
            assert_eq!(current_cpu(), Some(last));
            set_current_thread_affinity(&allowed).expect("unpin");
            assert_eq!(allowed_cpus().expect("affinity"), allowed);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn another_threads_affinity_can_be_read_and_set() {
        let allowed = allowed_cpus().expect("affinity");
        let first = allowed.iter().next().expect("one CPU");
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments and cannot fail.
            let tid = unsafe { libc::gettid() };
            tx.send(tid).expect("send");
            done_rx.recv().ok();
        });
        let tid = rx.recv().expect("tid");
        set_thread_affinity(tid, &CpuSet::from([first])).expect("set");
        assert_eq!(thread_affinity(tid).expect("read").to_vec(), vec![first]);
        done_tx.send(()).expect("send");
        t.join().expect("thread");
    }

    #[test]
    fn pinning_to_a_missing_cpu_is_a_clear_error() {
        let e = std::thread::spawn(|| pin_current_thread(100_000).unwrap_err())
            .join()
            .expect("thread");
        let text = e.to_string();
        assert!(text.contains("CPU 100000"), "{text}");
        assert!(matches!(
            set_current_thread_affinity(&CpuSet::new()),
            Err(AffinityError::Empty)
        ));
        let online = online_cpus().expect("online CPUs");
        assert!(allowed_cpus()
            .expect("affinity")
            .iter()
            .all(|c| online.contains(c)));
        let gone = thread_affinity(i32::MAX).unwrap_err();
        assert!(gone.to_string().contains(&format!("thread {}", i32::MAX)));
        assert_eq!(
            gone.os_error().and_then(io::Error::raw_os_error),
            Some(libc::ESRCH)
        );
    }
}
