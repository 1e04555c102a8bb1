//! `topoprobe bench`: every experiment runs on a 2-CPU description and prints the JSON
//! shape its issue specifies; bad values are usage errors.

use assert_cmd::Command;

use crate::common::two_cpu_matrix;

fn json(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = two_cpu_matrix(dir.path());
    let out = Command::cargo_bin("topoprobe")
        .expect("binary")
        .args(args)
        .arg("--topology")
        .arg(&m)
        .arg("--json")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn locks_reports_every_kind_backoff_and_baseline() {
    let v = json(&["bench", "locks", "--threads", "2", "--duration", "0.02"]);
    let r = v["results"].as_array().expect("results");
    assert_eq!(r.len(), 6 * 3 + 3);
    for x in r {
        assert!(x["acquisitions_per_s"].as_f64().expect("rate") > 0.0, "{x}");
        let f = x["fairness"].as_f64().expect("fairness");
        assert!((0.0..=1.0).contains(&f), "{x}");
        assert_eq!(x["threads"], 2);
        assert!(["none", "fixed", "educated", "native"].contains(&x["backoff"].as_str().unwrap()));
    }
    for lock in [
        "tas",
        "ttas",
        "ticket",
        "mcs",
        "clh",
        "cohort",
        "std",
        "parking_lot",
        "spin",
    ] {
        assert!(r.iter().any(|x| x["lock"] == lock), "{lock}");
    }
}

#[test]
fn false_sharing_reports_every_stride_and_a_padding() {
    let v = json(&[
        "bench",
        "false-sharing",
        "--threads",
        "2",
        "--duration",
        "0.02",
        "--runs",
        "1",
    ]);
    let r = v["results"].as_array().expect("results");
    let strides: Vec<u64> = r
        .iter()
        .map(|x| x["stride_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(strides, [8, 16, 32, 64, 128, 256]);
    assert!(r.iter().all(|x| x["ops_per_s"].as_f64().unwrap() > 0.0));
    assert!(strides.contains(&v["padding_bytes"].as_u64().expect("padding")));
}

#[test]
fn line_ops_reports_states_and_scopes() {
    let v = json(&["bench", "line-ops", "--rounds", "3"]);
    let r = v["results"].as_array().expect("results");
    let has = |op: &str, state: &str, scope: &str| {
        r.iter()
            .any(|x| x["op"] == op && x["state"] == state && x["scope"] == scope)
    };
    assert!(has("cas", "modified", "socket"), "{v}");
    assert!(has("load", "exclusive", "socket"), "{v}");
    assert!(has("swap", "invalid", "memory"), "{v}");
    assert!(r.iter().all(|x| x["latency_ns"].as_f64().unwrap() > 0.0));
    let un = v["unavailable"].as_array().expect("unavailable");
    assert!(un.iter().any(|x| x["scope"] == "other_socket"), "{v}");
}

#[test]
fn bad_values_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = two_cpu_matrix(dir.path());
    for args in [
        vec!["bench", "locks", "--locks", "0"],
        vec!["bench", "locks", "--duration", "-1"],
        vec!["bench", "locks", "--kinds", "bogus"],
    ] {
        Command::cargo_bin("topoprobe")
            .expect("binary")
            .args(&args)
            .arg("--topology")
            .arg(&m)
            .assert()
            .code(2);
    }
    Command::cargo_bin("topoprobe")
        .expect("binary")
        .args(["bench", "false-sharing", "--strides", "12", "--topology"])
        .arg(&m)
        .assert()
        .failure();
}

#[test]
fn line_ops_binds_its_lines_to_the_home_node_asked_for() {
    let v = json(&["bench", "line-ops", "--rounds", "2", "--home", "0"]);
    let r = v["results"].as_array().expect("results");
    assert!(!r.is_empty(), "{v}");
    assert!(r.iter().all(|x| x["home_node"] == 0), "{v}");
    let v = json(&["bench", "line-ops", "--rounds", "2"]);
    let r = v["results"].as_array().expect("results");
    assert!(
        r.iter().all(|x| x.get("home_node").is_none()),
        "unbound by default: {v}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let m = two_cpu_matrix(dir.path());
    Command::cargo_bin("topoprobe")
        .expect("binary")
        .args(["bench", "line-ops", "--home", "nowhere", "--topology"])
        .arg(&m)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "give owner, reader or a node number",
        ));
}
