//! autopin's driver on real programs: the heartbeat metric end to end (the program,
//! [`crate::beater`], beats through shared memory), and the search logic against scripted
//! metrics whose rate depends on where the program's threads are pinned (a memory-bound
//! program whose best placement is the compact one, as the simulator or a machine with
//! shared caches would show): it finds the best, stops clearly worse candidates early,
//! re-tunes on a declared phase change and every `retune_every` seconds, and leaves the
//! program pinned by the best. The program runs until the test ends it, after the event
//! the test waits for; phases change when the test declares them.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use topoprobe_sys::affinity;
use topoprobe_tune::autopin::{
    self, CandidateSource, Event, Metric, MetricChoice, Options, Phases, Program,
};
use topoprobe_tune::TuneError;

use crate::beater::{at_the_first_best, Beater, Steer};

/// CPUs this test may use: the first two allowed (or the only one twice).
fn two_cpus() -> (u32, u32) {
    let allowed = affinity::allowed_cpus().expect("affinity").to_vec();
    (allowed[0], *allowed.get(1).unwrap_or(&allowed[0]))
}

/// Quick phases, without an initial wait: the program has started its threads and beaten
/// before autopin's clock starts ([`Steer`]), and autopin's judgment of threads idle during
/// an initial wait (which depends on the share of a CPU a loaded machine gives them) stays
/// out of these tests.
fn quick(candidates: CandidateSource) -> Options {
    Options {
        candidates,
        phases: Phases::new(0.0, 0.1, 0.6),
        ..Options::default()
    }
}

#[test]
fn heartbeats_score_the_program() {
    let (a, b) = two_cpus();
    let mut opts = quick(CandidateSource::Schedules(vec![vec![a, a], vec![a, b]]));
    opts.metric = MetricChoice::Heartbeat;
    let (program, mut beater) = Beater::launch(2);
    let r = autopin::run(
        None,
        program,
        &opts,
        &mut Steer::new(&mut beater, at_the_first_best),
    )
    .expect("runs");
    assert_eq!(r.metric, "heartbeat", "{}", r.metric_note);
    assert_eq!(r.exit_status, Some(0));
    assert_eq!(r.candidates.len(), 2);
    for c in &r.candidates {
        assert!(c.score.is_some_and(|s| s > 0.0), "{c:?}");
    }
    assert!(r.best.is_some());
    // The default metric prefers heartbeats when the program sends them.
    opts.metric = MetricChoice::Auto;
    let (program, mut beater) = Beater::launch(2);
    let r = autopin::run(
        None,
        program,
        &opts,
        &mut Steer::new(&mut beater, at_the_first_best),
    )
    .expect("runs");
    assert_eq!(r.metric, "heartbeat", "{}", r.metric_note);
    assert_eq!(r.exit_status, Some(0));
}

#[test]
fn a_phase_declared_through_heartbeats_restarts_the_search() {
    let (a, b) = two_cpus();
    let mut opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![a, a]]));
    opts.metric = MetricChoice::Heartbeat;
    // The program declares phase 2 once the first round is over; it ends when the second
    // round starts.
    let mut round = 0;
    let steer = |e: &Event<'_>, p: &mut Beater| match e {
        Event::Best { .. } if round == 1 => p.say("phase 2"),
        Event::Round { round: r, .. } => {
            round = *r;
            if round == 2 {
                p.stop();
            }
        }
        _ => {}
    };
    let (program, mut beater) = Beater::launch(2);
    let r = autopin::run(None, program, &opts, &mut Steer::new(&mut beater, steer)).expect("runs");
    assert_eq!(r.metric, "heartbeat");
    let reasons: Vec<&str> = r.rounds.iter().map(|x| x.reason.as_str()).collect();
    assert_eq!(reasons.first(), Some(&"start"), "{reasons:?}");
    assert!(reasons.contains(&"phase 2"), "{reasons:?}");
    assert_eq!(r.exit_status, Some(0));
}

#[test]
fn asking_for_missing_heartbeats_is_a_clear_error_and_the_program_runs_on() {
    let mut opts = quick(CandidateSource::Schedules(vec![vec![two_cpus().0]]));
    opts.metric = MetricChoice::Heartbeat;
    // The program runs until the test closes its standard input, which it does once
    // autopin stopped tuning.
    let (program, mut shell) = Beater::shell("read x; exit 3");
    let r =
        autopin::run(None, program, &opts, &mut Steer::new(&mut shell, |_, _| {})).expect("runs");
    let e = r.error.expect("an error");
    assert!(e.contains("heartbeat") && e.contains("tp_heartbeat"), "{e}");
    assert_eq!(r.exit_status, Some(3), "the program's status is kept");
}

/// A scripted metric: the program progresses at a rate that depends on where its threads
/// are pinned (`rate(cpus of the live threads)`), plus a small deterministic ripple, in the
/// phase the test sets in `phase`.
struct Scripted {
    rate: fn(&[Vec<u32>]) -> f64,
    total: f64,
    last: Option<Instant>,
    reads: usize,
    phase: Arc<AtomicU64>,
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
        Ok(self.total)
    }
    fn phase(&self) -> Option<u64> {
        Some(self.phase.load(Ordering::SeqCst))
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

/// The scripted metric in phase 1, and the phase the test may change.
fn scripted() -> (Box<Scripted>, Arc<AtomicU64>) {
    let phase = Arc::new(AtomicU64::new(1));
    let metric = Box::new(Scripted {
        rate: compact_wins,
        total: 0.0,
        last: None,
        reads: 0,
        phase: Arc::clone(&phase),
    });
    (metric, phase)
}

/// Runs autopin with the scripted metric on the program with `threads` threads, which ends
/// at the end of the first round; returns the report and the program's output.
fn scripted_run(threads: usize, opts: &Options) -> (autopin::Report, String) {
    let (program, mut beater) = Beater::launch(threads);
    let (metric, _) = scripted();
    let r = autopin::run_with_metric(
        None,
        program,
        opts,
        metric,
        &mut Steer::new(&mut beater, at_the_first_best),
    )
    .expect("runs");
    (r, beater.output())
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
    let (r, _) = scripted_run(2, &opts);
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

/// Runs autopin with the scripted metric on a program that ends when the second round
/// starts; with `declare`, the test declares phase 2 at the end of the first round.
fn two_rounds(opts: &Options, declare: bool) -> autopin::Report {
    let (program, mut beater) = Beater::launch(2);
    let (metric, phase) = scripted();
    let mut round = 0;
    let steer = |e: &Event<'_>, p: &mut Beater| match e {
        Event::Best { .. } if round == 1 && declare => phase.store(2, Ordering::SeqCst),
        Event::Round { round: r, .. } => {
            round = *r;
            if round == 2 {
                p.stop();
            }
        }
        _ => {}
    };
    autopin::run_with_metric(
        None,
        program,
        opts,
        metric,
        &mut Steer::new(&mut beater, steer),
    )
    .expect("runs")
}

#[test]
fn a_declared_phase_or_the_retune_timer_restarts_the_search() {
    let (a, b) = two_cpus();
    let opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![a, a]]));
    let r = two_rounds(&opts, true);
    assert!(r.rounds.len() >= 2, "{:?}", r.rounds);
    assert_eq!(r.rounds[1].reason, "phase 2");
    let mut opts = opts;
    opts.retune_every = Some(0.3);
    let r = two_rounds(&opts, false);
    assert!(r.rounds.len() >= 2, "{:?}", r.rounds);
    assert_eq!(r.rounds[1].reason, "retune");
    assert_eq!(r.exit_status, Some(0));
}

#[test]
fn the_program_ends_pinned_by_the_best() {
    let (a, b) = two_cpus();
    let opts = quick(CandidateSource::Schedules(vec![vec![a, b], vec![b, b]]));
    let (r, out) = scripted_run(2, &opts);
    let best = r.best.expect("best");
    assert_eq!(best.cpus, vec![b, b]);
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
    let (r, out) = scripted_run(3, &opts);
    assert_eq!(r.exit_status, Some(0));
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

#[test]
fn attaching_needs_a_live_process_and_candidates_need_a_topology() {
    let opts = Options::default();
    let e = autopin::run(None, Program::Attach(i32::MAX), &opts, &mut ()).unwrap_err();
    assert!(matches!(e, TuneError::NoProcess(_)), "{e}");
    // A program that waits to be killed.
    let mut child = Command::new("sleep").arg("300").spawn().expect("sleep");
    let pid = i32::try_from(child.id()).expect("pid");
    let e = autopin::run(None, Program::Attach(pid), &opts, &mut ()).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("--schedule"), "{e}");
    child.kill().ok();
    child.wait().ok();
}
