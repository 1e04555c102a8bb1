//! Finding the monitored processes and their threads every interval, with their masks,
//! last CPUs and bounds: explicit process ids, a name pattern, a cgroup. Processes that
//! exit are dropped with one note; processes found by a pattern or a cgroup that cannot
//! be balanced (another user's) are skipped with one note per cause, however many there
//! are; the balancer's own process and its ancestors (the shell that started it,
//! `timeout`, …) are never found by a pattern or a cgroup; a thread that changes its own
//! affinity is noticed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use regex::Regex;
use topoprobe_sys::affinity;
use topoprobe_sys::proc::{self, ProcError};
use topoprobe_sys::CpuSet;

use super::layout::Layout;
use super::sample::{ProcSample, Snapshot, ThreadSample};
use crate::error::{check_owner, TuneError};

/// Which processes to monitor (their union).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// These processes.
    pub pids: Vec<i32>,
    /// Processes whose command name or command line matches.
    pub name: Option<Regex>,
    /// The processes of this cgroup directory.
    pub cgroup: Option<PathBuf>,
    /// Other users' processes too (root only); otherwise they are skipped, with a note.
    pub any_user: bool,
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
    /// Causes of skipping already noted (a process skipped for one of them is skipped
    /// quietly).
    noted: HashSet<String>,
    names: HashMap<i32, String>,
    /// This process and its ancestors: never selected by a pattern or a cgroup.
    protected: HashSet<i32>,
}

/// Most ancestors followed (a guard against a `/proc` that loops).
const MAX_ANCESTORS: usize = 4096;

/// This process and its ancestors, up to the first process.
fn self_and_ancestors() -> HashSet<i32> {
    let mut out = HashSet::new();
    let mut pid = i32::try_from(std::process::id()).unwrap_or(0);
    while pid > 0 && out.len() < MAX_ANCESTORS && out.insert(pid) {
        pid = proc::task_stat(pid, None).map_or(0, |s| s.ppid);
    }
    out
}

/// Why process `pid` is skipped, without its id: the key of a note (`None`: it exited,
/// which needs no note).
fn cause(pid: i32, e: &TuneError) -> Option<String> {
    match e {
        TuneError::NoProcess(_) => None,
        TuneError::NotPermitted { .. } => Some(
            "not permitted to change them: they belong to other users (balance processes you own, or run as their owner)"
                .into(),
        ),
        other => Some(
            other
                .to_string()
                .replace(&format!("/{pid}/"), "/N/")
                .replace(&format!("process {pid}"), "process N"),
        ),
    }
}

/// One note for the processes skipped for one cause: `skipping processes 12, 34: why`.
fn skip_note(pids: &[i32], why: &str) -> String {
    const SHOWN: usize = 8;
    let mut list: Vec<String> = pids.iter().take(SHOWN).map(ToString::to_string).collect();
    if pids.len() > SHOWN {
        list.push(format!("and {} more", pids.len() - SHOWN));
    }
    let what = if pids.len() == 1 {
        "process"
    } else {
        "processes"
    };
    format!(
        "skipping {what} {}: {why}; others skipped for the same reason are not named",
        list.join(", ")
    )
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
            noted: HashSet::new(),
            names: HashMap::new(),
            protected: self_and_ancestors(),
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

    /// Notes each new cause of skipping once, with the processes it applies to now.
    fn note_skipped(&mut self, skipped: Vec<(i32, String)>, notes: &mut Vec<String>) {
        let mut by_cause: Vec<(String, Vec<i32>)> = Vec::new();
        for (pid, why) in skipped {
            if self.noted.contains(&why) {
                continue;
            }
            match by_cause.iter_mut().find(|(w, _)| *w == why) {
                Some((_, pids)) => pids.push(pid),
                None => by_cause.push((why, vec![pid])),
            }
        }
        for (why, pids) in by_cause {
            notes.push(skip_note(&pids, &why));
            self.noted.insert(why);
        }
    }

    /// The processes selected now.
    fn select(&mut self, notes: &mut Vec<String>) -> Vec<i32> {
        let mut found: Vec<i32> = Vec::new();
        if let Some(dir) = &self.selection.cgroup {
            match proc::cgroup::cgroup_processes(dir) {
                Ok(p) => found.extend(p),
                Err(e) => {
                    let note = format!("cgroup: {e}");
                    if self.noted.insert(note.clone()) {
                        notes.push(note);
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
                    if self.protected.contains(&pid) {
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
                        found.push(pid);
                    }
                }
            }
        }
        // Found by a pattern or a cgroup: never this process or its ancestors.
        found.retain(|p| !self.protected.contains(p));
        let mut pids: Vec<i32> = self.selection.pids.clone();
        pids.extend(found);
        pids.sort_unstable();
        pids.dedup();
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        pids.retain(|&p| p != me && !self.gone.contains(&p));
        let explicit = &self.selection.pids;
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for pid in pids {
            if !explicit.contains(&pid) {
                if let Err(e) = check_owner(pid, self.selection.any_user) {
                    if let Some(why) = cause(pid, &e) {
                        skipped.push((pid, why));
                    }
                    continue;
                }
            }
            out.push(pid);
        }
        self.note_skipped(skipped, notes);
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
        let mut skipped = Vec::new();
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
                    let e = TuneError::from(e);
                    if let Some(why) = cause(pid, &e) {
                        skipped.push((pid, why));
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
        self.note_skipped(skipped, notes);
        self.threads.retain(|t, _| live_tids.contains(t));
        self.set_by_us.retain(|t, _| live_tids.contains(t));
        (snap, changed)
    }
}

/// The CPUs in both sets.
fn intersect(a: &CpuSet, b: &CpuSet) -> CpuSet {
    a.iter().filter(|&c| b.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_its_ancestors_are_protected() {
        let me = i32::try_from(std::process::id()).expect("pid");
        let parent = proc::task_stat(me, None).expect("stat").ppid;
        let p = self_and_ancestors();
        assert!(p.contains(&me) && p.contains(&parent), "{p:?}");
        assert!(!p.contains(&0));
    }

    #[test]
    fn skipped_processes_are_noted_once_per_cause() {
        let other = |pid| TuneError::NotPermitted {
            pid,
            tid: None,
            why: format!("it belongs to user {pid}"),
        };
        assert_eq!(cause(7, &other(7)), cause(8, &other(8)));
        assert_eq!(cause(7, &TuneError::NoProcess(7)), None);
        let mut m = Monitor::new(Selection::default(), &Layout::flat(&[0]), false);
        let why = cause(7, &other(7)).expect("a cause");
        let mut notes = Vec::new();
        let many: Vec<(i32, String)> = (1..=10).map(|p| (p, why.clone())).collect();
        m.note_skipped(many.clone(), &mut notes);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "skipping processes 1, 2, 3, 4, 5, 6, 7, 8, and 2 more: not permitted"
            ),
            "{notes:?}"
        );
        // The same cause later, for other processes: nothing more.
        m.note_skipped(vec![(11, why)], &mut notes);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            skip_note(&[5], "x"),
            "skipping process 5: x; others skipped for the same reason are not named"
        );
    }
}
