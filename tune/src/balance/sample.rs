//! What the monitor sees in one interval: every monitored thread and process, and every
//! CPU, as rates over the interval. Metrics fill it ([`super::metrics`]); rules read it
//! ([`super::rules`]).

use std::collections::BTreeMap;

use serde::Serialize;
use topoprobe_sys::CpuSet;

/// One thread over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSample {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its affinity mask now.
    pub mask: CpuSet,
    /// The CPUs the balancer may give it (cgroup cpuset, with `--keep-affinity` its mask
    /// when first seen, and the topology's CPUs).
    pub allowed: CpuSet,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Whether this is its first interval (no rates yet).
    pub fresh: bool,
    /// CPU time per second (0 to 1).
    pub run: f64,
    /// Run-queue wait per second (0 to 1).
    pub wait: f64,
    /// Voluntary context switches per second (it blocked: I/O, communication).
    pub voluntary: f64,
    /// Involuntary context switches per second (it was preempted).
    pub involuntary: f64,
    /// CPU changes per second.
    pub migrations: f64,
    /// Last-level cache misses per second, where counters exist.
    pub llc_misses: Option<f64>,
    /// Instructions per second, where counters exist.
    pub instructions: Option<f64>,
}

impl ThreadSample {
    /// A thread seen for the first time: no rates.
    #[must_use]
    pub fn new(pid: i32, tid: i32, mask: CpuSet, allowed: CpuSet, cpu: u32) -> Self {
        Self {
            pid,
            tid,
            mask,
            allowed,
            cpu,
            fresh: true,
            run: 0.0,
            wait: 0.0,
            voluntary: 0.0,
            involuntary: 0.0,
            migrations: 0.0,
            llc_misses: None,
            instructions: None,
        }
    }

    /// CPU time it wanted per second (ran or waited for).
    #[must_use]
    pub fn demand(&self) -> f64 {
        self.run + self.wait
    }
}

/// One process over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcSample {
    /// Its id.
    pub pid: i32,
    /// Its command name.
    pub name: String,
    /// Page faults (minor and major) per second.
    pub faults: f64,
    /// Resident memory per memory node (OS node number → bytes).
    pub node_bytes: BTreeMap<u32, u64>,
}

/// Everything seen in one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Seconds since the monitor started (end of the interval).
    pub time_s: f64,
    /// Length of the interval, in seconds.
    pub interval_s: f64,
    /// The monitored threads.
    pub threads: Vec<ThreadSample>,
    /// The monitored processes.
    pub procs: Vec<ProcSample>,
    /// Interrupts and softirqs per second, per CPU.
    pub irq: BTreeMap<u32, f64>,
    /// Fraction of each CPU busy (all processes, not only the monitored ones).
    pub busy: BTreeMap<u32, f64>,
}

impl Snapshot {
    /// The process `pid`.
    #[must_use]
    pub fn proc(&self, pid: i32) -> Option<&ProcSample> {
        self.procs.iter().find(|p| p.pid == pid)
    }

    /// CPU time per second of every monitored thread together.
    #[must_use]
    pub fn total_run(&self) -> f64 {
        self.threads.iter().map(|t| t.run).sum()
    }
}
