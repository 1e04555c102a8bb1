//! The measurement's arithmetic and states, driven by a fake energy source and load.

use std::cell::RefCell;
use std::rc::Rc;

use topoprobe_model::{LatencyUnit, Member, TopologyBuilder};

use super::*;

/// A machine of `sockets` × `cores` × `smt` contexts; context `i` is OS CPU `i`, the
/// contexts of a core are consecutive.
pub(super) fn machine(sockets: usize, cores: usize, smt: usize) -> Topology {
    let n = sockets * cores * smt;
    let os: Vec<u32> = (0..n).map(|i| u32::try_from(i).expect("small")).collect();
    let mut b = TopologyBuilder::new(os, LatencyUnit::Ns);
    for s in 0..sockets {
        let members = (0..cores)
            .map(|c| {
                let base = (s * cores + c) * smt;
                Member::Core(b.core((base..base + smt).map(ContextId).collect()))
            })
            .collect();
        b.socket(members);
    }
    b.build().expect("topology")
}

/// What the fake machine draws, per socket.
#[derive(Debug, Clone, Copy)]
struct Model {
    idle_pkg: f64,
    idle_cores: f64,
    idle_dram: f64,
    /// Added by the first busy core (package, cores, DRAM).
    first: (f64, f64, f64),
    /// Added by every further busy core.
    core: (f64, f64, f64),
    /// Added by every second context of a busy core.
    smt: (f64, f64, f64),
}

const MODEL: Model = Model {
    idle_pkg: 10.0,
    idle_cores: 1.0,
    idle_dram: 5.0,
    first: (8.0, 7.0, 2.0),
    core: (3.0, 2.5, 1.0),
    smt: (0.5, 0.25, 0.125),
};

/// The shared state of a fake source and load.
#[derive(Debug)]
struct Fake {
    topo: Topology,
    models: Vec<Model>,
    busy: Vec<u32>,
    /// Every set the load was started with.
    started: Vec<Vec<u32>>,
    stops: usize,
    seconds: f64,
    energy: Vec<SocketEnergy>,
    with_cores: bool,
    with_dram: bool,
    /// Makes the n-th read (0-based) run the package counter of socket 0 backwards.
    backwards_at: Option<usize>,
    reads: usize,
    /// Makes the load refuse a CPU.
    refuse: Option<u32>,
}

impl Fake {
    fn new(topo: Topology, models: Vec<Model>) -> Rc<RefCell<Self>> {
        let n = topo.num_sockets();
        Rc::new(RefCell::new(Self {
            topo,
            models,
            busy: Vec::new(),
            started: Vec::new(),
            stops: 0,
            seconds: 0.0,
            energy: vec![
                SocketEnergy {
                    package_j: 0.0,
                    cores_j: Some(0.0),
                    dram_j: Some(0.0),
                };
                n
            ],
            with_cores: true,
            with_dram: true,
            backwards_at: None,
            reads: 0,
            refuse: None,
        }))
    }

    /// Power (package, cores, DRAM) of socket `s` under the current load.
    fn power(&self, s: usize) -> (f64, f64, f64) {
        let m = self.models[s];
        let mut p = (m.idle_pkg, m.idle_cores, m.idle_dram);
        let add = |p: &mut (f64, f64, f64), d: (f64, f64, f64)| {
            p.0 += d.0;
            p.1 += d.1;
            p.2 += d.2;
        };
        let mut cores_busy = 0;
        for &core in self.topo.socket_cores(SocketId(s)) {
            let busy = self
                .topo
                .core_contexts(core)
                .iter()
                .filter(|c| self.busy.contains(&self.topo.contexts()[c.0].os_id))
                .count();
            if busy == 0 {
                continue;
            }
            add(&mut p, if cores_busy == 0 { m.first } else { m.core });
            cores_busy += 1;
            for _ in 1..busy {
                add(&mut p, m.smt);
            }
        }
        p
    }
}

/// The fake source: every read advances virtual time by 0.25 s at the current power.
struct FakeSource(Rc<RefCell<Fake>>);

impl EnergySource for FakeSource {
    fn describe(&self) -> String {
        "fake".to_string()
    }

    fn read(&mut self) -> Result<Sample, PowerError> {
        let mut f = self.0.borrow_mut();
        let dt = 0.25;
        f.seconds += dt;
        for s in 0..f.energy.len() {
            let (pkg, cores, dram) = f.power(s);
            let e = &mut f.energy[s];
            e.package_j += pkg * dt;
            e.cores_j = e.cores_j.map(|j| j + cores * dt);
            e.dram_j = e.dram_j.map(|j| j + dram * dt);
        }
        if f.backwards_at == Some(f.reads) {
            f.energy[0].package_j -= 1000.0;
        }
        f.reads += 1;
        let (with_cores, with_dram) = (f.with_cores, f.with_dram);
        Ok(Sample {
            seconds: f.seconds,
            sockets: f
                .energy
                .iter()
                .map(|e| SocketEnergy {
                    package_j: e.package_j,
                    cores_j: e.cores_j.filter(|_| with_cores),
                    dram_j: e.dram_j.filter(|_| with_dram),
                })
                .collect(),
        })
    }
}

/// The fake load: records what it is told.
struct FakeLoad(Rc<RefCell<Fake>>);

impl Workload for FakeLoad {
    fn start(&mut self, cpus: &[u32]) -> Result<(), PowerError> {
        let mut f = self.0.borrow_mut();
        if let Some(cpu) = f.refuse.filter(|c| cpus.contains(c)) {
            return Err(PowerError::Load {
                cpu,
                reason: "refused".to_string(),
            });
        }
        f.busy = cpus.to_vec();
        f.started.push(cpus.to_vec());
        Ok(())
    }

    fn stop(&mut self) {
        let mut f = self.0.borrow_mut();
        f.busy.clear();
        f.stops += 1;
    }
}

/// Options without waiting (virtual time).
fn quick() -> PowerOptions {
    PowerOptions {
        duration: Duration::ZERO,
        settle: Duration::ZERO,
        ..PowerOptions::default()
    }
}

fn run(fake: &Rc<RefCell<Fake>>) -> Result<PowerReport, PowerError> {
    let topo = fake.borrow().topo.clone();
    let mut source = FakeSource(Rc::clone(fake));
    let mut load = FakeLoad(Rc::clone(fake));
    measure_with(&topo, &quick(), &mut source, &mut load)
}

fn entry(r: &PowerReport, scope: PowerScope, state: PowerState) -> PowerEntry {
    *r.section
        .entries
        .iter()
        .find(|e| e.scope == scope && e.state == state)
        .unwrap_or_else(|| panic!("no entry {scope:?} {state:?}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Checks an entry's five figures: cores, rest, package, DRAM, total.
fn check(e: PowerEntry, cores: f64, package: f64, dram: f64) {
    let want = [cores, package - cores, package, dram, package + dram];
    let got = [e.cores_w, e.rest_w, e.package_w, e.dram_w, e.total_w];
    for (w, g) in want.iter().zip(&got) {
        assert!(
            close(*w, *g),
            "{:?} {:?}: want {want:?}, got {got:?}",
            e.scope,
            e.state
        );
    }
}

#[test]
fn states_are_absolute_or_increments_as_libmctop_defines_them() {
    let topo = machine(2, 3, 2);
    let second = Model {
        idle_pkg: 12.0,
        ..MODEL
    };
    let fake = Fake::new(topo, vec![MODEL, second]);
    let r = run(&fake).expect("measured");
    assert!(r.cores_measured && r.dram_measured);
    assert_eq!(r.source, "fake");
    for (s, idle_pkg) in [(0, 10.0), (1, 12.0)] {
        let scope = PowerScope::Socket(SocketId(s));
        check(entry(&r, scope, PowerState::Idle), 1.0, idle_pkg, 5.0);
        // Increments over idle, over the first core, over the first core.
        check(entry(&r, scope, PowerState::FirstCore), 7.0, 8.0, 2.0);
        check(entry(&r, scope, PowerState::SecondCore), 2.5, 3.0, 1.0);
        check(
            entry(&r, scope, PowerState::SecondContext),
            0.25,
            0.5,
            0.125,
        );
        // Absolute: idle + first + 2 further cores (+ 3 second contexts).
        check(
            entry(&r, scope, PowerState::AllCores),
            1.0 + 7.0 + 5.0,
            idle_pkg + 8.0 + 6.0,
            5.0 + 2.0 + 2.0,
        );
        check(
            entry(&r, scope, PowerState::AllContexts),
            1.0 + 7.0 + 5.0 + 0.75,
            idle_pkg + 8.0 + 6.0 + 1.5,
            5.0 + 2.0 + 2.0 + 0.375,
        );
    }
    // The machine total is the sum over the sockets, state by state.
    check(
        entry(&r, PowerScope::Total, PowerState::Idle),
        2.0,
        22.0,
        10.0,
    );
    check(
        entry(&r, PowerScope::Total, PowerState::SecondCore),
        5.0,
        6.0,
        2.0,
    );
    assert_eq!(r.section.entries.len(), 3 * 6);
    // Socket entries in libmctop's order, then the total.
    let order: Vec<(PowerScope, PowerState)> = r
        .section
        .entries
        .iter()
        .map(|e| (e.scope, e.state))
        .collect();
    let mut want = Vec::new();
    for scope in [
        PowerScope::Socket(SocketId(0)),
        PowerScope::Socket(SocketId(1)),
        PowerScope::Total,
    ] {
        want.extend(PowerState::ALL.map(|s| (scope, s)));
    }
    assert_eq!(order, want);
}

#[test]
fn the_load_of_each_state_is_the_right_set_of_contexts() {
    let fake = Fake::new(machine(2, 2, 2), vec![MODEL, MODEL]);
    run(&fake).expect("measured");
    let f = fake.borrow();
    // Socket 0: cores {0,1} {2,3}; socket 1: cores {4,5} {6,7}.
    let want: Vec<Vec<u32>> = vec![
        vec![],
        vec![0],
        vec![0, 2],
        vec![0, 1],
        vec![0, 2],
        vec![0, 1, 2, 3],
        vec![4],
        vec![4, 6],
        vec![4, 5],
        vec![4, 6],
        vec![4, 5, 6, 7],
    ];
    assert_eq!(f.started, want);
    assert_eq!(f.stops, want.len(), "every interval stops its load");
    assert!(f.busy.is_empty());
}

#[test]
fn without_smt_there_is_no_second_context_state() {
    let fake = Fake::new(machine(1, 4, 1), vec![MODEL]);
    let r = run(&fake).expect("measured");
    assert!(r
        .section
        .entries
        .iter()
        .all(|e| e.state != PowerState::SecondContext));
    let scope = PowerScope::Socket(SocketId(0));
    check(
        entry(&r, scope, PowerState::AllContexts),
        1.0 + 7.0 + 7.5,
        10.0 + 8.0 + 9.0,
        5.0 + 2.0 + 3.0,
    );
    // One socket: the total equals it.
    for s in [
        PowerState::Idle,
        PowerState::FirstCore,
        PowerState::AllCores,
    ] {
        assert_eq!(
            entry(&r, PowerScope::Total, s).package_w,
            entry(&r, scope, s).package_w
        );
    }
}

#[test]
fn a_single_core_socket_has_no_second_core_state() {
    let fake = Fake::new(machine(1, 1, 2), vec![MODEL]);
    let r = run(&fake).expect("measured");
    let states: Vec<PowerState> = r
        .section
        .entries
        .iter()
        .filter(|e| e.scope == PowerScope::Total)
        .map(|e| e.state)
        .collect();
    assert_eq!(
        states,
        vec![
            PowerState::Idle,
            PowerState::FirstCore,
            PowerState::SecondContext,
            PowerState::AllCores,
            PowerState::AllContexts
        ]
    );
}

#[test]
fn missing_domains_are_zero_and_reported() {
    let fake = Fake::new(machine(1, 2, 1), vec![MODEL]);
    {
        let mut f = fake.borrow_mut();
        f.with_cores = false;
        f.with_dram = false;
    }
    let r = run(&fake).expect("measured");
    assert!(!r.cores_measured && !r.dram_measured);
    let e = entry(&r, PowerScope::Socket(SocketId(0)), PowerState::Idle);
    check(e, 0.0, 10.0, 0.0);
    assert!(close(e.rest_w, 10.0), "rest is the whole package: {e:?}");
}

#[test]
fn counters_that_do_not_count_make_power_unavailable() {
    let dead = Model {
        idle_pkg: 0.0,
        ..MODEL
    };
    let fake = Fake::new(machine(2, 2, 1), vec![MODEL, dead]);
    let e = run(&fake).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("unavailable: "), "{msg}");
    assert!(
        msg.contains("package energy counter of socket 1 (fake) did not advance"),
        "{msg}"
    );
}

#[test]
fn a_counter_running_backwards_is_an_error() {
    let fake = Fake::new(machine(1, 2, 1), vec![MODEL]);
    fake.borrow_mut().backwards_at = Some(3);
    let e = run(&fake).unwrap_err();
    assert!(matches!(e, PowerError::Counter(_)), "{e:?}");
    assert!(e.to_string().contains("backwards"), "{e}");
    assert!(fake.borrow().busy.is_empty(), "the load was stopped");
}

#[test]
fn a_load_that_cannot_start_is_an_error_and_nothing_keeps_running() {
    let fake = Fake::new(machine(1, 2, 1), vec![MODEL]);
    fake.borrow_mut().refuse = Some(1);
    let e = run(&fake).unwrap_err();
    assert!(matches!(e, PowerError::Load { cpu: 1, .. }), "{e:?}");
    assert!(fake.borrow().busy.is_empty());
}

#[test]
fn samples_that_do_not_match_the_topology_are_rejected() {
    let a = Sample {
        seconds: 1.0,
        sockets: vec![SocketEnergy {
            package_j: 0.0,
            cores_j: None,
            dram_j: None,
        }],
    };
    let e = watts_between(&a, &a, 2, "src").unwrap_err();
    assert!(
        e.to_string().contains("read 1 socket, the topology has 2"),
        "{e}"
    );
    let e = watts_between(&a, &a, 1, "src").unwrap_err();
    assert!(e.to_string().contains("time did not advance"), "{e}");
    let mut b = a.clone();
    b.seconds = 3.0;
    b.sockets[0].package_j = 10.0;
    let w = watts_between(&a, &b, 1, "src").expect("watts");
    assert!(close(w[0].package, 5.0));
    assert_eq!(w[0].cores, None);
}

#[test]
fn the_unavailable_reason_is_exposed() {
    let e = PowerError::Unavailable("no RAPL".to_string());
    assert_eq!(e.unavailable_reason(), Some("no RAPL"));
    assert_eq!(e.to_string(), "unavailable: no RAPL");
    assert_eq!(PowerError::Counter("x".into()).unavailable_reason(), None);
}

#[test]
fn this_machine_without_rapl_says_unavailable_or_measures() {
    // Whatever this machine has: a missing source is `unavailable`, never a failure or
    // invented figures. Nothing is measured here (a check only).
    match check_available(&PowerOptions::default()) {
        Ok(kind) => assert!(kind == "powercap" || kind == "perf"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("unavailable: "), "{msg}");
        }
    }
}
