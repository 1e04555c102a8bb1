//! `launch::run`: the program runs with the placement's environment and its exit status
//! comes back in the result; requests that can never run are usage errors, found before
//! anything starts. (Pinning through the preload library is tested end to end by
//! `cli/tests/place.rs`, which builds the library.)

use std::ffi::OsString;

use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, Topology, TopologyBuilder};
use topoprobe_place::launch::{self, Launch, Memory};
use topoprobe_place::{PlaceError, Policy, Request};

/// One socket of two cores whose CPUs have the operating-system numbers `ids`.
fn two_cores(ids: [u32; 2]) -> Topology {
    let mut b = TopologyBuilder::new(ids.to_vec(), LatencyUnit::Ns);
    let c0 = b.core(vec![ContextId(0)]);
    let c1 = b.core(vec![ContextId(1)]);
    b.socket(vec![Member::Core(c0), Member::Core(c1)]);
    let lat = LatencyMatrix::from_fn(2, |_, _| Some(40.0));
    b.latencies(lat.clone(), lat);
    b.build().expect("topology")
}

fn sh(script: &str) -> Vec<OsString> {
    ["sh", "-c", script].map(OsString::from).to_vec()
}

#[test]
fn an_unpinned_run_sets_the_openmp_environment_and_keeps_the_status() {
    let topo = two_cores([0, 1]);
    let how = Launch {
        command: sh(r#"test "$OMP_NUM_THREADS" = 2 && test "$OMP_PROC_BIND" = false && exit 5"#),
        memory: Memory::Default,
        ..Launch::default()
    };
    let r = launch::run(&topo, &Request::new(Policy::None), &how, &mut ()).expect("runs");
    assert_eq!(r.exit_status, 5, "the variables were not set: {r:?}");
    assert_eq!(r.preload, None);
    assert_eq!(r.memory.policy, "none");
    assert!(!r.memory.set);
    assert_eq!(r.command, ["sh", "-c", &r.command[2]]);
    let names: Vec<&str> = r.environment.iter().map(|v| v.name.as_str()).collect();
    assert!(names.contains(&"OMP_NUM_THREADS"), "{names:?}");
    assert!(!names.contains(&"LD_PRELOAD"), "{names:?}");
    assert!(r.wall_s >= 0.0);
}

#[test]
fn requests_that_cannot_run_are_usage_errors_before_anything_starts() {
    let topo = two_cores([0, 1]);
    let e = launch::run(
        &topo,
        &Request::new(Policy::None),
        &Launch::default(),
        &mut (),
    )
    .unwrap_err();
    assert!(matches!(e, PlaceError::NoCommand) && e.is_usage(), "{e}");
    // CPUs no process here may run on: a description of another machine.
    let far = two_cores([4000, 4001]);
    let how = Launch {
        command: sh("exit 0"),
        preload: Some("/no/such/library.so".into()),
        ..Launch::default()
    };
    let e = launch::run(&far, &Request::new(Policy::ConHwc), &how, &mut ()).unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert!(e.to_string().contains("CPUs 4000-4001"), "{e}");
    // A program that does not exist is a runtime failure naming it.
    let how = Launch {
        command: vec!["/no/such/program".into()],
        memory: Memory::Default,
        ..Launch::default()
    };
    let e = launch::run(&topo, &Request::new(Policy::None), &how, &mut ()).unwrap_err();
    assert!(
        !e.is_usage() && e.to_string().contains("/no/such/program"),
        "{e}"
    );
}
