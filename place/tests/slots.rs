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
