//! Regression tests of the measuring commands (`latency`, `cache`, `mem`, `contention`,
//! `power`, `matrix`): requests this machine cannot satisfy are usage errors that say what
//! was typed, a command that measured nothing it exists for fails, sizes too small to
//! measure anything are refused, and every command writes its result as text, JSON (and
//! CSV where it is a table) through one output path.

use crate::common;

use std::path::Path;

use common::run_in;
use serde_json::Value;

fn run_fresh(args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    run_in(dir.path(), args)
}

/// The CPUs this process may use.
fn cpus() -> Vec<u32> {
    topoprobe_sys::affinity::allowed_cpus()
        .expect("affinity")
        .to_vec()
}

/// A CPU number this process may not use.
fn missing_cpu() -> u32 {
    let have = cpus();
    (7..).find(|c| !have.contains(c)).expect("a missing CPU")
}

/// Loose settings: the test machine may be loaded by other tests.
const LOOSE: [&str; 4] = ["--max-stdev", "40", "--reps", "5"];

#[test]
fn latency_names_the_cpus_as_typed() {
    let first = cpus()[0].to_string();
    let missing = missing_cpu().to_string();
    let (code, _, err) = run_fresh(&["latency", &first, &missing]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "latency {first} {missing}: CPU {missing} is not available to this process"
        )),
        "{err}"
    );
    assert!(!err.contains("--cpus"), "says only what was typed: {err}");
    assert!(err.contains("Usage: topoprobe latency"), "{err}");
    // The same for the plan.
    let (code, _, err) = run_fresh(&["latency", &first, &missing, "--plan"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn cache_takes_one_cpu_as_cpus_and_refuses_what_it_cannot_measure() {
    let missing = missing_cpu().to_string();
    for flag in ["--cpu", "--cpus"] {
        let (code, _, err) = run_fresh(&["cache", flag, &missing, "--max-size", "1M"]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.contains(&format!(
                "{flag} {missing}: CPU {missing} is not available to this process"
            )),
            "{err}"
        );
    }
    let (code, _, err) = run_fresh(&["cache", "--cpus", "0-3", "--plan"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--cpus 0-3: the caches are measured on one CPU"),
        "{err}"
    );
    let (code, _, err) = run_fresh(&["cache", "--cpus", "x"]);
    assert_eq!(code, 2, "{err}");
    // --cpus is documented, --cpu is not.
    let (_, help, _) = run_fresh(&["cache", "--help"]);
    assert!(help.contains("--cpus <CPU>"), "{help}");
    assert!(!help.contains("--cpu <CPU>"), "{help}");
    // The plan of one CPU, named either way.
    let first = cpus()[0].to_string();
    let (code, out, err) = run_fresh(&["cache", "--cpu", &first, "--plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"steps\""), "{out}");
}

#[test]
fn walks_and_working_sets_too_small_to_measure_are_refused() {
    for size in ["1", "1K", "255K"] {
        let (code, out, err) = run_fresh(&["cache", "--max-size", size]);
        assert_eq!(code, 2, "--max-size {size}: {err}");
        assert!(out.is_empty());
        assert!(err.contains("256 KiB at least"), "{err}");
        assert!(!err.contains("0 KiB"), "{err}");
    }
    let (code, out, err) = run_fresh(&["mem", "--size", "1K", "--latency-only"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("too small to measure memory"), "{err}");
    assert!(!err.contains("0 MiB"), "{err}");
    // A working set above the memory available now is refused before anything is
    // allocated, with the figure (no machine here has 512 TiB available).
    let (code, out, err) = run_fresh(&["mem", "--size", "512T", "--latency-only"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("available now") && err.contains("MemAvailable"),
        "{err}"
    );
}

/// `--max-memory` bounds an explicit `--size` as it bounds a planned one: a size whose
/// plan needs more is refused (exit 2) with the budget that would fit; without
/// `--max-memory` the default budget grows to what the size needs, and the plan says so.
#[test]
fn an_explicit_size_keeps_within_the_memory_budget_or_is_refused_with_what_would_fit() {
    for cmd in ["mem", "contention"] {
        let (code, out, err) = run_fresh(&[cmd, "--size", "1G", "--max-memory", "256M", "--plan"]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(out.is_empty(), "{cmd}: {out}");
        assert!(
            err.contains("--size 1 GiB needs") && err.contains("give --max-memory"),
            "{cmd}: {err}"
        );
        let (code, out, err) = run_fresh(&[cmd, "--size", "600M", "--plan", "--json"]);
        assert_eq!(code, 0, "{cmd}: {err}");
        let plan: Value = serde_json::from_str(&out).expect("json");
        let budget = plan["budget"]["bytes"].as_u64().expect("bytes");
        let peak = plan["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(|s| s["bytes"].as_u64())
            .max()
            .expect("a step");
        assert!(peak >= 600 << 20 && peak < budget, "{cmd}: {plan}");
        assert!(
            plan["basis"]
                .as_str()
                .is_some_and(|b| b.contains("what --size 600 MiB needs")),
            "{cmd}: {plan}"
        );
    }
    // The benchmarks plan their arrays before allocating them.
    let topo = common::two_cpus();
    let (code, out, err) = run_fresh(&[
        "bench",
        "sort",
        "--size",
        "1G",
        "--max-memory",
        "1G",
        "--topology",
        topo,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("need 3.02 GiB at once") && err.contains("give --max-memory 3096M"),
        "{err}"
    );
    let (code, _, err) = run_fresh(&[
        "bench",
        "reduce",
        "--size",
        "1G",
        "-n",
        "2",
        "--max-memory",
        "1G",
        "--topology",
        topo,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give --max-memory 3096M"), "{err}");
}

#[test]
fn mem_takes_n_for_its_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = common::two_cpus();
    let (code, out, err) = run_in(
        dir.path(),
        &["mem", "-n", "1", "--plan", "--json", "--topology", topo],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 thread\""), "{out}");
    let (code, _, err) = run_in(
        dir.path(),
        &["mem", "-n", "3", "--plan", "--topology", topo],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--threads 3: a socket of this machine has at most 2 contexts"),
        "{err}"
    );
}

#[test]
fn mem_full_prints_its_plan_with_its_larger_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = common::two_cpus();
    let (code, out, err) = run_in(dir.path(), &["mem", "--full", "--plan", "--topology", topo]);
    assert_eq!(code, 0, "{err}");
    for step in [
        "loaded latency CPU",
        "read/write mixes socket 0",
        "saturation socket 0",
        "matrix latency",
        "matrix read",
    ] {
        assert!(out.contains(step), "no {step}: {out}");
    }
    assert!(out.contains("of the 120 s budget"), "{out}");
    assert!(out.contains("of the 1 GiB memory budget"), "{out}");
    // The default run keeps its budget and plans none of it.
    let (code, out, err) = run_in(dir.path(), &["mem", "--plan", "--topology", topo]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("of the 15 s budget") && !out.contains("loaded latency"),
        "{out}"
    );
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "mem",
            "--full",
            "--latency-only",
            "--plan",
            "--topology",
            topo,
        ],
    );
    assert_eq!(code, 2, "{err}");
}

/// Whether a `mem` report says its budget left a measurement out (a loaded machine is
/// slower than planned): in its notes, or in a step of its plan.
fn budget_left_out(v: &Value) -> Option<String> {
    let notes = v["notes"].as_array().into_iter().flatten();
    let steps = v["cost"]["steps"].as_array().into_iter().flatten();
    notes
        .chain(steps.map(|s| &s["note"]))
        .filter_map(Value::as_str)
        .find(|n| n.contains("left out"))
        .map(str::to_string)
}

#[test]
fn mem_full_runs_a_loaded_latency_curve_on_this_machine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = common::two_cpus();
    let args = [
        "mem",
        "--full",
        "--size",
        "16M",
        "--budget",
        "60",
        "--json",
        "--topology",
        topo,
    ];
    // Every measurement of the full run, unless a loaded machine made the budget leave some
    // out: then again, up to three runs, and what was left out is said here.
    for run in 1..=3 {
        let (code, out, err) = run_in(dir.path(), &args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        // The plan's node matrix has this machine's one node, whatever ran.
        assert_eq!(
            v["node_matrix"]["targets"].as_array().unwrap().len(),
            1,
            "{out}"
        );
        let curve = &v["loaded_latency"][0];
        let points = curve["points"].as_array().map_or(0, Vec::len);
        let mixes = v["mixes"].as_array().map_or(0, Vec::len);
        if points >= 2 && mixes >= 5 {
            assert_eq!(curve["local"], true, "{out}");
            // The idle point, then one per delay.
            assert!(curve["points"][0]["latency_ns"].as_f64().unwrap() > 0.0);
            return;
        }
        // Fewer points or mixes than planned: only where the budget said it left them out.
        let Some(said) = budget_left_out(&v) else {
            panic!(
                "{points} loaded-latency points and {mixes} mixes, nothing said left out: {out}"
            );
        };
        eprintln!("run {run}: a loaded machine: {points} points, {mixes} mixes: {said}");
    }
    eprintln!(
        "the budget left part of `mem --full` out in 3 runs: the left-out notes were checked"
    );
}

#[test]
fn power_without_counters_fails_and_says_why() {
    if topoprobe_measure::power::perf::discover(Path::new("/sys/bus/event_source/devices")).is_ok()
    {
        eprintln!("skipped: this machine has the perf power events, used after powercap");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("powercap");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let root = empty.to_str().expect("path");
    let (code, out, err) = run_in(dir.path(), &["power", "--powercap-root", root]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("power: unavailable: no RAPL zones under "),
        "{out}"
    );
    assert!(err.contains("nothing measured"), "{err}");
    let (code, out, _) = run_in(dir.path(), &["power", "--powercap-root", root, "--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert!(
        v["unavailable"]
            .as_str()
            .is_some_and(|u| u.starts_with("no RAPL zones")),
        "{v}"
    );
    // Into a file: the file says it, and the status is the same.
    let file = dir.path().join("power.json");
    let (code, out, _) = run_in(
        dir.path(),
        &[
            "power",
            "--powercap-root",
            root,
            "-o",
            file.to_str().expect("path"),
        ],
    );
    assert_eq!(code, 1);
    assert!(out.is_empty());
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("file")).expect("json");
    assert!(v["unavailable"].is_string(), "{v}");
}

#[test]
fn matrix_writes_a_table_json_or_csv() {
    let c = cpus();
    if c.len() < 2 {
        eprintln!("skipped: one CPU");
        return;
    }
    let list = format!("{},{}", c[0], c[1]);
    let mut args = vec!["matrix", "--cpus", &list, "--json"];
    args.extend(LOOSE);
    let (code, out, err) = run_fresh(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["cpus"], serde_json::json!([c[0], c[1]]), "{v}");
    assert!(
        v["latency_ns"][0][1].as_f64().is_some_and(|x| x > 0.0),
        "{v}"
    );
    assert!(v["latency_ns"][0][0].is_null(), "{v}");
    assert_eq!(v["pairs_total"], 1, "{v}");
    // The table (also as --format table), and the CSV (also as --csv).
    for format in [["--format", "text"], ["--format", "table"]] {
        let mut args = vec!["matrix", "--cpus", &list];
        args.extend(format);
        args.extend(LOOSE);
        let (code, out, err) = run_fresh(&args);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("1 of 1 pair measured"), "{out}");
    }
    for format in [&["--format", "csv"][..], &["--csv"][..]] {
        let mut args = vec!["matrix", "--cpus", &list];
        args.extend(format);
        args.extend(LOOSE);
        let (code, out, err) = run_fresh(&args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.lines().count(), 2, "{out}");
    }
    let (code, _, err) = run_fresh(&["matrix", "--csv", "--json"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn latency_writes_its_fields_with_units() {
    let c = cpus();
    if c.len() < 2 {
        eprintln!("skipped: one CPU");
        return;
    }
    let (a, b) = (c[0].to_string(), c[1].to_string());
    let mut args = vec!["latency", &a, &b, "--json"];
    args.extend(LOOSE);
    let (code, out, err) = run_fresh(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    for key in [
        "median_ns",
        "min_ns",
        "spread",
        "samples",
        "rejected",
        "round_trips_per_sample",
        "batches",
        "warmup_batches",
        "noisy",
        "wait",
        "timer",
        "ghz",
    ] {
        assert!(v.get(key).is_some(), "{key} missing: {v}");
    }
    // A pair is not a table.
    let (code, _, err) = run_fresh(&["latency", &a, &b, "--format", "csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a table"), "{err}");
}

#[test]
fn the_tables_have_csv_and_the_plans_still_print() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = common::two_cpus();
    // contention's result is not a table; its plan prints.
    let (code, _, err) = run_in(
        dir.path(),
        &["contention", "--format", "csv", "--topology", topo],
    );
    assert_eq!(code, 2, "{err}");
    for args in [
        &["contention", "--plan", "--topology", topo][..],
        &["mem", "--plan", "--topology", topo][..],
        &["cache", "--plan"][..],
        &["power", "--plan", "--topology", topo][..],
        &["matrix", "--plan"][..],
    ] {
        let (code, out, err) = run_in(dir.path(), args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("probe"), "{args:?}: {out}");
    }
}

#[test]
fn mem_writes_its_socket_node_table_as_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = common::two_cpus();
    let (code, out, err) = run_in(
        dir.path(),
        &[
            "mem",
            "--latency-only",
            "--size",
            "16M",
            "--format",
            "csv",
            "--topology",
            topo,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("socket,node,threads,latency_ns,"),
        "{out}"
    );
    assert!(lines.len() >= 2, "{out}");
    let (code, out, err) = run_in(
        dir.path(),
        &["mem", "--latency-only", "--size", "16M", "--topology", topo],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("random chase in 256 KiB windows over 16 MiB"),
        "{out}"
    );
    assert!(out.contains(" of 1 socket -> node pair;"), "{out}");
}

#[test]
fn mem_c2c_plans_both_home_nodes_for_each_cross_socket_pair_of_a_two_socket_capture() {
    let ivy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/xeon-e5-2680v2-2s.mct");
    let topo = common::arg(&ivy);
    let (code, out, err) = run_fresh(&["mem", "--c2c", "--plan", "--topology", topo]);
    assert_eq!(code, 0, "{err}");
    let c2c: Vec<&str> = out.lines().filter(|l| l.starts_with("c2c ")).collect();
    let cross = |home: &str| {
        c2c.iter()
            .filter(|l| l.contains("(other_socket, ") && l.contains(home))
            .count()
    };
    assert_eq!(cross("home node 0 (reader)"), 1, "{out}");
    assert_eq!(cross("home node 1 (owner)"), 1, "{out}");
    assert_eq!(cross("home node 1 (reader)"), 1, "{out}");
    assert_eq!(cross("home node 0 (owner)"), 1, "{out}");
    assert!(
        c2c.iter().any(|l| l.contains("(core, home node 0 (both))")),
        "{out}"
    );
    assert!(out.contains("budget"), "{out}");
    let (code, _, err) = run_fresh(&[
        "mem",
        "--c2c",
        "--c2c-rounds",
        "0",
        "--plan",
        "--topology",
        topo,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--c2c-rounds 0 is out of range"),
        "the flag as typed: {err}"
    );
    let (code, _, err) = run_fresh(&["mem", "--c2c-budget", "3", "--plan", "--topology", topo]);
    assert_eq!(code, 2, "--c2c-budget needs --c2c: {err}");
}

#[test]
fn mem_c2c_on_one_socket_and_one_node_measures_unbound_and_says_the_home_variants_collapse() {
    let topo = common::two_cpus();
    let (code, out, err) = run_fresh(&[
        "mem",
        "--c2c",
        "--c2c-rounds",
        "3",
        "--latency-only",
        "--size",
        "16M",
        "--json",
        "--topology",
        topo,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let c = &v["cache_to_cache"];
    let t = c["transfers"].as_array().expect("transfers");
    assert!(!t.is_empty(), "{c}");
    assert!(
        t.iter()
            .all(|x| x["home"] == "unbound" && x["home_node"].is_null()),
        "{c}"
    );
    assert!(t.iter().all(|x| x["scope"] != "other_socket"), "{c}");
    assert!(
        t.iter()
            .any(|x| x["scope"] == "socket" && x["state"] == "modified" && x["op"] == "cas"),
        "{c}"
    );
    assert!(
        t.iter().all(|x| x["latency_ns"].as_f64().unwrap() > 0.0),
        "{c}"
    );
    let notes = c["notes"].to_string();
    assert!(notes.contains("collapse"), "{notes}");
    assert!(
        c["unavailable"]
            .to_string()
            .contains("other_socket: one socket"),
        "{c}"
    );
    let (code, out, err) = run_fresh(&[
        "mem",
        "--c2c",
        "--c2c-rounds",
        "2",
        "--latency-only",
        "--size",
        "16M",
        "--topology",
        topo,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cache-to-cache transfers (ns per operation"),
        "{out}"
    );
    assert!(out.contains("CPU 0 <- CPU 1"), "{out}");
}
