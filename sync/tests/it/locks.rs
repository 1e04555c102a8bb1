//! Every lock with every backoff keeps its critical sections exclusive under contention,
//! and the `lock_api` mutexes behave as mutexes (try_lock, is_locked, guards).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use topoprobe_infer::infer;
use topoprobe_infer::sim::{platforms, MachineSpec};
use topoprobe_model::{LatencyUnit, Topology};
use topoprobe_sync::locks::{
    cohort_mutex, mutex, ClhMutex, CohortMutex, McsMutex, RawCohort, TasMutex, TicketMutex,
    TtasMutex, WithWait,
};
use topoprobe_sync::{Backoff, SyncError, Wait};

fn sim(spec: &MachineSpec) -> Topology {
    infer(&spec.true_matrix(), &spec.infer_options()).expect("inference")
}

/// Runs a closure on the protected value under the lock.
type With<M> = fn(&M, &dyn Fn(&mut u64));

/// The critical section: a plain read-modify-write of the protected value, with a check
/// that nobody else is inside.
fn hammer<M: Send + Sync + 'static>(
    m: Arc<M>,
    threads: usize,
    rounds: usize,
    with: With<M>,
) -> u64 {
    hammer_on(m, threads, rounds, with, &[])
}

/// [`hammer`], thread `i` pinned to `cpus[i % cpus.len()]` (none pinned when empty).
fn hammer_on<M: Send + Sync + 'static>(
    m: Arc<M>,
    threads: usize,
    rounds: usize,
    with: With<M>,
    cpus: &[u32],
) -> u64 {
    let inside = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let (m, inside) = (Arc::clone(&m), Arc::clone(&inside));
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            std::thread::spawn(move || {
                if let Some(c) = cpu {
                    topoprobe_sys::affinity::pin_current_thread(c).expect("pin");
                }
                for _ in 0..rounds {
                    with(&m, &|v: &mut u64| {
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "two holders");
                        let x = *v;
                        std::hint::black_box(x);
                        *v = x + 1;
                        inside.fetch_sub(1, Ordering::Relaxed);
                    });
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("worker");
    }
    let total = std::cell::Cell::new(0);
    with(&m, &|v: &mut u64| total.set(*v));
    total.get()
}

fn check<R>(make: impl Fn(&Backoff<'_>) -> Result<lock_api::Mutex<R, u64>, SyncError>)
where
    R: lock_api::RawMutex + Send + Sync + 'static,
{
    let topo = sim(&platforms::ivy());
    for b in [Backoff::None, Backoff::Fixed, Backoff::Educated(&topo)] {
        let m = Arc::new(make(&b).expect("lock"));
        let total = hammer(m, 3, 3000, |m, f| f(&mut m.lock()));
        assert_eq!(total, 9000, "{b:?}");
    }
}

/// 64 threads on however few CPUs this machine has: the queue locks (MCS, CLH, ticket)
/// hand the lock on in order, so a waiter that only spins while the next owner is
/// descheduled stalls everyone for time slices; waiters yield after a while, and the run
/// completes (it once did not within two minutes on 2 CPUs).
#[test]
fn queue_locks_survive_oversubscription() {
    fn run<R>(make: impl Fn(&Backoff<'_>) -> Result<lock_api::Mutex<R, u64>, SyncError>)
    where
        R: lock_api::RawMutex + Send + Sync + 'static,
    {
        let cpus = topoprobe_sys::affinity::allowed_cpus()
            .expect("allowed CPUs")
            .to_vec();
        let topo = sim(&platforms::ivy());
        for b in [Backoff::None, Backoff::Fixed, Backoff::Educated(&topo)] {
            let m = Arc::new(make(&b).expect("lock"));
            let total = hammer_on(m, 64, 200, |m, f| f(&mut m.lock()), &cpus);
            assert_eq!(total, 64 * 200, "{b:?}");
        }
    }
    run(|b| mutex::<topoprobe_sync::locks::RawTicket, u64>(0, b));
    run(|b| mutex::<topoprobe_sync::locks::RawMcs, u64>(0, b));
    run(|b| mutex::<topoprobe_sync::locks::RawClh, u64>(0, b));
}

#[test]
fn tas_excludes() {
    check(|b| mutex::<topoprobe_sync::locks::RawTas, u64>(0, b));
}

#[test]
fn ttas_excludes() {
    check(|b| mutex::<topoprobe_sync::locks::RawTtas, u64>(0, b));
}

#[test]
fn ticket_excludes() {
    check(|b| mutex::<topoprobe_sync::locks::RawTicket, u64>(0, b));
}

#[test]
fn mcs_excludes() {
    check(|b| mutex::<topoprobe_sync::locks::RawMcs, u64>(0, b));
}

#[test]
fn clh_excludes() {
    check(|b| mutex::<topoprobe_sync::locks::RawClh, u64>(0, b));
}

#[test]
fn cohort_excludes() {
    let topo = sim(&platforms::ivy());
    check(|b| cohort_mutex(0, &topo, b));
}

#[test]
fn cohort_excludes_across_cohorts() {
    // Threads name their cohort explicitly, so that the hand-over between cohorts is
    // exercised on any machine.
    let lock = Arc::new(RawCohort::with_cohorts(
        &[vec![0], vec![1], vec![2]],
        Wait::NONE,
    ));
    let value = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let inside = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..4)
        .map(|t| {
            let (lock, value, inside) = (lock.clone(), value.clone(), inside.clone());
            std::thread::spawn(move || {
                for _ in 0..3000 {
                    lock.acquire_in(t % 3);
                    assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0);
                    let v = value.load(Ordering::Relaxed);
                    value.store(v + 1, Ordering::Relaxed);
                    inside.fetch_sub(1, Ordering::Relaxed);
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.release() };
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("worker");
    }
    assert_eq!(value.load(Ordering::Relaxed), 12_000);
    assert_eq!(lock.cohorts(), 3);
    assert!(!lock.locked());
}

fn mutex_semantics<R: lock_api::RawMutex>(m: lock_api::Mutex<R, Vec<u8>>) {
    assert!(!m.is_locked());
    {
        let mut g = m.lock();
        g.push(1);
        assert!(m.is_locked());
        assert!(m.try_lock().is_none(), "try_lock succeeded on a held lock");
    }
    assert!(!m.is_locked());
    m.try_lock().expect("free lock").push(2);
    assert_eq!(m.into_inner(), vec![1, 2]);
}

#[test]
fn every_lock_is_a_mutex() {
    let topo = sim(&platforms::haswell());
    for b in [Backoff::None, Backoff::Fixed, Backoff::Educated(&topo)] {
        mutex_semantics::<topoprobe_sync::locks::RawTas>(mutex(Vec::new(), &b).unwrap());
        mutex_semantics::<topoprobe_sync::locks::RawTtas>(mutex(Vec::new(), &b).unwrap());
        mutex_semantics::<topoprobe_sync::locks::RawTicket>(mutex(Vec::new(), &b).unwrap());
        mutex_semantics::<topoprobe_sync::locks::RawMcs>(mutex(Vec::new(), &b).unwrap());
        mutex_semantics::<topoprobe_sync::locks::RawClh>(mutex(Vec::new(), &b).unwrap());
        mutex_semantics(cohort_mutex(Vec::new(), &topo, &b).unwrap());
    }
    // lock_api's INIT: no backoff, one cohort.
    mutex_semantics(TasMutex::new(Vec::new()));
    mutex_semantics(TtasMutex::new(Vec::new()));
    mutex_semantics(TicketMutex::new(Vec::new()));
    mutex_semantics(McsMutex::new(Vec::new()));
    mutex_semantics(ClhMutex::new(Vec::new()));
    mutex_semantics(CohortMutex::new(Vec::new()));
}

#[test]
fn a_thread_can_hold_several_queue_locks() {
    let a: McsMutex<u8> = McsMutex::new(1);
    let b: McsMutex<u8> = McsMutex::new(2);
    let c: ClhMutex<u8> = ClhMutex::new(3);
    let d: ClhMutex<u8> = ClhMutex::new(4);
    let (ga, gb, gc, gd) = (a.lock(), b.lock(), c.lock(), d.lock());
    assert_eq!(*ga + *gb + *gc + *gd, 10);
    drop(ga);
    drop(gc);
    assert!(a.try_lock().is_some() && c.try_lock().is_some());
    drop((gb, gd));
}

#[test]
fn educated_waits_follow_the_latencies() {
    let topo = sim(&platforms::ivy());
    let w = Wait::new(&Backoff::Educated(&topo)).unwrap();
    let e = w.educated().unwrap();
    // Ivy: CPUs 0 and 1 share a socket, 0 and 10 do not (libmctop numbering of the sim).
    let same = e.latency_ns(0, 1);
    let cross = e.latency_ns(0, 10);
    assert!(cross > same, "{same} {cross}");
    assert_eq!(e.ticket_ns(3, 0, 10), 3.0 * cross);
    assert!(e.exponential_ns(0) >= e.base_ns() && e.exponential_ns(40) == e.cap_ns());
    assert!(e.quantum_ns() >= cross);
    // Unknown CPUs wait one quantum.
    assert_eq!(e.latency_ns(9999, 0), e.quantum_ns());
}

#[test]
fn cycles_need_a_frequency() {
    let spec = platforms::ivy().with_units(LatencyUnit::Cycles, None);
    let mut topo = sim(&spec);
    topo.provenance_mut().parameters.remove("ghz");
    let e = Wait::new(&Backoff::Educated(&topo)).unwrap_err();
    assert!(matches!(e, SyncError::NoFrequency), "{e}");
    topo.provenance_mut()
        .parameters
        .insert("ghz".into(), "2.5".into());
    let w = Wait::new(&Backoff::Educated(&topo)).unwrap();
    let ns = w.educated().unwrap().quantum_ns();
    let cycles = topo
        .max_latency(&topo.contexts().iter().map(|c| c.id).collect::<Vec<_>>())
        .unwrap();
    assert!((ns - cycles / 2.5).abs() < 1e-6, "{ns} vs {cycles}");
    topo.provenance_mut()
        .parameters
        .insert("ghz".into(), "fast".into());
    assert!(matches!(
        Wait::new(&Backoff::Educated(&topo)),
        Err(SyncError::BadFrequency(_))
    ));
}

#[test]
fn cohorts_follow_sockets_then_groups() {
    let ivy = sim(&platforms::ivy());
    let c = topoprobe_sync::locks::cohorts_of(&ivy);
    assert_eq!(c.len(), 2);
    assert_eq!(c.iter().map(Vec::len).sum::<usize>(), 40);
    // One socket of CCXs: one cohort per CCX.
    let ccx = sim(&MachineSpec::new(
        "1s-4ccx",
        vec![topoprobe_infer::sim::Unit::group(
            120.0,
            (0..4)
                .map(|_| {
                    topoprobe_infer::sim::Unit::group(
                        25.0,
                        topoprobe_infer::sim::Unit::cores(4, 1, 0.0),
                    )
                })
                .collect(),
        )],
        topoprobe_infer::sim::CrossSocket::Uniform(200.0),
    ));
    assert_eq!(topoprobe_sync::locks::cohorts_of(&ccx).len(), 4);
    let flat = sim(&platforms::flat_mesh(4));
    assert_eq!(topoprobe_sync::locks::cohorts_of(&flat).len(), 1);
    let _ = <topoprobe_sync::locks::RawTas as WithWait>::KIND;
}
