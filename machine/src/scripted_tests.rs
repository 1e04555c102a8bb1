//! The measurement run on scripted probes: a guest of two vCPUs that the "host" moves
//! between latency levels and SMT siblings while the run goes on.

use std::cell::Cell;
use std::rc::Rc;

use topoprobe_measure::smt::SmtTest;
use topoprobe_model::{
    OsCpu, OsView, PairLatency, PairSample, ProbeError, StructureLevel, Topology,
};

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
        }))
    }
}

/// The guest's OS view: one package, two cores without SMT.
fn os() -> OsView {
    let cpu = |id: u32| OsCpu {
        id,
        package: 0,
        die: None,
        core: i64::from(id),
        cluster: None,
        thread_siblings: vec![id],
        core_siblings: vec![0, 1],
        node: Some(0),
        capacity: None,
        base_freq_khz: None,
        max_freq_khz: None,
        kind: None,
    };
    OsView {
        cpus: vec![cpu(0), cpu(1)],
        ..OsView::default()
    }
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
    let mut smt = |a: u32, b: u32| {
        let slowdown = script.smt[smt_runs.min(1)];
        smt_runs += 1;
        Ok(SmtTest { a, b, slowdown })
    };
    let moved = Rc::clone(&latency);
    let mut plugins = |_: &mut Topology, p: &mut dyn FnMut(Progress<'_>)| {
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
        .filter(|w| w.kind == "unstable_topology")
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
    let v = topo.validation();
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
