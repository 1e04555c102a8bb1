//! The measurement run on scripted probes: a guest of two vCPUs that the "host" moves
//! between latency levels and SMT siblings while the run goes on, and probes that inject
//! noise (a pair flagged noisy, a pair given up) into the whole workflow.

use std::cell::Cell;
use std::rc::Rc;

use topoprobe_measure::smt::{SmtRun, SmtTest};
use topoprobe_model::{
    LatencyMatrix, MatrixProbe, OsCpu, OsView, PairLatency, PairSample, ProbeError, StructureLevel,
    Topology, WarningKind,
};

use topoprobe_infer::sim::Injected;

use crate::measurement::{measure_with, Context};
use crate::stability::is_unstable;
use crate::{MachineError, MeasureOptions, Progress};

/// A pair probe whose answer is whatever the script set last.
struct Scripted {
    latency: Rc<Cell<f64>>,
    calls: Rc<Cell<usize>>,
}

impl PairLatency for Scripted {
    fn contexts(&self) -> usize {
        2
    }

    fn measure(&mut self, _a: usize, _b: usize) -> Result<Option<PairSample>, ProbeError> {
        self.calls.set(self.calls.get() + 1);
        let v = self.latency.get();
        Ok(Some(PairSample {
            median: v,
            min: v * 0.98,
            spread: 0.01,
            noisy: None,
        }))
    }
}

/// The guest's OS view: one package, two cores without SMT.
fn os() -> OsView {
    flat_os(2)
}

fn context(watch: bool, saved: Option<Topology>) -> Context {
    Context {
        os: Ok(os()),
        watch,
        saved,
        free: Box::new(|_| Some(1 << 30)),
    }
}

/// What a run does: the pair's latency at the start, what the SMT probe says at its first
/// and second run, and a latency the host moves the pair to before the memory step.
struct Script {
    start: f64,
    smt: [f64; 2],
    during_plugins: Option<f64>,
}

fn run(script: &Script, ctx: &Context) -> Result<(Topology, usize), MachineError> {
    let latency = Rc::new(Cell::new(script.start));
    let calls = Rc::new(Cell::new(0));
    let mut probe = Scripted {
        latency: Rc::clone(&latency),
        calls: Rc::clone(&calls),
    };
    let mut smt_runs = 0usize;
    let mut smt = |a: u32, b: u32, _: f64| {
        let slowdown = script.smt[smt_runs.min(1)];
        smt_runs += 1;
        Ok(SmtRun::full(SmtTest { a, b, slowdown }))
    };
    let moved = Rc::clone(&latency);
    let mut plugins = |_: &mut Topology, _: f64, p: &mut dyn FnMut(Progress<'_>)| {
        p(Progress::Plugin("caches"));
        if let Some(v) = script.during_plugins {
            moved.set(v);
        }
        p(Progress::Plugin("memory"));
        p(Progress::StepsDone);
        Ok(Vec::new())
    };
    let opts = MeasureOptions {
        plugins: Vec::new(),
        ..MeasureOptions::default()
    };
    let plan = crate::plan_this_machine(&opts, &[0, 1], ctx.os.as_ref().ok(), ctx.watch)?;
    let (topo, _) = measure_with(
        &opts,
        &[0, 1],
        ctx,
        &plan,
        &crate::deadlines::WallClock::start(),
        &mut probe,
        &mut smt,
        &mut plugins,
        &mut |_| {},
    )?;
    Ok((topo, calls.get()))
}

fn unstable_messages(topo: &Topology) -> Vec<String> {
    topo.validation()
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::UnstableTopology)
        .map(|w| w.message.clone())
        .collect()
}

const STEADY: Script = Script {
    start: 40.0,
    smt: [1.0, 1.0],
    during_plugins: None,
};

#[test]
fn a_steady_guest_gives_the_os_structure_with_confidence() {
    let (topo, calls) = run(&STEADY, &context(true, None)).unwrap();
    assert!(!is_unstable(&topo), "{:?}", topo.validation());
    assert_eq!(
        (topo.num_sockets(), topo.num_cores(), topo.has_smt()),
        (1, 2, false)
    );
    // The table, then checks after it, after the SMT probe, before two steps and at the
    // end.
    assert!(calls >= 6, "{calls}");
    let refs = &topo.provenance().parameters["reference_pairs"];
    assert!(refs.starts_with("0-1: 40.0 40.0"), "{refs}");
}

#[test]
fn a_pair_moved_between_levels_mid_run_is_an_unstable_topology() {
    let script = Script {
        during_plugins: Some(230.0),
        ..STEADY
    };
    let (topo, _) = run(&script, &context(true, None)).unwrap();
    assert!(is_unstable(&topo));
    let m = unstable_messages(&topo);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].contains("40.0 ns in the table") && m[0].contains("230.0 ns before memory"),
        "{}",
        m[0]
    );
    assert!(m[0].contains("5.8×"), "{}", m[0]);
    // What was seen, not a cause the run cannot know: busy programs on the same CPUs
    // change these latencies as a host moving vCPUs does.
    assert!(m[0].contains("changed during the run"), "{}", m[0]);
    assert!(!m[0].contains("the host moved"), "{}", m[0]);
    let v = topo.validation();
    for u in &v.unresolved {
        assert!(!u.reason.contains("moved by the host"), "{}", u.reason);
    }
    assert!(
        v.unresolved
            .iter()
            .any(|u| u.level == StructureLevel::Socket && u.reason.starts_with("unstable")),
        "{v:?}"
    );
    assert!(v
        .confidence_of(StructureLevel::Socket)
        .is_some_and(|c| c <= 0.2));
}

#[test]
fn the_same_move_goes_unseen_without_watching() {
    let script = Script {
        during_plugins: Some(230.0),
        ..STEADY
    };
    let (topo, calls) = run(&script, &context(false, None)).unwrap();
    assert!(!is_unstable(&topo));
    assert_eq!(calls, 1, "no reference checks");
}

#[test]
fn an_smt_verdict_of_one_moment_is_never_silent() {
    // Shared core at the start, separate cores at the end.
    let script = Script {
        start: 12.0,
        smt: [1.9, 1.0],
        during_plugins: None,
    };
    let (topo, _) = run(&script, &context(true, None)).unwrap();
    let m = unstable_messages(&topo);
    assert!(
        m.iter()
            .any(|x| x.contains("a shared core at the start (1.90×)")
                && x.contains("separate cores at the end (1.00×)")),
        "{m:?}"
    );
    assert!(topo
        .validation()
        .unresolved
        .iter()
        .any(|u| u.level == StructureLevel::Core));
    // Shared at both ends, where the guest's OS lists two cores: the host's placement of
    // the moment, said as such.
    let script = Script {
        start: 12.0,
        smt: [1.9, 1.9],
        during_plugins: None,
    };
    let (topo, _) = run(&script, &context(true, None)).unwrap();
    assert!(topo.has_smt());
    let m = unstable_messages(&topo);
    assert!(
        m.iter()
            .any(|x| x.contains("the host runs the two vCPUs on SMT siblings now")),
        "{m:?}"
    );
}

#[test]
fn a_description_unlike_the_saved_one_is_unstable() {
    let (saved, _) = run(&STEADY, &context(true, None)).unwrap();
    // The next run finds the pair 3× slower all the time.
    let script = Script {
        start: 120.0,
        ..STEADY
    };
    let (topo, _) = run(&script, &context(true, Some(saved.clone()))).unwrap();
    let m = unstable_messages(&topo);
    assert!(
        m.iter()
            .any(|x| x.contains("is 120.0 ns now and was 40.0 ns") && x.contains("3.0×")),
        "{m:?}"
    );
    // The same run again: nothing to say.
    let (topo, _) = run(&STEADY, &context(true, Some(saved))).unwrap();
    assert!(!is_unstable(&topo), "{:?}", unstable_messages(&topo));
}

/// The noise of a busy CPU on the pairs `noisy` (a spread of 50%), as the live probe flags
/// it.
fn injected<P: PairLatency>(inner: P, noisy: &[(usize, usize)]) -> Injected<P> {
    let noisy = noisy.to_vec();
    let mut probe = Injected::new(inner, move |a, b| noisy.contains(&(a, b)));
    probe.spread = 0.5;
    probe.given_up_reason = "the partner thread did not answer for 2 s, 2 times in a row".into();
    probe
}

/// An OS view of `n` CPUs in one package, one core each.
fn flat_os(n: u32) -> OsView {
    let cpu = |id: u32| OsCpu {
        id,
        package: 0,
        die: None,
        core: i64::from(id),
        cluster: None,
        thread_siblings: vec![id],
        core_siblings: (0..n).collect(),
        node: Some(0),
        capacity: None,
        base_freq_khz: None,
        max_freq_khz: None,
        kind: None,
    };
    OsView {
        cpus: (0..n).map(cpu).collect(),
        ..OsView::default()
    }
}

/// Two clusters of four cores: 40 ns inside, 70 ns across.
fn two_clusters() -> LatencyMatrix {
    LatencyMatrix::from_fn(8, |a, b| {
        (a != b).then_some(if a / 4 == b / 4 { 40.0 } else { 70.0 })
    })
}

/// Measures `probe` (rows are CPUs `0..n`) with every pair or the sparse strategy.
fn measure_probe(probe: &mut dyn PairLatency, full: bool) -> Result<Topology, MachineError> {
    let n = u32::try_from(probe.contexts()).expect("contexts");
    let cpus: Vec<u32> = (0..n).collect();
    let ctx = Context {
        os: Ok(flat_os(n)),
        watch: false,
        saved: None,
        free: Box::new(|_| Some(1 << 30)),
    };
    let opts = MeasureOptions {
        plugins: Vec::new(),
        sampling: crate::pairs::Sampling { full, seed: None },
        ..MeasureOptions::default()
    };
    let mut smt = |a: u32, b: u32, _: f64| {
        Ok(SmtRun::full(SmtTest {
            a,
            b,
            slowdown: 1.0,
        }))
    };
    let mut plugins = |_: &mut Topology, _: f64, _: &mut dyn FnMut(Progress<'_>)| Ok(Vec::new());
    let plan = crate::plan_this_machine(&opts, &cpus, ctx.os.as_ref().ok(), ctx.watch)?;
    let (topo, _) = measure_with(
        &opts,
        &cpus,
        &ctx,
        &plan,
        &crate::deadlines::WallClock::start(),
        probe,
        &mut smt,
        &mut plugins,
        &mut |_| {},
    )?;
    Ok(topo)
}

fn warning(topo: &Topology, kind: WarningKind) -> Option<&str> {
    topo.validation()
        .warnings
        .iter()
        .find(|w| w.kind == kind)
        .map(|w| w.message.as_str())
}

#[test]
fn a_noisy_pair_is_flagged_and_the_run_succeeds() {
    let m = two_clusters();
    for full in [true, false] {
        let mut probe = injected(MatrixProbe::new(&m), &[(1, 2)]);
        probe.scale = 1.1;
        let topo = measure_probe(&mut probe, full).expect("the run succeeds");
        // The structure is the clusters': the other pairs decide it.
        assert_eq!(
            (topo.num_cores(), topo.groups().len()),
            (8, 2),
            "full {full}"
        );
        let w = warning(&topo, WarningKind::NoisyPairs).expect("noisy pairs warned");
        assert!(
            w.starts_with("1 pair of CPUs kept")
                && w.contains("(1, 2) spread 50.0% above the 14.0% limit after 5 batches")
                && w.contains("they decide no level"),
            "full {full}: {w}"
        );
        assert_eq!(topo.provenance().parameters["pairs_noisy"], "1");
        assert!(
            topo.validation()
                .unresolved
                .iter()
                .all(|u| !u.reason.contains("noisy")),
            "{:?}",
            topo.validation()
        );
        assert!(topo
            .validation()
            .confidence
            .iter()
            .all(|c| !c.basis.contains("noisy")));
        // Its spread is kept in the description.
        let spread = topo.latency_tables().spread.as_ref().expect("spread");
        if full {
            assert_eq!(spread.get(1, 2), Some(0.5));
        }
    }
}

#[test]
fn a_pair_measured_only_through_noise_lowers_the_confidence() {
    // Two vCPUs, the only pair noisy (a busy loop on one of them).
    let latency = Rc::new(Cell::new(40.0));
    let calls = Rc::new(Cell::new(0));
    let inner = Scripted { latency, calls };
    let mut probe = injected(inner, &[(0, 1)]);
    let topo = measure_probe(&mut probe, true).expect("the run succeeds");
    let w = warning(&topo, WarningKind::NoisyPairs).expect("warned");
    assert!(
        w.contains("CPUs 0, 1 were measured through noisy pairs only"),
        "{w}"
    );
    let v = topo.validation();
    assert!(!v.confidence.is_empty());
    assert!(
        v.confidence.iter().all(|c| c.confidence <= 0.5),
        "{:?}",
        v.confidence
    );
}

#[test]
fn a_pair_given_up_is_missing_and_flagged_and_nothing_measured_fails() {
    let m = two_clusters();
    let mut probe = injected(MatrixProbe::new(&m), &[]);
    probe.given_up = Box::new(|a, b| (a, b) == (2, 5));
    let topo = measure_probe(&mut probe, true).expect("the run succeeds");
    let w = warning(&topo, WarningKind::PairsGivenUp).expect("warned");
    assert!(
        w.contains("1 pair of CPUs could not be measured")
            && w.contains("(2, 5) the partner thread did not answer"),
        "{w}"
    );
    assert_eq!(topo.latency_tables().raw.get(2, 5), None);
    assert_eq!(topo.groups().len(), 2);

    let mut probe = injected(MatrixProbe::new(&m), &[]);
    probe.given_up = Box::new(|_, _| true);
    for full in [true, false] {
        let e = measure_probe(&mut probe, full).unwrap_err();
        let chain = format!(
            "{e}: {}",
            std::error::Error::source(&e)
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        assert!(
            chain.contains("none of the 28 pairs could be measured")
                && chain.contains("the partner thread did not answer"),
            "{chain}"
        );
    }
}

#[test]
fn a_noisy_pair_is_never_a_reference_pair() {
    // Rows 0-1 at 10 ns (noisy), the rest at 40 ns: the 10 ns class would give a reference.
    let m = LatencyMatrix::from_fn(4, |a, b| {
        (a != b).then_some(if a.min(b) == 0 && a.max(b) == 1 {
            10.0
        } else {
            40.0
        })
    });
    let mut probe = injected(MatrixProbe::new(&m), &[(0, 1)]);
    let c = topoprobe_infer::collect_full(&mut probe, &mut |_, _| {}).expect("collected");
    let refs = |monitor: &crate::stability::Monitor| -> Vec<(usize, usize)> {
        monitor.references().iter().map(|r| r.rows).collect()
    };
    let cpus = [0, 1, 2, 3];
    assert!(refs(&crate::stability::Monitor::new(&c.measured, &cpus)).contains(&(0, 1)));
    let kept = refs(&crate::stability::Monitor::for_table(&c, &cpus));
    assert!(!kept.is_empty() && !kept.contains(&(0, 1)), "{kept:?}");
}

#[test]
fn a_cpu_left_without_any_latency_keeps_the_os_structure_flagged() {
    // Two clusters by their latencies, one package of eight cores by the OS; the probe never
    // gets an answer from CPU 2 (a vCPU the host starved until the budget ran out).
    let m = two_clusters();
    for full in [true, false] {
        let mut probe = injected(MatrixProbe::new(&m), &[]);
        probe.given_up = Box::new(|a, b| a == 2 || b == 2);
        let topo = measure_probe(&mut probe, full).expect("the run succeeds");
        // The OS's structure: eight cores of one package, no groups the latencies made.
        assert_eq!(
            (topo.num_contexts(), topo.num_cores(), topo.groups().len()),
            (8, 8, 0),
            "full {full}"
        );
        let w = warning(&topo, WarningKind::StructureFromOs).expect("the fallback is said");
        assert!(
            w.starts_with("CPU 2 has no measured latency to any other CPU"),
            "full {full}: {w}"
        );
        assert!(
            warning(&topo, WarningKind::PairsGivenUp).is_some(),
            "full {full}"
        );
        // What was measured is kept, what was not stays missing.
        let raw = &topo.latency_tables().raw;
        assert_eq!(raw.between(0, 1), Some(40.0), "full {full}");
        assert!((0..8).all(|b| raw.between(2, b).is_none()), "full {full}");
        assert!(topo.provenance().parameters["structure"].contains("CPUs 2 have no measured"));
        // It is a description like any other: saved and read back whole.
        let json = topoprobe_model::format::json::to_json_string(&topo);
        let back = topoprobe_model::format::json::from_json_str(&json, std::path::Path::new("t"))
            .expect("read back");
        assert_eq!(back.num_cores(), 8);
        assert!((0..8).all(|b| back.latency_tables().raw.between(2, b).is_none()));
    }
}
