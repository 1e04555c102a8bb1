//! Without a saved description of this machine, the commands that use a topology work at
//! once from the operating system's view and say so (as lstopo and likwid-pin do).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{exe, preload};

const NOTE: &str = "from the operating system's view; `topoprobe infer` measures it";

/// Runs topoprobe with this machine's description looked for at `file`.
fn run_with(file: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(exe())
        .args(args)
        .env("TOPOPROBE_FILE", file)
        .env("TOPOPROBE_PRELOAD", preload())
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("running topoprobe");
    common::outcome(&out)
}

/// This machine's online CPUs, from the kernel.
fn online() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online");
    topoprobe_model::parse_cpu_list(text.trim()).expect("online list")
}

#[test]
fn place_run_report_and_heatmap_without_a_description() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = dir.path().join("none.json");

    let (code, out, err) = run_with(&none, &["place", "--policy", "rr_core"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(NOTE),
        "the note says where the topology came from: {err}"
    );
    assert!(
        err.contains("none.json"),
        "and which file is missing: {err}"
    );
    let placed: Vec<u32> = out
        .trim()
        .split(',')
        .map(|c| c.parse().expect("a CPU number"))
        .collect();
    let mut sorted = placed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, online(), "every online CPU is placed once");
    let (_, summary, _) = run_with(&none, &["place", "--policy", "rr_core", "--json"]);
    assert!(summary.contains("\"contexts\""), "{summary}");

    let (code, out, err) = run_with(
        &none,
        &[
            "run",
            "--policy",
            "con_hwc",
            "-n",
            "1",
            "--",
            "grep",
            "Cpus_allowed_list",
            "/proc/self/status",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(NOTE), "{err}");
    assert!(
        out.trim().ends_with(&online()[0].to_string()),
        "one thread on the first CPU of con_hwc: {out}"
    );

    let html = dir.path().join("r.html");
    let (code, _, err) = run_with(&none, &["report", "-o", html.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(NOTE), "{err}");
    let page = std::fs::read_to_string(&html).expect("report written");
    assert!(page.contains("<html"), "an HTML page");

    let svg = dir.path().join("h.svg");
    let (code, _, err) = run_with(&none, &["heatmap", "-o", svg.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(NOTE), "{err}");
    assert!(std::fs::read_to_string(&svg).expect("svg").contains("<svg"));

    let (code, out, err) = run_with(&none, &["show"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("not measured"), "{out}");
    assert!(
        out.contains("unavailable: no latency measurements"),
        "{out}"
    );
}

#[test]
fn a_stale_description_is_replaced_by_the_os_view_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = dir.path().join("m.csv");
    std::fs::write(&m, ",50,50\n50,,50\n50,50,\n").expect("matrix");
    let file = dir.path().join("machine.json");
    // A description of another machine (three CPUs, no fingerprint of this one) saved as
    // this machine's.
    let (code, _, err) = run_with(
        &file,
        &[
            "infer",
            "--from-matrix",
            m.to_str().expect("utf-8"),
            "--json",
            "-o",
            file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).expect("written");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["machine"]["online_cpus"] = serde_json::Value::String("0-2".into());
    v["machine"]["cpu_model"] = serde_json::Value::String("Another CPU".into());
    std::fs::write(&file, serde_json::to_string(&v).expect("json")).expect("write");
    let (code, _, err) = run_with(&file, &["place", "--policy", "rr_core"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(NOTE) && err.contains("stale"), "{err}");
}

/// The measuring commands (`mem`, `cache`, `contention`, `power`) measure on the OS's view
/// of the sockets and nodes without a saved description, and say so; none asks to run
/// `topoprobe infer` first.
#[test]
fn the_measuring_commands_work_from_the_os_view_without_a_description() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = dir.path().join("none.json");
    let first = "run `topoprobe infer` first";
    for args in [
        &["mem", "--latency-only", "--size", "1M"][..],
        &["contention", "--size", "1M"],
        &["cache", "--shared", "--max-size", "1M"],
    ] {
        let (code, out, err) = run_with(&none, args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(
            out.contains(NOTE),
            "{args:?}: the note is in the result: {out}"
        );
        assert!(
            !err.contains(first) && !out.contains(first),
            "{args:?}: {err}"
        );
        let (code, out, err) = run_with(&none, &[args, &["--plan"][..]].concat());
        assert_eq!(code, 0, "{args:?} --plan: {err}");
        assert!(out.contains("total:"), "{out}");
    }
    // The walk alone needs no topology: it measures the first CPU against the OS's caches.
    let (code, _, err) = run_with(&none, &["cache", "--max-size", "256K"]);
    assert_eq!(code, 0, "{err}");
    // Power measures the OS's sockets, or says why it cannot (exit 1), never asking for a
    // description.
    let (code, out, err) = run_with(&none, &["power", "--duration", "0.05"]);
    assert!(code == 0 || code == 1, "{err}");
    assert!(
        !err.contains(first) && (code == 0 || out.contains("unavailable")),
        "{out}{err}"
    );
    if code == 0 {
        assert!(out.contains(NOTE), "{out}");
    }
}
