//! autopin's driver on real programs: the heartbeat metric end to end (the example
//! program beats through shared memory), and the search logic against scripted metrics
//! whose rate depends on where the program's threads are pinned (a memory-bound program
//! whose best placement is the compact one, as the simulator or a machine with shared
//! caches would show): it finds the best, stops clearly worse candidates early, re-tunes
//! on a declared phase change and every `retune_every` seconds, and leaves the program
//! pinned by the best.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use topoprobe_sys::affinity;
use topoprobe_tune::autopin::{
    self, CandidateSource, Metric, MetricChoice, Options, Phases, Program,
};
use topoprobe_tune::TuneError;

/// The heartbeat example, built by `cargo test` (or built here when only this test was
/// asked for).
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let path = dir.join("examples").join("heartbeat");
    if !path.exists() {
        let st = Command::new(env!("CARGO"))
            .args(["build", "-p", "topoprobe-tune", "--example", "heartbeat"])
            .status()
            .expect("cargo runs");
        assert!(st.success(), "cannot build the heartbeat example");
    }
    path
}

/// CPUs this test may use: the first two allowed (or the only one twice).
fn two_cpus() -> (u32, u32) {
    let allowed = affinity::allowed_cpus().expect("affinity").to_vec();
    (allowed[0], *allowed.get(1).unwrap_or(&allowed[0]))
}

fn quick(candidates: CandidateSource) -> Options {
    Options {
        candidates,
        phases: Phases::new(0.3, 0.1, 0.6),
        ..Options::default()
    }
}

fn launch(args: &[&str]) -> Program {
    let mut cmd = Command::new(example());
    cmd.args(args).stdout(Stdio::null());
    Program::Launch(cmd)
}

#[test]
fn heartbeats_score_the_program() {
    let (a, b) = two_cpus();
    let mut opts = quick(CandidateSource::Schedules(vec![vec![a, a], vec![a, b]]));
    opts.metric = MetricChoice::Heartbeat;
    let r = autopin::run(None, launch(&["2", "3"]), &opts, &mut ()).expect("runs");
    assert_eq!(r.metric, "heartbeat", "{}", r.metric_note);
    assert_eq!(r.exit_status, Some(0));
    assert_eq!(r.candidates.len(), 2);
    for c in &r.candidates {
        assert!(c.score.is_some_and(|s| s > 0.0), "{c:?}");
    }
    assert!(r.best.is_some());
    // The default metric prefers heartbeats when the program sends them.
    opts.metric = MetricChoice::Auto;
    let r = autopin::run(None, launch(&["2", "2"]), &opts, &mut ()).expect("runs");
    assert_eq!(r.metric, "heartbeat", "{}", r.metric_note);
}

#[test]
fn a_phase_declared_through_heartbeats_restarts_the_search() {
    let (a, b) = two_cpus();
    let mut opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![a, a]]));
    opts.metric = MetricChoice::Heartbeat;
    // Phase 2 after 2 s: the first round (0.3 + 2 × 0.7 s) is over by then.
    let r = autopin::run(None, launch(&["2", "4", "compute", "2"]), &opts, &mut ()).expect("runs");
    assert_eq!(r.metric, "heartbeat");
    let reasons: Vec<&str> = r.rounds.iter().map(|x| x.reason.as_str()).collect();
    assert_eq!(reasons.first(), Some(&"start"), "{reasons:?}");
    assert!(reasons.contains(&"phase 2"), "{reasons:?}");
}

#[test]
fn asking_for_missing_heartbeats_is_a_clear_error_and_the_program_runs_on() {
    let mut opts = quick(CandidateSource::Schedules(vec![vec![two_cpus().0]]));
    opts.metric = MetricChoice::Heartbeat;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "sleep 1; exit 3"]);
    let r = autopin::run(None, Program::Launch(cmd), &opts, &mut ()).expect("runs");
    let e = r.error.expect("an error");
    assert!(e.contains("heartbeat") && e.contains("tp_heartbeat"), "{e}");
    assert_eq!(r.exit_status, Some(3), "the program's status is kept");
}

/// A scripted metric: the program progresses at a rate that depends on where its threads
/// are pinned (`rate(cpus of the live threads)`), plus a small deterministic ripple, and
/// declares phase 2 after `phase_after` reads.
struct Scripted {
    pid: i32,
    rate: fn(&[Vec<u32>]) -> f64,
    total: f64,
    last: Option<Instant>,
    reads: usize,
    phase_after: Option<usize>,
}

impl Metric for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn unit(&self) -> &str {
        "units/s"
    }
    fn total(&mut self, tids: &[i32]) -> Result<f64, TuneError> {
        let masks: Vec<Vec<u32>> = tids
            .iter()
            .filter_map(|&t| affinity::thread_affinity(t).ok())
            .map(|m| m.to_vec())
            .collect();
        let now = Instant::now();
        if let Some(last) = self.last {
            let dt = now.duration_since(last).as_secs_f64();
            let ripple = if self.reads.is_multiple_of(2) {
                0.01
            } else {
                -0.01
            };
            self.total += ((self.rate)(&masks) + ripple) * dt;
        }
        self.last = Some(now);
        self.reads += 1;
        let _ = self.pid;
        Ok(self.total)
    }
    fn phase(&self) -> Option<u64> {
        Some(match self.phase_after {
            Some(n) if self.reads > n => 2,
            _ => 1,
        })
    }
}

/// Memory-bound threads that share a cache: 10 units/s when all threads run on one CPU
/// (they share its caches), 6 when spread.
fn compact_wins(masks: &[Vec<u32>]) -> f64 {
    let first = masks.first().cloned().unwrap_or_default();
    if masks.iter().all(|m| *m == first && m.len() == 1) {
        10.0
    } else {
        6.0
    }
}

fn scripted(phase_after: Option<usize>) -> Box<Scripted> {
    Box::new(Scripted {
        pid: 0,
        rate: compact_wins,
        total: 0.0,
        last: None,
        reads: 0,
        phase_after,
    })
}

#[test]
fn finds_the_compact_best_and_stops_the_spread_one_early() {
    let (a, b) = two_cpus();
    if a == b {
        return;
    }
    let opts = quick(CandidateSource::Schedules(vec![
        vec![a, b],
        vec![a, a],
        vec![b, a],
        vec![b, b],
    ]));
    let r = autopin::run_with_metric(None, launch(&["2", "5"]), &opts, scripted(None), &mut ())
        .expect("runs");
    let states: Vec<&str> = r.candidates.iter().map(|c| c.state.as_str()).collect();
    assert_eq!(
        states,
        vec!["measured", "measured", "stopped-early", "measured"],
        "{r:#?}"
    );
    let best = r.best.expect("a best");
    // The two compact candidates score the same (up to the timing of the reads).
    assert!(
        best.cpus == vec![a, a] || best.cpus == vec![b, b],
        "a compact candidate wins: {best:?}"
    );
    assert!(r.time_saved_s > 0.0);
    assert_eq!(r.exit_status, Some(0));
}

#[test]
fn a_declared_phase_or_the_retune_timer_restarts_the_search() {
    let (a, b) = two_cpus();
    let opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![a, a]]));
    // Phase 2 is declared after about 1 s of reads (every 20 ms).
    let r = autopin::run_with_metric(
        None,
        launch(&["2", "4"]),
        &opts,
        scripted(Some(50)),
        &mut (),
    )
    .expect("runs");
    assert!(r.rounds.len() >= 2, "{:?}", r.rounds);
    assert_eq!(r.rounds[1].reason, "phase 2");
    let mut opts = opts;
    opts.retune_every = Some(0.3);
    let r = autopin::run_with_metric(None, launch(&["2", "4"]), &opts, scripted(None), &mut ())
        .expect("runs");
    assert!(r.rounds.len() >= 2, "{:?}", r.rounds);
    assert_eq!(r.rounds[1].reason, "retune");
    assert_eq!(r.exit_status, Some(0));
}

#[test]
fn the_program_ends_pinned_by_the_best() {
    let (a, b) = two_cpus();
    let opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![b, b]]));
    let mut cmd = Command::new(example());
    cmd.args(["2", "3"]).stdout(Stdio::piped());
    let child_out = tempfile_path("pinned.out");
    let file = std::fs::File::create(&child_out).expect("out file");
    cmd.stdout(file);
    let r = autopin::run_with_metric(None, Program::Launch(cmd), &opts, scripted(None), &mut ())
        .expect("runs");
    let best = r.best.expect("best");
    assert_eq!(best.cpus, vec![b, b]);
    let out = std::fs::read_to_string(&child_out).expect("output");
    for i in 0..2 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("thread{i} ")))
            .expect("thread line");
        assert_eq!(line, format!("thread{i} {b}"), "{out}");
    }
}

#[test]
fn skipped_threads_may_run_on_every_cpu_of_the_pinning() {
    let (a, b) = two_cpus();
    if a == b {
        return;
    }
    let mut opts = quick(CandidateSource::Schedules(vec![vec![a, b]]));
    // The first created thread (bit 0) is a helper: positions go to the main thread and
    // the second created one.
    opts.skip = 0b1;
    let out_path = tempfile_path("skip.out");
    let mut cmd = Command::new(example());
    cmd.args(["3", "2"])
        .stdout(std::fs::File::create(&out_path).expect("out file"));
    let r = autopin::run_with_metric(None, Program::Launch(cmd), &opts, scripted(None), &mut ())
        .expect("runs");
    assert_eq!(r.exit_status, Some(0));
    let out = std::fs::read_to_string(&out_path).expect("output");
    let line = |i: usize| {
        out.lines()
            .find(|l| l.starts_with(&format!("thread{i} ")))
            .map(|l| l.split_once(' ').map_or("", |x| x.1).to_string())
            .unwrap_or_default()
    };
    let both = topoprobe_model::format_cpu_list(&{
        let mut v = vec![a, b];
        v.sort_unstable();
        v
    });
    assert_eq!(
        (line(0), line(1), line(2)),
        (a.to_string(), both, b.to_string()),
        "{out}"
    );
}

fn tempfile_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tp-autopin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(name)
}

#[test]
fn attaching_needs_a_live_process_and_candidates_need_a_topology() {
    let opts = Options::default();
    let e = autopin::run(None, Program::Attach(i32::MAX), &opts, &mut ()).unwrap_err();
    assert!(matches!(e, TuneError::NoProcess(_)), "{e}");
    let mut child = Command::new("sleep").arg("5").spawn().expect("sleep");
    let pid = i32::try_from(child.id()).expect("pid");
    let e = autopin::run(None, Program::Attach(pid), &opts, &mut ()).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("--schedule"), "{e}");
    child.kill().ok();
    child.wait().ok();
}
