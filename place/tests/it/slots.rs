//! The slots of a placement: a slot whose CPU the kernel refuses is skipped after one
//! error, and a thread that exits without unpinning gives its slot back.

use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, Topology, TopologyBuilder};
use topoprobe_place::{Placement, Policy, Request};

/// One socket of single-context cores with these OS CPU numbers.
fn machine(os_ids: &[u32]) -> Topology {
    let n = os_ids.len();
    let mut b = TopologyBuilder::new(os_ids.to_vec(), LatencyUnit::Ns);
    let cores: Vec<_> = (0..n).map(|i| b.core(vec![ContextId(i)])).collect();
    b.socket(cores.into_iter().map(Member::Core).collect());
    let lat = LatencyMatrix::from_fn(n, |_, _| Some(40.0));
    b.latencies(lat.clone(), lat);
    b.build().unwrap()
}

fn first_cpu() -> u32 {
    topoprobe_sys::affinity::allowed_cpus()
        .unwrap()
        .iter()
        .next()
        .unwrap()
}

/// Row 9: a slot whose CPU is refused is reported once, then skipped.
#[test]
fn an_unpinnable_slot_is_reported_once_then_skipped() {
    let cpu = first_cpu();
    // CPU 1048575 exists on no machine this runs on.
    let topo = machine(&[cpu, 1_048_575]);
    let p = std::sync::Arc::new(Placement::new(&topo, &Request::new(Policy::Sequential)).unwrap());
    let bad = p
        .threads()
        .iter()
        .position(|t| t.context == 1_048_575)
        .unwrap();
    // A holds the good slot while B asks three times: once the error, then "no slot".
    let (hold, release) = std::sync::mpsc::channel::<()>();
    let (pinned, is_pinned) = std::sync::mpsc::channel::<()>();
    let q = std::sync::Arc::clone(&p);
    let a = std::thread::spawn(move || {
        assert_eq!(q.pin().unwrap().map(|i| i.context), Some(cpu));
        pinned.send(()).unwrap();
        release.recv().unwrap();
    });
    is_pinned.recv().unwrap();
    let q = std::sync::Arc::clone(&p);
    let outcomes = std::thread::spawn(move || {
        (0..3)
            .map(|_| match q.pin() {
                Err(_) => "error",
                Ok(Some(_)) => "pinned",
                Ok(None) => "none",
            })
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    hold.send(()).unwrap();
    a.join().unwrap();
    assert_eq!(outcomes, ["error", "none", "none"]);
    assert_eq!(p.unusable().len(), 1);
    assert_eq!(p.unusable()[0].thread, bad);
}

/// Row 10: a thread that exits without unpinning gives its slot back.
#[test]
fn slots_are_released_at_thread_exit() {
    let cpu = first_cpu();
    let topo = machine(&[cpu]);
    let p = std::sync::Arc::new(Placement::new(&topo, &Request::new(Policy::Sequential)).unwrap());
    for _ in 0..3 {
        let q = std::sync::Arc::clone(&p);
        std::thread::spawn(move || {
            let got = q.pin().unwrap();
            assert_eq!(got.map(|i| i.context), Some(cpu));
        })
        .join()
        .unwrap();
        assert_eq!(p.free(), 1, "the exited thread still holds its slot");
    }
}

/// Thread `i` of a team gets slot `i` whatever order the threads arrive in (OpenMP's
/// thread numbers): slot 1 is taken first here, then slot 0.
#[test]
fn a_thread_takes_the_slot_it_names() {
    let cpu = first_cpu();
    let topo = machine(&[cpu, cpu + 1_048_574, cpu + 1_048_575]);
    let p = std::sync::Arc::new(Placement::new(&topo, &Request::new(Policy::Sequential)).unwrap());
    let contexts: Vec<u32> = p.threads().iter().map(|t| t.context).collect();
    let first = contexts.iter().position(|&c| c == cpu).unwrap();
    // Slots that do not exist, or whose CPU no machine has.
    assert!(p.pin_slot(3).unwrap().is_none());
    let q = std::sync::Arc::clone(&p);
    let (taken, is_taken) = std::sync::mpsc::channel::<()>();
    let (done, finish) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        // A slot whose CPU the kernel refuses is an error, then unusable.
        let other = (first + 1) % 3;
        assert!(q.pin_slot(other).is_err());
        assert!(q.pin_slot(other).unwrap().is_none());
        let info = q.pin_slot(first).unwrap().expect("its slot");
        assert_eq!((info.thread, info.context), (first, cpu));
        taken.send(()).unwrap();
        finish.recv().unwrap();
    });
    is_taken.recv().unwrap();
    // Held by another thread: not given.
    assert!(p.pin_slot(first).unwrap().is_none());
    done.send(()).unwrap();
    holder.join().unwrap();
    // Given back when its thread exits; then this thread takes it, and keeps it.
    let info = p.pin_slot(first).unwrap().expect("free again");
    assert_eq!(info.thread, first);
    assert_eq!(p.current().map(|i| i.thread), Some(first));
    assert_eq!(p.pin_slot(first).unwrap().map(|i| i.thread), Some(first));
    assert!(p.unpin().unwrap());
}

/// A thread that names another slot of the same placement moves there: the one it held
/// is free again.
#[test]
fn naming_another_slot_moves_the_thread() {
    let cpus = topoprobe_sys::affinity::allowed_cpus().unwrap().to_vec();
    if cpus.len() < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let topo = machine(&cpus[..2]);
    let p = Placement::new(&topo, &Request::new(Policy::Sequential)).unwrap();
    assert_eq!(p.pin_slot(1).unwrap().map(|i| i.context), Some(cpus[1]));
    assert_eq!(p.free(), 1);
    assert_eq!(p.pin_slot(0).unwrap().map(|i| i.context), Some(cpus[0]));
    assert_eq!(p.free(), 1);
    assert_eq!(p.current().map(|i| i.thread), Some(0));
    assert!(p.unpin().unwrap());
    assert_eq!(p.free(), 2);
}
