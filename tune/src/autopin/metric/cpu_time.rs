//! CPU time per wall second from `/proc/<pid>/task/<tid>/schedstat`: time the program's
//! threads ran on a CPU (the score) and time they waited on a run queue (reported), with
//! no hardware counters.

use std::collections::HashMap;

use topoprobe_sys::proc::{self, ProcError};

use super::Metric;
use crate::error::TuneError;

/// The CPU-time metric of one process.
#[derive(Debug)]
pub struct CpuTime {
    pid: i32,
    /// Last `(run, wait)` nanoseconds read per thread (kept for threads that exited).
    last: HashMap<i32, (u64, u64)>,
}

impl CpuTime {
    /// The metric for process `pid`.
    #[must_use]
    pub fn new(pid: i32) -> Self {
        Self {
            pid,
            last: HashMap::new(),
        }
    }

    /// Whether schedstat can be read for process `pid` (`Err`: why not).
    ///
    /// # Errors
    ///
    /// The reason, in words.
    pub fn available(pid: i32) -> Result<(), String> {
        match proc::schedstat(pid, Some(pid)) {
            Ok(_) | Err(ProcError::Gone { .. }) => Ok(()),
            Err(e) => Err(format!("{e} (the kernel needs schedstat support)")),
        }
    }

    /// Nanoseconds spent waiting on a run queue so far, summed over the threads.
    #[must_use]
    pub fn wait_ns(&self) -> u64 {
        self.last.values().map(|&(_, w)| w).sum()
    }
}

impl Metric for CpuTime {
    fn name(&self) -> &str {
        "cpu-time"
    }

    fn unit(&self) -> &str {
        "CPU s/s"
    }

    fn total(&mut self, tids: &[i32]) -> Result<f64, TuneError> {
        for &t in tids {
            match proc::schedstat(self.pid, Some(t)) {
                Ok(s) => {
                    let e = self.last.entry(t).or_insert((0, 0));
                    *e = (e.0.max(s.run_ns), e.1.max(s.wait_ns));
                }
                Err(ProcError::Gone { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let run: u64 = self.last.values().map(|&(r, _)| r).sum();
        Ok(run as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time of the calling thread, in seconds.
    fn thread_cpu_s() -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime");
        ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
    }

    #[test]
    fn own_cpu_time_grows() {
        let pid = i32::try_from(std::process::id()).expect("pid");
        if let Err(why) = CpuTime::available(pid) {
            eprintln!("skipped: schedstat unavailable: {why}");
            return;
        }
        let tids = proc::threads(pid).expect("threads");
        let mut m = CpuTime::new(pid);
        let a = m.total(&tids).expect("reads");
        // Burn 0.2 s of this thread's CPU time (however loaded the machine is).
        let start = thread_cpu_s();
        let mut x = 0_u64;
        while thread_cpu_s() - start < 0.2 {
            for i in 0..100_000_u64 {
                x = x.wrapping_add(i ^ (i >> 3));
            }
            std::hint::black_box(x);
        }
        let b = m.total(&tids).expect("reads");
        // schedstat lags the running thread by at most a scheduler tick (1-10 ms) on each
        // read: most of the 0.2 s must show.
        assert!(b - a >= 0.1, "CPU time went from {a} s to {b} s");
        // A thread that is gone keeps its last value.
        assert!(m.total(&[i32::MAX]).expect("reads") >= b);
        assert_eq!(m.name(), "cpu-time");
    }
}
