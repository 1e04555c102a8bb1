//! The balancer (after SyMMer, the Systems Mapping Manager): monitor running processes
//! and their threads with pluggable [`metrics`], let [`rules`] propose moves from the
//! measured topology ([`layout`]), and apply those that hold ([`engine`]): hysteresis, a
//! cap on moves per minute, rollback of changes that made things worse. Bounds: a
//! process's cgroup cpuset always, its threads' masks too with `keep_affinity` (by
//! default the balancer owns the masks of the processes it is given). Processes that
//! exit or change their own affinity are handled quietly (one note each).
//!
//! ```no_run
//! use topoprobe_tune::balance::{self, layout::Layout, monitor::Selection, Options};
//!
//! let layout = Layout::flat(&[0, 1]);
//! let opts = Options {
//!     selection: Selection { pids: vec![4242], ..Selection::default() },
//!     duration: Some(5.0),
//!     ..Options::default()
//! };
//! let report = balance::run(&layout, &opts, &mut ())?;
//! println!("{} moves", report.moves.len());
//! # Ok::<(), topoprobe_tune::TuneError>(())
//! ```

pub mod engine;
pub mod layout;
pub mod metrics;
pub mod monitor;
pub mod rules;
pub mod sample;

use std::time::{Duration, Instant};

use topoprobe_sys::affinity;
use topoprobe_sys::launch::{self, SignalWatch};
use topoprobe_sys::CpuSet;

use crate::error::{check_owner, TuneError};
use engine::{Counts, Engine, EngineOptions, Kind, Mover, Record};
use layout::Layout;
use monitor::{Monitor, Selection};

/// How the balancer works.
#[derive(Debug, Clone)]
pub struct Options {
    /// The processes.
    pub selection: Selection,
    /// Seconds between two looks (default 0.5).
    pub interval: f64,
    /// Stop after this many seconds (default: until interrupted or every given process
    /// exited).
    pub duration: Option<f64>,
    /// How decisions are made (and `advise`).
    pub engine: EngineOptions,
    /// Keep threads inside the masks they had when first seen.
    pub keep_affinity: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            interval: 0.5,
            duration: None,
            engine: EngineOptions::default(),
            keep_affinity: false,
        }
    }
}

/// What happened, for a live display.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A decision (a move, an advice, a rollback) about a thread of process `name`.
    Decision {
        /// The decision.
        record: &'a Record,
        /// The process's command name.
        name: &'a str,
    },
    /// A note (a process exited, a metric unavailable, the cap reached).
    Note(&'a str),
}

/// Receives [`Event`]s while the balancer runs.
pub trait Observer {
    /// Called for every event.
    fn event(&mut self, event: &Event<'_>);
}

impl Observer for () {
    fn event(&mut self, _event: &Event<'_>) {}
}

pub use topoprobe_model::results::balance::{ProcessReport, Report};

/// Sets masks with `sched_setaffinity`, remembering them so that the monitor can tell
/// its own changes from a program's.
struct RealMover<'a> {
    set: &'a mut std::collections::HashMap<i32, CpuSet>,
}

impl Mover for RealMover<'_> {
    fn set_mask(&mut self, pid: i32, tid: i32, to: &CpuSet) -> Result<(), String> {
        match affinity::set_thread_affinity(tid, to) {
            Ok(()) => {
                self.set.insert(tid, to.clone());
                Ok(())
            }
            Err(e) => Err(match e.os_error().and_then(std::io::Error::raw_os_error) {
                Some(libc::ESRCH) => format!("process {pid} thread {tid} exited"),
                Some(libc::EPERM) => format!("process {pid} thread {tid}: not permitted"),
                Some(libc::EINVAL) => format!(
                    "process {pid} thread {tid}: CPUs {to} not allowed (has its cgroup cpuset changed?)"
                ),
                _ => e.to_string(),
            }),
        }
    }
}

/// This process's CPU time so far, in seconds.
fn own_cpu_s() -> f64 {
    // SAFETY: a zeroed rusage is a valid out-value for getrusage.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Why a run made no decision, from what it saw and how far proposals got.
fn no_moves_because(report: &Report, counts: Counts, opts: &Options) -> String {
    let hold = opts.engine.hold.max(1);
    if report.processes.is_empty() {
        return "no process matched the selection".into();
    }
    if report.intervals == 0 {
        return "the run ended before the second look (rates need two looks): run it longer \
                than one interval"
            .into();
    }
    if counts.proposed == 0 {
        return "no rule found anything to improve: no CPU, core, cache or node was busier \
                than another one the threads may use"
            .into();
    }
    if counts.held == 0 {
        return format!(
            "a move must be called for in {hold} consecutive intervals, and none was \
             ({} measured)",
            report.intervals
        );
    }
    if counts.failed > 0 && counts.capped == 0 {
        return "every move tried was refused (see the notes)".into();
    }
    if counts.capped > 0 {
        return format!(
            "the cap of {} moves per minute was reached",
            opts.engine.max_moves_per_minute
        );
    }
    "the moves called for touched threads or CPUs already moved in the same interval".into()
}

/// Monitors and balances the selected processes on `layout` with every metric and rule.
///
/// # Errors
///
/// Before anything is changed: [`TuneError::Usage`] for nothing selected or a bad
/// interval; [`TuneError::NoProcess`] / [`TuneError::NotPermitted`] naming a given
/// process that does not exist or belongs to another user.
pub fn run(
    layout: &Layout,
    opts: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, TuneError> {
    run_with(layout, opts, metrics::all(), &rules::all(), observer)
}

/// As [`run`], with these metrics and rules.
///
/// # Errors
///
/// As [`run`].
pub fn run_with(
    layout: &Layout,
    opts: &Options,
    mut metrics: Vec<Box<dyn metrics::Metric>>,
    rules: &[Box<dyn rules::Rule>],
    observer: &mut dyn Observer,
) -> Result<Report, TuneError> {
    let sel = &opts.selection;
    if sel.pids.is_empty() && sel.name.is_none() && sel.cgroup.is_none() {
        return Err(TuneError::Usage(
            "nothing to balance: give --pid, --name or --cgroup".into(),
        ));
    }
    if !(opts.interval.is_finite() && opts.interval > 0.0) {
        return Err(TuneError::Usage(
            "the interval must be a positive number of seconds".into(),
        ));
    }
    for &pid in &sel.pids {
        check_owner(pid, sel.any_user)?;
    }
    if let Some(dir) = &sel.cgroup {
        topoprobe_sys::proc::cgroup::cgroup_processes(dir)?;
    }
    let watch = SignalWatch::install().map_err(|source| TuneError::Io {
        what: "installing signal handlers".into(),
        source,
    })?;
    let mut monitor = Monitor::new(sel.clone(), layout, opts.keep_affinity);
    let mut engine = Engine::new(opts.engine);
    let mut report = Report {
        intervals: 0,
        moves: Vec::new(),
        rolled_back: 0,
        advise: opts.engine.advise,
        cpu_s_per_s: Vec::new(),
        metrics: metrics
            .iter()
            .map(|m| (m.name().to_string(), "ok".to_string()))
            .collect(),
        processes: Vec::new(),
        self_cpu_s_per_s: 0.0,
        stopped_by: String::new(),
        no_moves_because: None,
        notes: Vec::new(),
    };
    let mut enabled = vec![true; metrics.len()];
    let t0 = Instant::now();
    let cpu0 = own_cpu_s();
    let mut k: u32 = 0;
    let stopped_by = loop {
        k += 1;
        let target = t0 + Duration::from_secs_f64(opts.interval * f64::from(k));
        // Sleep in short steps so that a signal stops the balancer promptly.
        loop {
            if launch::asks_to_stop(&watch.signals()) {
                break;
            }
            let now = Instant::now();
            if now >= target {
                break;
            }
            std::thread::sleep((target - now).min(Duration::from_millis(50)));
        }
        let signals = watch.signals();
        if launch::asks_to_stop(&signals) {
            let s: Vec<String> = signals.iter().map(ToString::to_string).collect();
            break format!("signal {}", s.join(","));
        }
        let now = t0.elapsed().as_secs_f64();
        let mut notes = Vec::new();
        let (mut snap, changed) = monitor.snapshot(now, opts.interval, &mut notes);
        for tid in changed {
            engine.hands_off(tid, now + 30.0);
        }
        for (m, on) in metrics.iter_mut().zip(enabled.iter_mut()) {
            if !*on {
                continue;
            }
            if let Err(why) = m.collect(&mut snap) {
                *on = false;
                notes.push(format!("metric {}: unavailable: {why}", m.name()));
                report
                    .metrics
                    .insert(m.name().to_string(), format!("unavailable: {why}"));
            }
        }
        for p in &snap.procs {
            if !report.processes.iter().any(|r| r.pid == p.pid) {
                report.processes.push(ProcessReport {
                    pid: p.pid,
                    name: p.name.clone(),
                });
            }
        }
        if k > 1 {
            report.intervals += 1;
            // `+ 0.0` turns a -0 (an empty sum of negative zeros) into 0.
            report.cpu_s_per_s.push(snap.total_run() + 0.0);
            let mut mover = RealMover {
                set: &mut monitor.set_by_us,
            };
            let records = engine.step(&snap, layout, rules, &mut mover);
            notes.extend(engine.take_notes());
            for r in records {
                let name = monitor.name(r.pid).to_string();
                observer.event(&Event::Decision {
                    record: &r,
                    name: &name,
                });
                report.moves.push(r);
            }
        }
        for n in notes {
            observer.event(&Event::Note(&n));
            report.notes.push(n);
        }
        if opts.duration.is_some_and(|d| now + 1e-9 >= d) {
            break "duration".to_string();
        }
        if monitor.all_gone() {
            break "every process exited".to_string();
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    report.self_cpu_s_per_s = if wall > 0.0 {
        (own_cpu_s() - cpu0) / wall
    } else {
        0.0
    };
    report.rolled_back = engine.rolled_back();
    report.stopped_by = stopped_by;
    if report.moves.is_empty() {
        report.no_moves_because = Some(no_moves_because(&report, engine.counts(), opts));
    }
    debug_assert!(report
        .moves
        .iter()
        .all(|m| m.kind != Kind::Advice || opts.engine.advise));
    Ok(report)
}
