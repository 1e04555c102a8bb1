//! Finding the monitored processes and their threads every interval, with their masks,
//! last CPUs and bounds: explicit process ids, a name pattern, a cgroup. Processes that
//! exit are dropped with one note; processes of other users found by a pattern or a
//! cgroup are skipped with one note; a thread that changes its own affinity is noticed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use regex::Regex;
use topoprobe_sys::affinity;
use topoprobe_sys::proc::{self, ProcError};
use topoprobe_sys::CpuSet;

use super::layout::Layout;
use super::sample::{ProcSample, Snapshot, ThreadSample};
use crate::error::check_owner;

/// Which processes to monitor (their union).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// These processes.
    pub pids: Vec<i32>,
    /// Processes whose command name or command line matches.
    pub name: Option<Regex>,
    /// The processes of this cgroup directory.
    pub cgroup: Option<PathBuf>,
}

/// What the monitor knows of a thread.
#[derive(Debug, Clone)]
struct Known {
    /// Its mask when first seen.
    original: CpuSet,
    /// Its mask last interval.
    last: CpuSet,
}

/// The monitor.
#[derive(Debug)]
pub struct Monitor {
    selection: Selection,
    layout_cpus: CpuSet,
    keep_affinity: bool,
    threads: HashMap<i32, Known>,
    /// Masks the balancer set, per thread.
    pub(crate) set_by_us: HashMap<i32, CpuSet>,
    gone: HashSet<i32>,
    skipped: HashSet<i32>,
    names: HashMap<i32, String>,
    me: i32,
}

impl Monitor {
    /// A monitor of `selection` on the CPUs of `layout`; with `keep_affinity` a thread's
    /// mask when first seen bounds where it may go.
    #[must_use]
    pub fn new(selection: Selection, layout: &Layout, keep_affinity: bool) -> Self {
        Self {
            selection,
            layout_cpus: layout.cpus().iter().copied().collect(),
            keep_affinity,
            threads: HashMap::new(),
            set_by_us: HashMap::new(),
            gone: HashSet::new(),
            skipped: HashSet::new(),
            names: HashMap::new(),
            me: i32::try_from(std::process::id()).unwrap_or(0),
        }
    }

    /// The command name of a monitored process.
    #[must_use]
    pub fn name(&self, pid: i32) -> &str {
        self.names.get(&pid).map_or("?", String::as_str)
    }

    /// Whether every explicitly given process has exited (and nothing else is selected).
    #[must_use]
    pub fn all_gone(&self) -> bool {
        self.selection.name.is_none()
            && self.selection.cgroup.is_none()
            && self.selection.pids.iter().all(|p| self.gone.contains(p))
    }

    /// The processes selected now.
    fn select(&mut self, notes: &mut Vec<String>) -> Vec<i32> {
        let mut pids: Vec<i32> = self.selection.pids.clone();
        if let Some(dir) = &self.selection.cgroup {
            match proc::cgroup::cgroup_processes(dir) {
                Ok(p) => pids.extend(p),
                Err(e) => {
                    if self.skipped.insert(-1) {
                        notes.push(format!("cgroup: {e}"));
                    }
                }
            }
        }
        if let Some(re) = &self.selection.name {
            if let Ok(entries) = std::fs::read_dir("/proc") {
                for e in entries.filter_map(Result::ok) {
                    let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    else {
                        continue;
                    };
                    if pid == self.me {
                        continue;
                    }
                    let Ok(cmd) = proc::environ::cmdline(pid) else {
                        continue;
                    };
                    if cmd.is_empty() {
                        continue; // a kernel thread
                    }
                    let line = cmd
                        .iter()
                        .map(|a| a.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(" ");
                    let comm = proc::task_stat(pid, None)
                        .map(|s| s.name)
                        .unwrap_or_default();
                    if re.is_match(&comm) || re.is_match(&line) {
                        pids.push(pid);
                    }
                }
            }
        }
        pids.sort_unstable();
        pids.dedup();
        pids.retain(|&p| p != self.me && !self.gone.contains(&p));
        let explicit = &self.selection.pids;
        let mut out = Vec::new();
        for pid in pids {
            if !explicit.contains(&pid) {
                if let Err(e) = check_owner(pid) {
                    if self.skipped.insert(pid) {
                        notes.push(format!("skipping process {pid}: {e}"));
                    }
                    continue;
                }
            }
            out.push(pid);
        }
        out
    }

    /// Lists the selected processes and threads for the interval ending at `time_s`
    /// (rates are left to the metrics). Returns the snapshot and the threads that changed
    /// their own affinity since the last interval.
    pub fn snapshot(
        &mut self,
        time_s: f64,
        interval_s: f64,
        notes: &mut Vec<String>,
    ) -> (Snapshot, Vec<i32>) {
        let mut snap = Snapshot {
            time_s,
            interval_s,
            ..Snapshot::default()
        };
        let mut changed = Vec::new();
        let mut live_tids = HashSet::new();
        for pid in self.select(notes) {
            let stat = match proc::task_stat(pid, None) {
                Ok(s) if s.state != 'Z' && s.state != 'X' => s,
                Ok(_) | Err(ProcError::Gone { .. }) => {
                    if self.gone.insert(pid) {
                        notes.push(format!("process {pid} ({}) exited", self.name(pid)));
                    }
                    continue;
                }
                Err(e) => {
                    if self.skipped.insert(pid) {
                        notes.push(format!("skipping process {pid}: {e}"));
                    }
                    continue;
                }
            };
            self.names.insert(pid, stat.name.clone());
            let bound = proc::cgroup::cpuset(pid).ok().flatten().map_or_else(
                || self.layout_cpus.clone(),
                |c| intersect(&c, &self.layout_cpus),
            );
            let Ok(tids) = proc::threads(pid) else {
                continue;
            };
            for tid in tids {
                let (Ok(mask), Ok(ts)) = (
                    affinity::thread_affinity(tid),
                    proc::task_stat(pid, Some(tid)),
                ) else {
                    continue;
                };
                live_tids.insert(tid);
                let fresh = !self.threads.contains_key(&tid);
                let known = self.threads.entry(tid).or_insert_with(|| Known {
                    original: mask.clone(),
                    last: mask.clone(),
                });
                if !fresh && mask != known.last && self.set_by_us.get(&tid) != Some(&mask) {
                    notes.push(format!(
                        "process {pid} ({}) thread {tid} changed its own CPU affinity to {mask}; left alone for a while{}",
                        stat.name,
                        if self.keep_affinity { ", bounded by its new mask" } else { "" }
                    ));
                    changed.push(tid);
                    self.set_by_us.remove(&tid);
                    if self.keep_affinity {
                        known.original = mask.clone();
                    }
                }
                known.last = mask.clone();
                let mut allowed = bound.clone();
                if self.keep_affinity {
                    allowed = intersect(&allowed, &known.original);
                }
                let mut t = ThreadSample::new(pid, tid, mask, allowed, ts.processor);
                t.fresh = fresh;
                snap.threads.push(t);
            }
            snap.procs.push(ProcSample {
                pid,
                name: stat.name,
                faults: 0.0,
                node_bytes: Default::default(),
            });
        }
        self.threads.retain(|t, _| live_tids.contains(t));
        self.set_by_us.retain(|t, _| live_tids.contains(t));
        (snap, changed)
    }
}

/// The CPUs in both sets.
fn intersect(a: &CpuSet, b: &CpuSet) -> CpuSet {
    a.iter().filter(|&c| b.contains(c)).collect()
}
