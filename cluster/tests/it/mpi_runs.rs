//! `topoprobe-cluster` under Open MPI's `mpirun` (the `mpi` feature): four ranks on this
//! machine, and two "hosts" in network namespaces joined through the kernel's TCP stack
//! (`scripts/cluster-netns.sh`), whose inter-node layer must be found and labelled.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_topoprobe-cluster");

/// One MPI job at a time: on 2 CPUs, two jobs' ranks polling at once would measure each
/// other's scheduling instead of the transport.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_job() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether a command can be started (`mpirun`, `ip`).
fn available(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// In CI a missing tool is a failure; elsewhere the test says why it is skipped.
fn skip(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "cannot run under CI: {why}"
    );
    eprintln!("skipped: {why}");
}

fn parse(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Every off-diagonal cell of an n×n matrix is a positive number, the diagonal null.
fn complete(m: &Value, n: usize) {
    let rows = m.as_array().expect("rows");
    assert_eq!(rows.len(), n);
    for (a, row) in rows.iter().enumerate() {
        let row = row.as_array().expect("a row");
        assert_eq!(row.len(), n);
        for (b, v) in row.iter().enumerate() {
            if a == b {
                assert!(v.is_null());
            } else {
                assert!(v.as_f64().is_some_and(|x| x > 0.0), "[{a}][{b}] = {v}");
            }
        }
    }
}

/// Pairs the report left out of the layers, of one relation or of any.
fn outliers(r: &Value, relation: Option<&str>) -> u64 {
    r["measurement"]["outliers"].as_array().map_or(0, |o| {
        o.iter()
            .filter(|x| relation.is_none_or(|want| x["relation"] == want))
            .count() as u64
    })
}

#[test]
fn four_ranks_on_this_machine() {
    let _job = one_job();
    if !available("mpirun") {
        return skip("mpirun not found (scripts/setup.sh --with-mpi)");
    }
    let out = Command::new("mpirun")
        .args(["--oversubscribe", "-np", "4", BIN, "--json"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun");
    let r = parse(&out);
    assert_eq!(r["ranks"], 4);
    complete(&r["latency_us"], 4);
    complete(&r["bandwidth_gbps"], 4);
    let layers = r["layers"].as_array().expect("layers");
    assert!(!layers.is_empty());
    let pairs: u64 = layers.iter().map(|l| l["pairs"].as_u64().unwrap()).sum();
    assert_eq!(
        pairs + outliers(&r, None),
        6,
        "every pair in one layer, or an outlier"
    );
    for l in layers {
        let by = l["explained_by"].as_str().expect("explained_by");
        assert!(!by.is_empty() && by != "inter-node", "{l}");
        assert!(l["latency_us"].as_f64().is_some_and(|x| x > 0.0));
    }
}

#[test]
fn hosts_in_network_namespaces_make_an_inter_node_layer() {
    let _job = one_job();
    let root = std::env::var("USER").is_ok_and(|u| u == "root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if !root || !available("mpirun") || !Path::new("/usr/sbin/ip").exists() && !available("ip") {
        return skip("needs root, ip and mpirun for network namespaces");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/cluster-netns.sh");
    let out = Command::new(script)
        .args(["2", "2", "--json"])
        .env("TOPOPROBE_CLUSTER", BIN)
        .output()
        .expect("scripts/cluster-netns.sh");
    let r = parse(&out);
    assert_eq!(r["ranks"], 4);
    assert_eq!(r["hosts"].as_array().map(Vec::len), Some(2), "{r}");
    complete(&r["latency_us"], 4);
    let layers = r["layers"].as_array().expect("layers");
    let inter = layers
        .iter()
        .find(|l| l["explained_by"] == "inter-node")
        .unwrap_or_else(|| panic!("no inter-node layer: {layers:?}"));
    // A pair whose ranks waited for busy CPUs every time is an outlier of no layer.
    assert_eq!(
        inter["pairs"].as_u64().unwrap() + outliers(&r, Some("inter-node")),
        4,
        "the 4 pairs across the two hosts: {r}"
    );
    assert_eq!(inter["explained"], true);
    // The inter-node layer is the slowest.
    let slowest = layers
        .iter()
        .map(|l| l["latency_us"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(inter["latency_us"].as_f64(), Some(slowest));
}

#[test]
fn a_missing_output_directory_is_refused_before_measuring() {
    let _job = one_job();
    if !available("mpirun") {
        return skip("mpirun not found (scripts/setup.sh --with-mpi)");
    }
    let out = Command::new("mpirun")
        .args([
            "--oversubscribe",
            "-np",
            "2",
            BIN,
            "--heatmap",
            "/nonexistent-dir/x.svg",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-dir: no such directory"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("layers"));
}

#[test]
fn output_follows_the_rules_of_topoprobe() {
    let _job = one_job();
    if !available("mpirun") {
        return skip("mpirun not found (scripts/setup.sh --with-mpi)");
    }
    let mpirun = |extra: &[&str]| {
        Command::new("mpirun")
            .args(["--oversubscribe", "-np", "2", BIN])
            .args(extra)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun")
    };
    // An extension that names a format the report does not have: refused before measuring.
    let out = mpirun(&["-o", "/tmp/x.csv"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(".csv"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `-o -` is standard output; the JSON's figures are rounded.
    let out = mpirun(&["--json", "-o", "-"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(v["ranks"], 2);
    assert!(!std::path::Path::new("-").exists());
}
