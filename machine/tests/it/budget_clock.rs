//! The budget's clock from the process's start to the end of saving, on plans and a
//! simulated clock (no test reads the wall clock): a run that starts late gives its pairs
//! the share of the time actually left, the end keeps a reserve for saving and printing
//! that grows with the machine's slowness, and the SMT probe keeps within its share and
//! says what it left out.

use std::cell::Cell;

use topoprobe_machine::pairs::{Repetitions, Sampling};
use topoprobe_machine::plan::{default_budget, finish_seconds, plan_measurement, MeasurePlan};
use topoprobe_machine::plugins::{self, in_order};
use topoprobe_measure::plan::{Shape, SocketShape, GIB, MIB};
use topoprobe_measure::smt::{self, SmtRun, SmtRuns, SmtTest};

/// The 32-vCPU guest of the reports: one socket of 16 cores of two threads, as planned
/// without an OS view.
fn guest_plan(watch: bool) -> MeasurePlan {
    let shape = Shape {
        sockets: vec![SocketShape {
            cpus: (0..32).collect(),
            cores: 16,
            llc_bytes: Some(16 * MIB),
            local_node: None,
        }],
        nodes: Vec::new(),
        cache_levels: vec![32 << 10, MIB, 16 * MIB],
        free_bytes: Some(4 * GIB),
        can_flush: true,
        huge_pages: false,
        power_unavailable: Some("no RAPL counters".into()),
        speed: Default::default(),
    };
    let wanted = in_order(&plugins::parse(plugins::DEFAULT).unwrap());
    plan_measurement(
        &shape,
        None,
        &wanted,
        Sampling::default(),
        Repetitions::default(),
        default_budget(&wanted),
        watch,
    )
    .unwrap()
}

#[test]
fn the_end_keeps_a_reserve_for_saving_that_grows_with_the_machines_slowness() {
    let plan = guest_plan(true);
    let budget = plan.budget.seconds;
    assert!(plan.finish >= finish_seconds(32) && plan.finish > 0.0);
    let (plugins_end, end) = plan.ends(1.0);
    assert!((plugins_end - plan.plugins_end).abs() < 1e-9);
    assert!(
        plugins_end < end && end + plan.finish < budget,
        "{plugins_end} {end}"
    );
    // An inference 20× slower than planned (an emulated guest): the end comes earlier by
    // the reserve's growth, the plugins' end with it.
    let (slow_plugins_end, slow_end) = plan.ends(20.0);
    assert!(
        (end - slow_end - 19.0 * plan.finish).abs() < 1e-9,
        "{slow_end}"
    );
    assert!(slow_plugins_end < plugins_end);
    // Faster than planned, or no figure: the plan's reserve, never less.
    assert_eq!(plan.ends(0.5), plan.ends(1.0));
    assert_eq!(plan.ends(f64::NAN), plan.ends(1.0));
    // A reserve beyond the budget ends everything at its start, not before.
    assert!(plan.ends(f64::MAX).1 >= 0.0);
    // The SMT probe's share is one run of its step (it runs again at the end).
    let step = plan.cost.steps.iter().find(|s| s.probe == "smt").unwrap();
    assert!((plan.smt_share * 2.0 - step.seconds).abs() < 1e-3 * step.seconds);
    assert!((guest_plan(false).smt_share - smt::expected_seconds() * 3.0).abs() < 1e-9);
}

#[test]
fn pairs_that_start_late_get_the_share_of_the_time_actually_left() {
    let plan = guest_plan(true);
    assert_eq!(plan.pairs_room_at(0.0), plan.pairs.room);
    // The process took 1.2 s to start, read the OS view and plan: the pairs' share shrinks
    // (never grows), and what it leaves the plugins stays at least its half.
    let late = plan.pairs_room_at(1.2);
    assert!(late <= plan.pairs.room, "{late}");
    let after_fixed = plan.ends(1.0).1 - 1.2 - plan.fixed_seconds();
    assert!(late >= 0.5 * after_fixed - 1e-9 || late == plan.pairs.room);
    assert!(plan.pairs_room_at(6.0) < late);
    // A start past the plugins' end: nothing is left for the pairs (the probe still
    // measures its first pair).
    assert_eq!(plan.pairs_room_at(plan.ends(1.0).1), 0.0);
}

#[test]
fn the_smt_probe_stops_at_its_share_under_a_loaded_host() {
    // The SMT probe planned 0.73 s and spent 2.05 s in a loaded 32-vCPU guest: each
    // iteration 40× the plan's pace, and the runs beside the partner twice as long again.
    let plan = guest_plan(true);
    let pace = 40.0 * smt::expected_seconds() / SmtRuns::FULL.seconds(1.0);
    let clock = Cell::new(0.0_f64);
    let now = || clock.get();
    let calls = Cell::new(0);
    let mut test = |a: u32, b: u32, allowed: f64| -> Result<SmtRun, String> {
        calls.set(calls.get() + 1);
        let runs = SmtRuns::fit(allowed, pace);
        clock.set(clock.get() + runs.seconds(pace));
        Ok(SmtRun {
            test: SmtTest {
                a,
                b,
                slowdown: 2.0,
            },
            runs,
            per_iteration: pace,
        })
    };
    let pairs = [(0, 1), (2, 3), (4, 5)];
    let p = smt::probe_within(&pairs, plan.smt_share, &now, &mut test).unwrap();
    assert!(
        clock.get() <= plan.smt_share * 1.01,
        "{} of {}",
        clock.get(),
        plan.smt_share
    );
    assert!(!p.tests.is_empty() && p.tests.iter().all(SmtTest::shares_core));
    assert!(
        p.notes.iter().any(|n| n.starts_with("smt: ")),
        "{:?}",
        p.notes
    );
    // No time at all: one pair at the least runs, the others left out and said.
    clock.set(0.0);
    calls.set(0);
    let p = smt::probe_within(&pairs, 0.0, &now, &mut test).unwrap();
    assert_eq!((calls.get(), p.tests.len(), p.left_out.len()), (1, 1, 2));
    assert_eq!(p.shortened[0].2, SmtRuns::LEAST);
    assert!(p.notes.iter().any(|n| n.contains("left out: 2-3, 4-5")));
}
