//! Tests of `topoprobe power`: unavailable counters (this machine, an empty tree, counters
//! that do not count: said, and exit status 1), malformed trees, a missing description (the
//! OS's view is measured) and usage errors. Energy arithmetic and load states are tested in the library with a fake
//! energy source.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{arg, run_in as run};
use serde_json::Value;
use topoprobe_measure::power::{self, PowerOptions};

/// A libmctop file of one socket (4 cores × 2 contexts, CPUs 0-7).
fn one_socket() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lpdpc4.mct")
}

/// A powercap tree with package 0 (core and DRAM subzones) whose counters stand still.
fn still_tree(root: &Path) {
    for (id, name) in [
        ("intel-rapl:0", "package-0"),
        ("intel-rapl:0:0", "core"),
        ("intel-rapl:0:1", "dram"),
    ] {
        let dir = root.join(id);
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join("name"), format!("{name}\n")).expect("name");
        fs::write(dir.join("energy_uj"), "123456\n").expect("energy");
        fs::write(dir.join("max_energy_range_uj"), "262143328850\n").expect("range");
    }
}

#[test]
fn this_machine_says_unavailable_with_exit_1_or_measures_the_os_view() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(dir.path(), &["power"]);
    match power::check_available(&PowerOptions::default()) {
        Err(e) => {
            let reason = e
                .unavailable_reason()
                .expect("a missing source is unavailable");
            // Nothing it exists for was measured: a failure, said on standard output too.
            assert_eq!(code, 1, "{err}");
            assert_eq!(out, format!("power: unavailable: {reason}\n"));
            assert!(
                out.contains("/sys/class/powercap"),
                "names where it looked: {out}"
            );
            let (code, out, _) = run(dir.path(), &["power", "--json"]);
            assert_eq!(code, 1);
            let v: Value = serde_json::from_str(&out).expect("JSON");
            assert_eq!(v["unavailable"], Value::from(reason));
        }
        Ok(_) => {
            // Counters exist: without a description the OS's view is measured, and said.
            assert!(
                code == 1 || out.contains("from the operating system's view"),
                "{code}: {out}{err}"
            );
        }
    }
}

#[test]
fn an_empty_tree_is_unavailable_and_names_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("powercap");
    fs::create_dir_all(&empty).expect("mkdir");
    if power::perf::discover(Path::new("/sys/bus/event_source/devices")).is_ok() {
        eprintln!("skipped: this machine has the perf power events, used after powercap");
        return;
    }
    let (code, out, err) = run(dir.path(), &["power", "--powercap-root", arg(&empty)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("power: unavailable: no RAPL zones under "),
        "{out}"
    );
    assert!(out.contains(arg(&empty)), "{out}");
    assert!(out.contains("`power` PMU"), "perf was tried as well: {out}");
}

#[test]
fn a_malformed_tree_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("powercap");
    still_tree(&tree);
    fs::write(tree.join("intel-rapl:0:1/energy_uj"), "lots\n").expect("write");
    let (code, out, err) = run(dir.path(), &["power", "--powercap-root", arg(&tree)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with("topoprobe: error: measuring power: "),
        "{err}"
    );
    assert!(err.contains("intel-rapl:0:1/energy_uj"), "{err}");
    assert!(
        err.contains("expected a whole number, found \"lots\""),
        "{err}"
    );
}

#[test]
fn counters_that_stand_still_are_unavailable_not_zero_watts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("powercap");
    still_tree(&tree);
    let topo = one_socket();
    let args = [
        "power",
        "--powercap-root",
        arg(&tree),
        "--topology",
        arg(&topo),
        "--duration",
        "0.05",
    ];
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("power: unavailable: the package energy counter of socket 0"),
        "{out}"
    );
    assert!(out.contains("did not advance"), "{out}");
    let mut json = args.to_vec();
    json.push("--json");
    let (code, out, _) = run(dir.path(), &json);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let reason = v["unavailable"].as_str().expect("a reason");
    assert!(reason.contains("did not advance"), "{reason}");
}

/// Without a description the command measures on the OS's view: here it gets as far as
/// the counters, which stand still.
#[test]
fn without_a_description_the_os_view_is_measured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("powercap");
    still_tree(&tree);
    let (code, out, err) = run(
        dir.path(),
        &["power", "--powercap-root", arg(&tree), "--duration", "0.05"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("did not advance"), "{out}{err}");
}

#[test]
fn bad_durations_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    for d in ["0", "-1", "x", "nan"] {
        let flag = format!("--duration={d}");
        let (code, _, err) = run(dir.path(), &["power", &flag]);
        assert_eq!(code, 2, "--duration {d}: {err}");
        assert!(err.contains("seconds"), "{err}");
    }
}
