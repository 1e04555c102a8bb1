//! The deadlines of a measurement on simulated probes and a simulated clock (no test reads
//! the wall clock): the latency pairs calibrate their plan on the first measurements and
//! stop at their share, saying what they left out; the plugins share the time actually left
//! and a plugin it cannot hold is left out and said.

use std::cell::Cell;

use topoprobe_infer::InferOptions;
use topoprobe_machine::pairs::{collect_within, Repetitions, Sampling, CALIBRATION_PAIRS};
use topoprobe_machine::plan::{plan_pairs, share_of_time_left, Clock, PairPlan};
use topoprobe_machine::plugins::{budget_in_time_left, Plugin};
use topoprobe_model::{Budget, PairLatency, PairSample, ProbeError};

/// A clock that moves only when the probe measures.
#[derive(Default)]
struct SimClock(Cell<f64>);

impl Clock for SimClock {
    fn now(&self) -> f64 {
        self.0.get()
    }
}

/// `n` contexts whose latencies say nothing (every pair about 1 µs, as between the vCPUs
/// of an emulated guest); each measurement advances the clock by `per_pair` seconds (the
/// first by `first`).
struct Flat<'c> {
    n: usize,
    clock: &'c SimClock,
    first: f64,
    per_pair: f64,
    calls: usize,
}

impl PairLatency for Flat<'_> {
    fn contexts(&self) -> usize {
        self.n
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        let dt = if self.calls == 0 {
            self.first
        } else {
            self.per_pair
        };
        self.calls += 1;
        self.clock.0.set(self.clock.0.get() + dt);
        let v = 1000.0 + ((a * 31 + b * 17) % 7) as f64 * 15.0;
        Ok(Some(PairSample {
            median: v,
            min: v * 0.97,
            spread: 0.05,
            noisy: None,
        }))
    }
}

fn plan_of(n: usize, room: f64, sampling: Sampling) -> PairPlan {
    let mut p = plan_pairs(n, sampling, Repetitions::default(), f64::MAX).unwrap();
    p.room = room;
    p
}

#[test]
fn a_slow_guest_stops_at_the_pairs_deadline_says_so_and_still_infers() {
    // Every pair of 32 contexts, 1 s for them.
    let full = Sampling {
        full: true,
        seed: None,
    };
    let plan = plan_of(32, 1.0, full);
    let planned = plan.per_measurement();
    let clock = SimClock::default();
    // Every pair 3× slower than planned, the first 20× (thread start, code translation).
    let mut probe = Flat {
        n: 32,
        clock: &clock,
        first: 20.0 * planned,
        per_pair: 3.0 * planned,
        calls: 0,
    };
    let (table, calibrated) =
        collect_within(&mut probe, full, None, &plan, &clock, &mut |_, _| {}).unwrap();
    // Calibrated on the pairs after the first: 3× the plan, not 20×.
    let ratio = calibrated.seconds / plan.seconds;
    assert!((2.5..3.5).contains(&ratio), "{ratio} {calibrated:?}");
    // It stopped at its deadline (one measurement may end past it).
    let spent = clock.now();
    assert!(spent <= calibrated.deadline() + 3.0 * planned, "{spent}");
    assert!(spent <= calibrated.room + 3.0 * planned, "{spent}");
    // The pairs past the deadline are left out and said.
    assert!(probe.calls < 32 * 31 / 2, "{}", probe.calls);
    assert!(
        calibrated
            .notes
            .iter()
            .any(|n| n.contains("left out") && n.contains("pair measurements")),
        "{:?}",
        calibrated.notes
    );
    // What was measured still infers a topology.
    table
        .collected
        .infer(&InferOptions::default())
        .expect("a topology from the pairs measured");
}

#[test]
fn a_machine_as_fast_as_planned_keeps_its_plan() {
    let plan = plan_of(16, 10.0, Sampling::default());
    let clock = SimClock::default();
    let mut probe = Flat {
        n: 16,
        clock: &clock,
        first: plan.per_measurement(),
        per_pair: plan.per_measurement(),
        calls: 0,
    };
    let (_, after) = collect_within(
        &mut probe,
        Sampling::default(),
        None,
        &plan,
        &clock,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(after.seconds, plan.seconds);
    assert!(after.notes.is_empty(), "{:?}", after.notes);
    assert!(probe.calls > CALIBRATION_PAIRS);
}

#[test]
fn a_much_slower_machine_caps_the_measurements_to_the_share() {
    let plan = plan_of(64, 1.0, Sampling::default());
    let clock = SimClock::default();
    let per_pair = 40.0 * plan.per_measurement();
    let mut probe = Flat {
        n: 64,
        clock: &clock,
        first: per_pair,
        per_pair,
        calls: 0,
    };
    let (_, after) = collect_within(
        &mut probe,
        Sampling::default(),
        None,
        &plan,
        &clock,
        &mut |_, _| {},
    )
    .unwrap();
    let cap = after.max_measurements.expect("a cap");
    assert!(cap as f64 * per_pair <= 1.0 + 1e-9, "{cap}");
    assert!(clock.now() <= after.room + per_pair, "{}", clock.now());
    assert!(after.notes.iter().any(|n| n.contains("fit the pairs'")));
}

#[test]
fn plugins_share_the_time_left_and_one_it_cannot_hold_is_left_out() {
    // Room for all: each its planned share.
    assert_eq!(share_of_time_left(&[2.0, 1.0], 5.0, 0.02), Some(2.0));
    // The pairs ran long: the shares shrink in proportion.
    let g = share_of_time_left(&[2.0, 1.0], 1.5, 0.02).unwrap();
    assert!((g - 1.0).abs() < 1e-9, "{g}");
    // Nothing left: left out; a plugin planned at no cost still runs.
    assert_eq!(share_of_time_left(&[2.0], -0.5, 0.02), None);
    assert_eq!(share_of_time_left(&[0.0, 1.0], 0.0, 0.02), Some(0.0));
    let b = Budget::new(3.0, 256 << 20);
    let e = budget_in_time_left(Plugin::Mem, b, &[3.0], 0.0, |_| 0.0).unwrap_err();
    assert!(e.starts_with("left out: mem:"), "{e}");
    // What is left cannot hold the least the plugin measures.
    let e = budget_in_time_left(Plugin::Cache, b, &[3.0], 0.1, |_| 1.0).unwrap_err();
    assert!(e.contains("the least it measures"), "{e}");
    let ok = budget_in_time_left(Plugin::Cache, b, &[3.0, 1.0], 2.0, |x| x.seconds).unwrap();
    assert!((ok.seconds - 1.5).abs() < 1e-9, "{ok:?}");
}
