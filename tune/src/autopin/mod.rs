//! autopin: find the best pinning of a running program by trying candidates on it (Ott
//! et al., "autopin – Automated Optimization of Thread-to-Core Pinning on Multicore
//! Systems"), with candidates generated from the measured topology.
//!
//! The program is started ([`Program::Launch`], in a process group of its own, each
//! signal that reaches autopin passed on to it once, its exit status kept, and killed
//! with autopin unless [`Options::keep_child`]) or attached to ([`Program::Attach`]).
//! After an initial wait, the threads that ran during it are the ones planned for (idle
//! ones, such as a main thread waiting for its workers, may run on any CPU of a
//! candidate); each candidate pins thread `i` of those (in creation order, `skip` mask
//! aside) to its CPU `i`, warms up, and is measured in samples by a [`Metric`]; candidates
//! clearly worse than the best so far are stopped early ([`search`]). The best is then
//! kept for the rest of the run; the search restarts every `retune_every` seconds or when
//! the program declares a new phase through its heartbeats. Whatever stops autopin (the
//! program's end, a signal, an error), the program keeps the best pinning known so far,
//! or its own masks when none is known.
//!
//! ```no_run
//! use topoprobe_tune::autopin::{self, Options, Program};
//!
//! # fn demo(topo: &topoprobe_model::Topology) -> Result<(), topoprobe_tune::TuneError> {
//! let program = Program::command(&["./my-program", "--size", "4096"]).expect("a command");
//! let report = autopin::run(Some(topo), program, &Options::default(), &mut ())?;
//! println!("best: {:?}, exit {:?}", report.best, report.exit_status);
//! # Ok(()) }
//! ```

pub mod candidates;
pub mod metric;
mod report;
pub mod search;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use topoprobe_model::Topology;
use topoprobe_place::Policy;
use topoprobe_sys::heartbeat::HEARTBEAT_VAR;
use topoprobe_sys::launch::{self, SignalWatch, Supervised};
use topoprobe_sys::proc::{self, ProcError};
use topoprobe_sys::CpuSet;

pub use candidates::{Candidate, Dropped, Generated};
pub use metric::{Metric, MetricChoice};
use report::candidate_report;
pub use report::{BestReport, CandidateReport, Event, Observer, Report, RoundReport};
pub use search::{Phases, Search, State, Step};

use crate::error::{check_owner, TuneError};
use crate::threads::{ThreadTracker, Tracked};
use metric::cpu_time::CpuTime;
use metric::heartbeat::Heartbeat;
use metric::instructions::Instructions;

/// How the warning that an error stopped tuning starts ([`Event::Warning`]); the error
/// follows, as in [`Report::error`].
pub const STOPPED_BY_ERROR: &str = "autopin stopped: ";

/// Where candidates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CandidateSource {
    /// Generated from the topology ([`candidates::generate`]), at most `max`.
    Topology {
        /// The most candidates to try.
        max: usize,
    },
    /// Placements of these policies, in order.
    Policies(Vec<Policy>),
    /// These schedules (CPU of thread `i` at position `i`).
    Schedules(Vec<Vec<u32>>),
}

/// How autopin works.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Where candidates come from (default: 8 generated from the topology).
    pub candidates: CandidateSource,
    /// Threads to plan generated candidates for (default: the program's threads at the
    /// end of the initial wait, skipped ones aside).
    pub threads: Option<usize>,
    /// The metric (default: the best available).
    pub metric: MetricChoice,
    /// Initial wait, warm-up and measurement (default 1 s, 0.5 s, 2 s).
    pub phases: Phases,
    /// Created threads not to pin (bit `k`: the `k`-th created thread).
    pub skip: u128,
    /// Restart the search this many seconds after the last one ended.
    pub retune_every: Option<f64>,
    /// Stop candidates clearly worse than the best early (default on).
    pub early_stop: bool,
    /// Seconds between two looks at the program's threads (default 0.02).
    pub poll: f64,
    /// Leave a launched program running when this process dies (by default the kernel
    /// kills it then, even on SIGKILL: `PR_SET_PDEATHSIG`, watching the thread that calls
    /// [`run`]).
    pub keep_child: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            candidates: CandidateSource::Topology { max: 8 },
            threads: None,
            metric: MetricChoice::Auto,
            phases: Phases::new(1.0, 0.5, 2.0),
            skip: 0,
            retune_every: None,
            early_stop: true,
            poll: 0.02,
            keep_child: false,
        }
    }
}

/// The program to tune.
#[derive(Debug)]
pub enum Program {
    /// Start this command (its signals are forwarded, its exit status kept).
    Launch(Command),
    /// Attach to this running process (of the same user).
    Attach(i32),
}

impl Program {
    /// The program to start from its command line (the program, then its arguments);
    /// `None` for an empty one.
    #[must_use]
    pub fn command<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> Option<Self> {
        let (program, args) = argv.split_first()?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        Some(Self::Launch(cmd))
    }
}

/// Tunes `program` on `topo` with the metric `opts.metric`; `observer` sees the live
/// events. Without a topology only schedules can be candidates.
///
/// # Errors
///
/// Before anything is changed: [`TuneError::Usage`] for candidates that cannot be made
/// (a schedule naming a CPU outside the topology), [`TuneError::MetricUnavailable`] for a
/// metric asked for that this machine or program lacks, [`TuneError::NoProcess`] /
/// [`TuneError::NotPermitted`] for a process that is gone or another user's,
/// [`TuneError::Launch`] when the command cannot be started. Errors while tuning do not
/// end the program: they are in [`Report::error`].
pub fn run(
    topo: Option<&Topology>,
    program: Program,
    opts: &Options,
    observer: &mut dyn Observer,
) -> Result<Report, TuneError> {
    run_inner(topo, program, opts, None, observer)
}

/// As [`run`], scoring by a metric of the caller's (a scripted one in tests, or a
/// program-specific one).
///
/// # Errors
///
/// As [`run`].
pub fn run_with_metric(
    topo: Option<&Topology>,
    program: Program,
    opts: &Options,
    metric: Box<dyn Metric>,
    observer: &mut dyn Observer,
) -> Result<Report, TuneError> {
    run_inner(topo, program, opts, Some(metric), observer)
}

/// The program being tuned: a supervised child or an attached process.
enum Target {
    Child(Supervised),
    Attached { pid: i32, watch: SignalWatch },
}

impl Target {
    fn pid(&self) -> i32 {
        match self {
            Self::Child(s) => s.pid(),
            Self::Attached { pid, .. } => *pid,
        }
    }

    /// The exit code once the program has ended (`Some(None)` for an attached process).
    fn ended(&mut self) -> Result<Option<Option<i32>>, TuneError> {
        match self {
            Self::Child(s) => s
                .try_wait()
                .map(|c| c.map(Some))
                .map_err(|source| TuneError::Io {
                    what: "waiting for the program".into(),
                    source,
                }),
            Self::Attached { pid, .. } => {
                let gone = match proc::task_stat(*pid, None) {
                    Ok(s) => s.state == 'Z' || s.state == 'X',
                    Err(ProcError::Gone { .. }) => true,
                    Err(e) => return Err(e.into()),
                };
                Ok(gone.then_some(None))
            }
        }
    }

    fn signals(&self) -> Vec<i32> {
        match self {
            Self::Child(s) => s.signals(),
            Self::Attached { watch, .. } => watch.signals(),
        }
    }
}

/// A private directory for the heartbeat page of a launched program, removed on drop.
struct HeartbeatDir(PathBuf);

impl HeartbeatDir {
    fn create() -> Result<Self, TuneError> {
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("topoprobe-autopin-{}-{nanos}", std::process::id()));
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&dir).map_err(|source| TuneError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        Ok(Self(dir))
    }

    fn page(&self) -> PathBuf {
        self.0.join("heartbeat")
    }
}

impl Drop for HeartbeatDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The CPUs a process may be pinned to: its cgroup cpuset (`None`: every CPU).
fn allowed_cpus(pid: i32) -> Option<CpuSet> {
    proc::cgroup::cpuset(pid).ok().flatten()
}

/// Makes the candidates of a round for `threads` threads.
fn make_candidates(
    topo: Option<&Topology>,
    opts: &Options,
    threads: usize,
    allowed: Option<&CpuSet>,
) -> Result<(Vec<Candidate>, Vec<Dropped>), TuneError> {
    match (&opts.candidates, topo) {
        (CandidateSource::Topology { max }, Some(topo)) => {
            let g = candidates::generate(topo, threads.max(1), allowed, *max)?;
            Ok((g.candidates, g.dropped))
        }
        (CandidateSource::Policies(p), Some(topo)) => Ok((
            candidates::from_policies(topo, threads.max(1), allowed, p)?,
            Vec::new(),
        )),
        (CandidateSource::Topology { .. } | CandidateSource::Policies(_), None) => {
            Err(TuneError::Usage(
                "candidates from the topology or from policies need a topology (a description made by `topoprobe infer`, or --topology FILE); --schedule works without one".into(),
            ))
        }
        (CandidateSource::Schedules(s), _) => {
            Ok((candidates::from_schedules(topo, allowed, s)?, Vec::new()))
        }
    }
}

/// Checks what can be checked before the program is touched.
fn precheck(topo: Option<&Topology>, opts: &Options, pid: Option<i32>) -> Result<(), TuneError> {
    if opts.phases.measure <= 0.0 || opts.phases.warmup < 0.0 || opts.phases.initial_wait < 0.0 {
        return Err(TuneError::Usage(
            "the measurement must be positive, the waits not negative".into(),
        ));
    }
    let allowed = pid.and_then(allowed_cpus);
    match &opts.candidates {
        CandidateSource::Schedules(s) if s.is_empty() => {
            return Err(TuneError::Usage("no --schedule given".into()));
        }
        CandidateSource::Policies(p) if p.is_empty() => {
            return Err(TuneError::Usage("--policies names no policy".into()));
        }
        _ => {
            make_candidates(topo, opts, opts.threads.unwrap_or(1), allowed.as_ref())?;
        }
    }
    if opts.metric == MetricChoice::Instructions {
        Instructions::new()?;
    }
    Ok(())
}

/// The metric chosen at the end of the initial wait, and why.
fn choose_metric(
    choice: MetricChoice,
    pid: i32,
    heartbeat: Option<Heartbeat>,
    heartbeat_why: &str,
    initial_wait: f64,
) -> Result<(Box<dyn Metric>, String), TuneError> {
    let beats = heartbeat.as_ref().map_or(0, Heartbeat::beats);
    let hb_reason = if heartbeat.is_none() {
        heartbeat_why.to_string()
    } else {
        format!(
            "the program sent no heartbeat during the initial wait ({initial_wait} s): it must call tp_heartbeat()"
        )
    };
    match choice {
        MetricChoice::Heartbeat => match heartbeat {
            Some(h) if beats > 0 => Ok((Box::new(h), "asked for; the program beats".into())),
            _ => Err(TuneError::MetricUnavailable {
                metric: "heartbeat".into(),
                reason: hb_reason,
            }),
        },
        MetricChoice::Instructions => Ok((
            Box::new(Instructions::new()?),
            "asked for; counted by perf events".into(),
        )),
        MetricChoice::CpuTime => {
            CpuTime::available(pid).map_err(|reason| TuneError::MetricUnavailable {
                metric: "cpu-time".into(),
                reason,
            })?;
            Ok((
                Box::new(CpuTime::new(pid)),
                "asked for; run time from schedstat".into(),
            ))
        }
        MetricChoice::Auto => {
            if let Some(h) = heartbeat.filter(|_| beats > 0) {
                return Ok((
                    Box::new(h),
                    "auto: the program sends heartbeats (its own measure of progress)".into(),
                ));
            }
            let mut note = format!("auto: heartbeat unavailable: {hb_reason}");
            match Instructions::new() {
                Ok(m) => {
                    note.push_str("; instructions retired counted by perf events");
                    return Ok((Box::new(m), note));
                }
                Err(e) => note.push_str(&format!("; {e}")),
            }
            CpuTime::available(pid).map_err(|reason| TuneError::MetricUnavailable {
                metric: "cpu-time".into(),
                reason,
            })?;
            note.push_str("; using CPU time per second from schedstat");
            Ok((Box::new(CpuTime::new(pid)), note))
        }
    }
}

/// Where the driver is.
enum Mode {
    /// Before the first round.
    Initial,
    /// A round runs.
    Searching,
    /// Pinned by the best; waiting for a re-tune.
    Holding { since: f64 },
    /// Not tuning any more (signal, error): new threads still follow the kept pinning.
    Stopped,
}

/// The state of one tuning session.
struct Driver<'a> {
    topo: Option<&'a Topology>,
    opts: &'a Options,
    observer: &'a mut dyn Observer,
    tracker: ThreadTracker,
    allowed: Option<CpuSet>,
    metric: Option<Box<dyn Metric>>,
    candidates: Vec<Candidate>,
    search: Option<Search>,
    /// The CPUs the threads are pinned by now (`None`: their own masks).
    pinned: Option<Candidate>,
    /// The best candidate of the last finished round.
    last_best: Option<(Candidate, Option<f64>)>,
    round_phase: Option<u64>,
    round_start: f64,
    report: Report,
    pin_new_threads: bool,
    /// When each thread was first seen (seconds from the start) and the CPU time it had
    /// wanted then (nanoseconds; `None` when unreadable; see [`wanted_ns`]).
    first_seen: HashMap<i32, (f64, Option<u64>)>,
}

/// A thread that wanted less than this share of one CPU during the initial wait (ran, or
/// waited on a run queue to run) is idle.
const ACTIVE_SHARE: f64 = 0.05;
/// A thread seen for less than this many seconds before the end of the initial wait
/// counts as running (too new to tell).
const MIN_WINDOW_S: f64 = 0.05;

/// The CPU time thread `tid` of process `pid` has wanted, in nanoseconds: the time it ran
/// plus the time it waited on a run queue (schedstat), so that a busy thread of a loaded
/// machine, which waits for a CPU more than it runs, is not taken for an idle one; else
/// the clock ticks it ran (its `stat`).
fn wanted_ns(pid: i32, tid: i32) -> Option<u64> {
    if let Ok(s) = proc::schedstat(pid, Some(tid)) {
        return Some(s.run_ns.saturating_add(s.wait_ns));
    }
    let st = proc::task_stat(pid, Some(tid)).ok()?;
    let ticks = st.user_ticks + st.system_ticks;
    Some(ticks.saturating_mul(1_000_000_000) / proc::clock_ticks_per_second())
}

impl Driver<'_> {
    fn pin_to(&mut self, c: Option<Candidate>) -> Result<(), TuneError> {
        match &c {
            Some(cand) => self.tracker.pin_all(&cand.cpus)?,
            None => {
                self.tracker.restore();
            }
        }
        self.pinned = c;
        Ok(())
    }

    /// Notes when new threads were seen and their CPU time then.
    fn saw(&mut self, fresh: &[Tracked], now: f64) {
        let pid = self.tracker.pid();
        for t in fresh {
            self.first_seen.insert(t.tid, (now, wanted_ns(pid, t.tid)));
        }
    }

    /// At the end of the initial wait: plans for the threads that ran during it. Threads
    /// that wanted less than [`ACTIVE_SHARE`] of a CPU since they were first seen lose
    /// their position (they may run on any CPU of a candidate), unless every thread, or
    /// none, ran.
    fn leave_idle_threads(&mut self, now: f64) {
        if self.opts.phases.initial_wait <= 0.0 {
            return;
        }
        let pid = self.tracker.pid();
        let mut active = HashSet::new();
        let mut positioned = 0;
        for t in self.tracker.live() {
            if t.position.is_none() {
                continue;
            }
            positioned += 1;
            let ran = match self.first_seen.get(&t.tid) {
                Some(&(seen, Some(start))) if now - seen >= MIN_WINDOW_S => wanted_ns(pid, t.tid)
                    .map(|r| (r.saturating_sub(start) as f64 / 1e9, now - seen)),
                _ => None,
            };
            if ran.is_none_or(|(cpu_s, window)| cpu_s >= ACTIVE_SHARE * window) {
                active.insert(t.tid);
            }
        }
        if active.is_empty() || active.len() == positioned {
            return;
        }
        let idle = self.tracker.keep_positions_for(&active);
        let list = idle
            .iter()
            .map(|&t| {
                if t == pid {
                    format!("the main thread {t}")
                } else {
                    t.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let note = format!(
            "{} idle during the initial wait ({list}): candidates are planned for the {} that ran; the idle ones may run on any CPU of a candidate",
            if idle.len() == 1 {
                "1 thread was".to_string()
            } else {
                format!("{} threads were", idle.len())
            },
            active.len()
        );
        self.observer.event(&Event::Note(&note));
        self.report.idle_threads = idle;
    }

    fn pin_new(&mut self, fresh: &[Tracked]) -> Result<(), TuneError> {
        if let (Some(c), true) = (&self.pinned, self.pin_new_threads) {
            let cpus = c.cpus.clone();
            for t in fresh {
                self.tracker.pin_one(t, &cpus)?;
            }
        }
        Ok(())
    }

    /// Threads that generated candidates are planned for.
    fn thread_count(&self) -> usize {
        self.opts.threads.unwrap_or_else(|| {
            self.tracker
                .live()
                .iter()
                .filter_map(|t| t.position)
                .max()
                .map_or(1, |p| p + 1)
        })
    }

    fn emit_candidate(&mut self, i: usize) {
        if let (Some(s), Some(c)) = (&self.search, self.candidates.get(i)) {
            let o = &s.outcomes()[i];
            self.observer.event(&Event::Candidate {
                index: i,
                candidate: c,
                state: o.state,
                summary: o.summary(),
            });
        }
    }

    /// Starts a round: `mode` becomes `Searching`, or `Holding` when the only generated
    /// candidate was applied without measuring.
    fn begin_round(&mut self, now: f64, reason: &str, mode: &mut Mode) -> Result<(), TuneError> {
        *mode = Mode::Searching;
        if self.start_round(now, reason)? {
            *mode = Mode::Holding { since: now };
        }
        Ok(())
    }

    /// Starts a round; `true` when it ended at once (one generated candidate, applied).
    fn start_round(&mut self, now: f64, reason: &str) -> Result<bool, TuneError> {
        let (cands, dropped) = make_candidates(
            self.topo,
            self.opts,
            self.thread_count(),
            self.allowed.as_ref(),
        )?;
        self.candidates = cands;
        self.report.dropped = dropped;
        if self.candidates.len() == 1
            && matches!(self.opts.candidates, CandidateSource::Topology { .. })
        {
            self.apply_only(now, reason)?;
            return Ok(true);
        }
        self.search = Some(Search::new(
            self.candidates.len(),
            self.opts.phases,
            self.opts.early_stop,
            now,
        ));
        self.round_phase = self.metric.as_ref().and_then(|m| m.phase());
        self.round_start = now;
        self.report.rounds.push(RoundReport {
            reason: reason.to_string(),
            best: None,
            duration_s: 0.0,
            saved_s: 0.0,
        });
        self.observer.event(&Event::Round {
            round: self.report.rounds.len(),
            reason,
            candidates: &self.candidates,
        });
        let first = self.candidates.first().cloned();
        self.pin_to(first)?;
        self.emit_candidate(0);
        Ok(false)
    }

    /// Applies the only generated candidate without measuring it: there is nothing to
    /// compare it with.
    fn apply_only(&mut self, now: f64, reason: &str) -> Result<(), TuneError> {
        let only = self.candidates[0].clone();
        self.search = None;
        self.pin_to(Some(only.clone()))?;
        self.round_phase = self.metric.as_ref().and_then(|m| m.phase());
        self.round_start = now;
        self.report.rounds.push(RoundReport {
            reason: reason.to_string(),
            best: Some(only.name.clone()),
            duration_s: 0.0,
            saved_s: 0.0,
        });
        self.report.candidates = vec![CandidateReport {
            name: only.name.clone(),
            cpus: only.cpus.clone(),
            score: None,
            spread: None,
            state: "applied".into(),
            samples: 0,
            why: only.why.clone(),
        }];
        let note = format!(
            "one placement only for {}: {} (CPUs {}), applied without measuring, as there is nothing to compare it with",
            topoprobe_model::format::plural(self.thread_count(), "thread"),
            only.name,
            topoprobe_model::format_cpu_list(&only.cpus)
        );
        self.observer.event(&Event::Note(&note));
        self.last_best = Some((only.clone(), None));
        self.report.best = Some(BestReport {
            name: only.name.clone(),
            cpus: only.cpus,
            score: None,
        });
        Ok(())
    }

    /// Closes the current round's record.
    fn close_round(&mut self, now: f64) {
        if let (Some(s), Some(r)) = (&self.search, self.report.rounds.last_mut()) {
            r.duration_s = now - self.round_start;
            r.saved_s = s.saved_s();
            r.best = s.best().map(|b| self.candidates[b].name.clone());
        }
        self.report.time_saved_s = self.report.rounds.iter().map(|r| r.saved_s).sum();
        // Without a search (none yet, or one candidate applied) the list stands.
        if let Some(s) = &self.search {
            self.report.candidates = self
                .candidates
                .iter()
                .zip(s.outcomes())
                .map(|(c, o)| candidate_report(c, o))
                .collect();
        }
    }

    /// The best pinning known now: this round's best measured, else the last round's,
    /// else this round's best partial one.
    fn best_known(&self) -> Option<(Candidate, Option<f64>)> {
        let score = |s: &Search, i: usize| s.outcomes()[i].summary().map(|x| x.mean);
        if let Some(s) = &self.search {
            if let Some(b) = s.best() {
                return Some((self.candidates[b].clone(), score(s, b)));
            }
        }
        if self.last_best.is_some() {
            return self.last_best.clone();
        }
        let s = self.search.as_ref()?;
        s.best_known()
            .map(|b| (self.candidates[b].clone(), score(s, b)))
    }

    /// Ends tuning: the round is cut short and the program keeps the best known pinning
    /// (or its own masks).
    fn stop(&mut self, now: f64, reason: &str) {
        if let Some(s) = &mut self.search {
            if !s.done() {
                if let Some(c) = s.current() {
                    s.abort();
                    self.emit_candidate(c);
                }
            }
        }
        self.close_round(now);
        let keep = self.best_known();
        let target = keep.as_ref().map(|(c, _)| c.clone());
        if self.pinned.as_ref().map(|c| &c.cpus) != target.as_ref().map(|c| &c.cpus)
            || target.is_none()
        {
            if let Err(e) = self.pin_to(target.clone()) {
                let msg = format!(
                    "cannot keep the best pinning ({e}); the program's own masks are restored"
                );
                self.observer.event(&Event::Warning(&msg));
                self.tracker.restore();
                self.pinned = None;
                self.pin_new_threads = false;
            }
        }
        self.report.best = self.pinned.as_ref().map(|c| BestReport {
            name: c.name.clone(),
            cpus: c.cpus.clone(),
            score: keep.as_ref().and_then(|k| k.1),
        });
        self.report.stopped_by = reason.to_string();
        self.observer.event(&Event::Stopped {
            reason,
            pinned: self.pinned.as_ref(),
        });
    }

    /// One step of the search at time `now`.
    fn tune(&mut self, now: f64, mode: &mut Mode) -> Result<(), TuneError> {
        match mode {
            Mode::Stopped => Ok(()),
            Mode::Initial => {
                if now < self.opts.phases.initial_wait {
                    return Ok(());
                }
                self.leave_idle_threads(now);
                self.begin_round(now, "start", mode)
            }
            Mode::Holding { since } => {
                let phase = self.metric.as_ref().and_then(|m| m.phase());
                if phase != self.round_phase {
                    let reason = format!("phase {}", phase.unwrap_or(0));
                    return self.begin_round(now, &reason, mode);
                }
                if self.opts.retune_every.is_some_and(|r| now - *since >= r) {
                    return self.begin_round(now, "retune", mode);
                }
                Ok(())
            }
            Mode::Searching => {
                let tids = self.tracker.tids();
                let Some(metric) = self.metric.as_mut() else {
                    return Ok(());
                };
                let value = metric.total(&tids)?;
                let phase = metric.phase();
                if phase != self.round_phase {
                    if let Some(s) = &mut self.search {
                        if let Some(c) = s.current() {
                            s.abort();
                            self.emit_candidate(c);
                        }
                    }
                    self.close_round(now);
                    let reason = format!("phase {}", phase.unwrap_or(0));
                    return self.begin_round(now, &reason, mode);
                }
                let Some(search) = self.search.as_mut() else {
                    return Ok(());
                };
                let prev = search.current();
                match search.step(now, value) {
                    Step::Wait => {
                        if let Some(c) = prev {
                            if search.outcomes()[c].state == State::Measuring
                                && search.outcomes()[c].samples.is_empty()
                            {
                                self.emit_candidate(c);
                            }
                        }
                    }
                    Step::Sampled(i) => self.emit_candidate(i),
                    Step::Apply(i) => {
                        if let Some(p) = prev {
                            self.emit_candidate(p);
                        }
                        let c = self.candidates[i].clone();
                        self.pin_to(Some(c))?;
                        self.emit_candidate(i);
                    }
                    Step::Finished(best) => {
                        if let Some(p) = prev {
                            self.emit_candidate(p);
                        }
                        self.close_round(now);
                        let keep = match best {
                            Some(b) => {
                                let score = self
                                    .search
                                    .as_ref()
                                    .and_then(|s| s.outcomes()[b].summary())
                                    .map(|x| x.mean);
                                Some((self.candidates[b].clone(), score))
                            }
                            None => self.best_known(),
                        };
                        if keep.is_none() {
                            self.observer.event(&Event::Warning(
                                "every candidate scored 0 (the program made no measured progress \
                                 under any of them): none is better, and the program keeps its \
                                 own CPU masks",
                            ));
                        }
                        self.last_best.clone_from(&keep);
                        self.pin_to(keep.as_ref().map(|k| k.0.clone()))?;
                        if let (Some(c), Some(s)) = (&self.pinned, &self.search) {
                            let summary = best.and_then(|b| s.outcomes()[b].summary());
                            self.observer.event(&Event::Best {
                                candidate: c,
                                summary,
                                saved_s: s.saved_s(),
                            });
                        }
                        self.report.best = self.pinned.as_ref().map(|c| BestReport {
                            name: c.name.clone(),
                            cpus: c.cpus.clone(),
                            score: keep.as_ref().and_then(|k| k.1),
                        });
                        *mode = Mode::Holding { since: now };
                    }
                }
                Ok(())
            }
        }
    }
}

fn run_inner(
    topo: Option<&Topology>,
    program: Program,
    opts: &Options,
    custom: Option<Box<dyn Metric>>,
    observer: &mut dyn Observer,
) -> Result<Report, TuneError> {
    let attach_pid = match &program {
        Program::Attach(pid) => Some(*pid),
        Program::Launch(_) => None,
    };
    if let Some(pid) = attach_pid {
        check_owner(pid, false)?;
    }
    let own = i32::try_from(std::process::id()).unwrap_or(0);
    precheck(topo, opts, Some(attach_pid.unwrap_or(own)))?;
    // Heartbeats: a fresh page for a launched program; the page an attached one was
    // started with.
    let mut hb_dir = None;
    let (mut target, heartbeat_path, hb_why) = match program {
        Program::Launch(mut cmd) => {
            let dir = HeartbeatDir::create()?;
            let page = dir.page();
            // Made before the program starts, so that its first beat finds it.
            let reader = Heartbeat::open(&page)?;
            drop(reader);
            cmd.env(HEARTBEAT_VAR, &page);
            hb_dir = Some(dir);
            let program = format!("{:?}", cmd.get_program());
            if !opts.keep_child {
                launch::end_with_this_process(&mut cmd);
            }
            let sup = Supervised::spawn(&mut cmd)
                .map_err(|source| TuneError::Launch { program, source })?;
            (Target::Child(sup), Some(page), String::new())
        }
        Program::Attach(pid) => {
            let watch = SignalWatch::install().map_err(|source| TuneError::Io {
                what: "installing signal handlers".into(),
                source,
            })?;
            let path = proc::environ::environ_var(pid, HEARTBEAT_VAR)?.map(PathBuf::from);
            let why = if path.is_none() {
                format!("process {pid} was not started with {HEARTBEAT_VAR} set")
            } else {
                String::new()
            };
            (Target::Attached { pid, watch }, path, why)
        }
    };
    let pid = target.pid();
    observer.event(&Event::Started {
        pid,
        launched: attach_pid.is_none(),
    });
    let mut driver = Driver {
        topo,
        opts,
        observer,
        tracker: ThreadTracker::new(pid, opts.skip),
        allowed: allowed_cpus(pid),
        metric: None,
        candidates: Vec::new(),
        search: None,
        pinned: None,
        last_best: None,
        round_phase: None,
        round_start: 0.0,
        report: Report {
            metric: "none".into(),
            metric_unit: String::new(),
            metric_note: String::new(),
            candidates: Vec::new(),
            best: None,
            exit_status: None,
            pid,
            launched: attach_pid.is_none(),
            rounds: Vec::new(),
            time_saved_s: 0.0,
            dropped: Vec::new(),
            stopped_by: String::new(),
            error: None,
            idle_threads: Vec::new(),
        },
        pin_new_threads: true,
        first_seen: HashMap::new(),
    };
    let t0 = Instant::now();
    let tick = opts.poll.min(opts.phases.sample / 2.0).max(0.001);
    let mut mode = Mode::Initial;
    let mut custom = custom;
    let exit = loop {
        let now = t0.elapsed().as_secs_f64();
        match target.ended() {
            Ok(Some(code)) => break code,
            Ok(None) => {}
            Err(e) => {
                driver.report.error = Some(e.to_string());
                break None;
            }
        }
        if !matches!(mode, Mode::Stopped) && launch::asks_to_stop(&target.signals()) {
            let reason = format!(
                "signal {}",
                target
                    .signals()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            driver.stop(now, &reason);
            mode = Mode::Stopped;
            if matches!(target, Target::Attached { .. }) {
                break None;
            }
        }
        let step: Result<(), TuneError> = (|| {
            match driver.tracker.poll() {
                Ok(fresh) => {
                    driver.saw(&fresh, now);
                    driver.pin_new(&fresh)?;
                }
                Err(ProcError::Gone { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
            if matches!(mode, Mode::Initial) && now >= opts.phases.initial_wait {
                let (m, note) = match custom.take() {
                    Some(m) => (m, "given by the caller".to_string()),
                    None => {
                        let hb = match &heartbeat_path {
                            Some(p) => Some(Heartbeat::open(p)?),
                            None => None,
                        };
                        choose_metric(opts.metric, pid, hb, &hb_why, opts.phases.initial_wait)?
                    }
                };
                driver.report.metric = m.name().to_string();
                driver.report.metric_unit = m.unit().to_string();
                driver.report.metric_note.clone_from(&note);
                driver.observer.event(&Event::Metric {
                    name: m.name(),
                    unit: m.unit(),
                    note: &note,
                });
                driver.metric = Some(m);
            }
            driver.tune(now, &mut mode)
        })();
        if let Err(e) = step {
            if matches!(target.ended(), Ok(Some(_))) {
                continue;
            }
            let msg = e.to_string();
            driver.report.error = Some(msg.clone());
            driver
                .observer
                .event(&Event::Warning(&format!("{STOPPED_BY_ERROR}{msg}")));
            driver.stop(now, "error");
            mode = Mode::Stopped;
            if matches!(target, Target::Attached { .. }) {
                break None;
            }
        }
        std::thread::sleep(Duration::from_secs_f64(tick));
    };
    let now = t0.elapsed().as_secs_f64();
    if !matches!(mode, Mode::Stopped) {
        let reason = if driver.report.error.is_some() {
            "error"
        } else {
            "the program ended"
        };
        driver.stop(now, reason);
    }
    driver.report.exit_status = exit;
    drop(hb_dir);
    Ok(driver.report)
}
