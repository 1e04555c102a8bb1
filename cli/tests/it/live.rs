//! Tests of the commands that measure this machine: `infer` (live), `matrix` and
//! `latency`, the description's default place, and their errors. The machine may have
//! any number of CPUs (at least two are needed for a pair; tests that need them say so).

use crate::common;

use common::run_in as run;
use serde_json::Value;
use std::path::Path;
use topoprobe_model::WarningKind;

/// The CPUs this test process may use.
fn cpus() -> Vec<u32> {
    topoprobe_sys::affinity::allowed_cpus()
        .expect("affinity")
        .to_vec()
}

/// Loose settings: the test machine may be loaded by other tests.
const LOOSE: [&str; 2] = ["--max-stdev", "40"];

#[test]
fn infer_measures_this_machine_and_saves_the_description() {
    let c = cpus();
    if c.len() < 2 {
        eprintln!("skipped: this process may use only one CPU");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let list = format!("{},{}", c[0], c[1]);
    let mut args = vec![
        "infer",
        "--cpus",
        &list,
        "--json",
        "--plugins",
        "cache,mem,power",
    ];
    args.extend(LOOSE);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("measured 1 of 1 pairs of 2 CPUs"), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["provenance"]["source"]["kind"], "measured");
    assert_eq!(v["provenance"]["parameters"]["pairs_measured"], "1");
    let expected = topoprobe_model::format_cpu_list(&[c[0], c[1]]);
    assert_eq!(v["provenance"]["parameters"]["cpus"], expected.as_str());
    // The SMT probe ran and decided SMT (its slowdowns recorded); on a machine too loaded
    // for the probe's share of the time it is left out, and SMT is then the latencies'
    // inference, never said to be measured.
    let smt_probe = v["provenance"]["parameters"]["smt_probe"]
        .as_str()
        .unwrap_or_default();
    if smt_probe.is_empty() {
        assert_eq!(
            v["facts"]["smt"]["origin"], "inferred",
            "{}",
            v["provenance"]
        );
        eprintln!("loaded machine: the SMT probe was left out");
    } else {
        assert_eq!(v["facts"]["smt"]["origin"], "measured", "{smt_probe}");
    }
    assert_eq!(v["contexts"].as_array().map(Vec::len), Some(2));
    let lat = v["latency"]["raw"][0][1].as_f64().expect("latency");
    assert!(lat > 0.0 && lat.is_finite(), "{lat}");
    assert!(v["latency"]["spread"][0][1].as_f64().is_some());
    // A one-way latency of 100 µs or more is no cache transfer: on a loaded machine the
    // partner waited for its CPU, and the run must have flagged the pair, not kept it as a
    // figure of the hardware.
    if lat >= 100_000.0 {
        let flagged = v["provenance"]["parameters"]["pairs_noisy"] == "1"
            || v["validation"]["warnings"].as_array().is_some_and(|w| {
                w.iter()
                    .any(|w| w["kind"] == WarningKind::NoisyPairs.as_str())
            });
        assert!(flagged, "{lat} ns kept unflagged: {}", v["validation"]);
        eprintln!("loaded machine: the pair measured {lat} ns, flagged noisy");
    }
    // The plugins' sections: memory latency from the socket, caches measured beside the
    // OS's, power unavailable or measured (never invented).
    let mem = v["memory"]["latency"].as_array().expect("memory section");
    assert!(
        mem[0]["latency"].as_f64().is_some_and(|l| l > 1.0),
        "{mem:?}"
    );
    let levels = v["caches"]["levels"].as_array().expect("cache section");
    // Measured sizes, unless the walk was stopped at twice its plan (a loaded machine:
    // the budget guard), which the cost section then says.
    let cache_stopped = v["provenance"]["cost"]["steps"]
        .as_array()
        .is_some_and(|steps| {
            steps.iter().any(|s| {
                s["probe"] == "cache" && s["note"].as_str().is_some_and(|n| n.contains("stopped"))
            })
        });
    assert!(
        cache_stopped
            || levels
                .iter()
                .any(|l| l["measured_size_kib"].as_u64().is_some()),
        "{levels:?}"
    );
    let power_said = v["power"].is_object()
        || v["validation"]["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w.to_string().contains("unavailable")));
    assert!(power_said, "{}", v["validation"]);
    // The description is in the default place, and loads as this machine's.
    let saved = dir.path().join("machine.json");
    assert!(saved.exists());
    let (code, out, err) = run(
        dir.path(),
        &["show", "--topology", saved.to_str().expect("path")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 hardware contexts"), "{out}");
    // The .mct export carries the plugins' sections as libmctop writes them (the TSC
    // rate recorded by the run converts ns into cycles).
    let (code, mct, err) = run(
        dir.path(),
        &[
            "show",
            "--topology",
            saved.to_str().expect("path"),
            "--format",
            "mct",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(mct.contains("#Mem_latencies 1\n"), "{mct}");
    assert!(mct.contains("#Mem_bw1-WRITE 1\n"), "{mct}");
    // The bandwidth of both CPUs, unless the mem plugin's budget left it out on a loaded
    // machine, which the cost section then says: the step's note, or (when the plan made
    // at the machine's pace had no room for it) the plan's list of what it left out.
    if !mct.contains("#Mem_bw-READ 1\n") {
        let cost = &v["provenance"]["cost"];
        let both = |s: &&Value| {
            s["probe"] == "mem"
                && s["what"]
                    .as_str()
                    .is_some_and(|w| w.starts_with("bandwidth") && w.ends_with("2 threads"))
        };
        let steps = cost["steps"].as_array().expect("steps");
        let said = match steps.iter().find(both) {
            Some(step) => step["note"]
                .as_str()
                .filter(|n| n.starts_with("left out"))
                .map(str::to_string),
            None => cost["left_out"].as_array().and_then(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .find(|n| n.contains("measurements)") && n.contains("budget"))
                    .map(str::to_string)
            }),
        };
        let Some(said) = said else {
            panic!("no #Mem_bw-READ and nothing said left out: {mct}\n{cost}");
        };
        eprintln!("loaded machine: the bandwidth of both CPUs was left out by the budget: {said}");
    }
    assert!(mct.contains("#Cache_levels "), "{mct}");
    assert!(out.contains("caches"), "{out}");
    let topo = topoprobe_machine::description::load_checked(&saved).expect("load");
    assert_eq!(topo.num_contexts(), 2);
}

#[test]
fn a_stale_description_is_detected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut m = topoprobe_machine::description::this_machine();
    m.online_cpus = Some("0-4095".to_string());
    let matrix = topoprobe_model::LatencyMatrix::from_fn(2, |_, _| Some(50.0));
    let opts = topoprobe_infer::InferOptions {
        machine: m,
        ..Default::default()
    };
    let topo = topoprobe_infer::infer(&matrix, &opts).expect("infer");
    let path = dir.path().join("old.json");
    topoprobe_model::format::json::write_description(&topo, &path).expect("write");
    let e = topoprobe_machine::description::load_checked(&path).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("stale") && text.contains("online_cpus"),
        "{text}"
    );
    assert!(text.contains("topoprobe infer"), "{text}");
}

#[test]
fn matrix_prints_csv_in_core_to_core_latency_layout() {
    let c = cpus();
    if c.len() < 2 {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let list = format!("{},{}", c[0], c[1]);
    let mut args = vec!["matrix", "--csv", "--cpus", &list];
    args.extend(LOOSE);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (i, l) in lines.iter().enumerate() {
        let cells: Vec<&str> = l.split(',').collect();
        assert_eq!(cells.len(), 2, "{l}");
        assert!(cells[i].is_empty(), "diagonal empty: {l}");
        assert!(cells[1 - i].parse::<f64>().is_ok(), "{l}");
    }
    let mut args = vec!["matrix", "--cpus", &list];
    args.extend(LOOSE);
    let (code, out, _) = run(dir.path(), &args);
    assert_eq!(code, 0);
    assert!(out.contains("one-way latency in ns"), "{out}");
}

#[test]
fn latency_prints_statistics_and_json() {
    let c = cpus();
    if c.len() < 2 {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (c[0].to_string(), c[1].to_string());
    let mut args = vec!["latency", &a, &b, "--json", "--smt"];
    args.extend(LOOSE);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert!(v["median_ns"].as_f64().expect("median") > 0.0);
    assert!(v["min_ns"].as_f64() <= v["median_ns"].as_f64());
    assert!(v["smt_slowdown"].as_f64().is_some());
    let mut args = vec!["latency", &a, &b];
    args.extend(LOOSE);
    let (code, out, _) = run(dir.path(), &args);
    assert_eq!(code, 0);
    assert!(out.contains("ns one way"), "{out}");
}

/// A spread limit no pair meets: every pair is noisy (5 samples per batch).
const HOPELESS: [&str; 4] = ["--max-stdev", "0.000001", "--reps", "5"];

/// Runs `args` (which must exit 0) up to three times until its standard output or error
/// says `flag`;
/// its standard output and error, or `None` when no run was flagged. As for `latency` with
/// [`HOPELESS`], identical samples (a coarse timer) meet any limit, so a run may have
/// nothing to flag.
fn flagged_run(dir: &Path, args: &[&str], flag: &str) -> Option<(String, String)> {
    for _ in 0..3 {
        let (code, out, err) = run(dir, args);
        assert_eq!(code, 0, "{err}");
        if err.contains(flag) || out.contains(flag) {
            return Some((out, err));
        }
    }
    eprintln!("{args:?} met the limit in 3 runs: nothing flagged to check");
    None
}

#[test]
fn a_noisy_pair_is_flagged_and_every_command_exits_0() {
    let c = cpus();
    if c.len() < 2 {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (c[0].to_string(), c[1].to_string());
    let list = format!("{a},{b}");

    // One pair: the best batch, flagged, in JSON and in text.
    let mut args = vec!["latency", &a, &b, "--json"];
    args.extend(HOPELESS);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let noisy = v["noisy"].as_bool().expect("noisy");
    // Five identical samples (a coarse timer) would meet any limit: nothing to flag then.
    if !noisy {
        assert_eq!(v["spread"].as_f64(), Some(0.0), "{out}");
        eprintln!("identical samples (a coarse timer) met the limit: nothing flagged to check");
        return;
    }
    assert!(v["median_ns"].as_f64().expect("median") > 0.0);
    assert_eq!(v["spread_limit"].as_f64(), Some(2e-8));
    assert!(
        v["noise_note"]
            .as_str()
            .is_some_and(|n| n.contains("limit after 5 batches")),
        "{out}"
    );
    let mut args = vec!["latency", &a, &b];
    args.extend(HOPELESS);
    if let Some((out, _)) = flagged_run(dir.path(), &args, "  noisy: ") {
        assert!(out.contains("the best batch is kept"), "{out}");
    }

    // The matrix: CSV unchanged in shape, the flag on standard error and in FILE.notes.
    let csv = dir.path().join("m.csv");
    let csv_arg = csv.to_str().expect("path");
    let mut args = vec!["matrix", "--full", "--cpus", &list, "-o", csv_arg];
    args.extend(HOPELESS);
    let Some((_, err)) = flagged_run(dir.path(), &args, "# noisy pairs") else {
        return;
    };
    assert!(
        err.contains("# noisy pairs") && err.contains(&format!("CPUs {a}-{b}: spread")),
        "{err}"
    );
    let text = std::fs::read_to_string(&csv).expect("csv");
    assert_eq!(text.lines().count(), 2, "{text}");
    let notes_path = dir.path().join("m.csv.notes");
    let notes = std::fs::read_to_string(&notes_path).expect("notes");
    assert!(
        notes.contains(&format!("0\t1\t{a}\t{b}\tnoisy\tspread ")),
        "{notes}"
    );
    // A later quiet matrix at the same place removes the notes of this one.
    let mut args = vec!["matrix", "--full", "--cpus", &list, "-o", csv_arg];
    args.extend(["--max-stdev", "100000"]);
    let (code, _, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(!notes_path.exists(), "{err}");
    // The table marks the pair.
    let mut args = vec!["matrix", "--cpus", &list];
    args.extend(HOPELESS);
    if let Some((out, _)) = flagged_run(dir.path(), &args, "# noisy pairs") {
        assert!(out.contains("*\n"), "{out}");
    }

    // The description: a warning in the JSON, said on standard error.
    let mut args = vec!["infer", "--cpus", &list, "--plugins", "none", "--json"];
    args.extend(HOPELESS);
    let Some((out, _)) = flagged_run(
        dir.path(),
        &args,
        "topoprobe: noisy pairs: 1 pair of CPUs kept",
    ) else {
        return;
    };
    let v: Value = serde_json::from_str(&out).expect("json");
    let warnings = v["validation"]["warnings"].as_array().expect("warnings");
    let w = warnings
        .iter()
        .find(|w| w["kind"] == WarningKind::NoisyPairs.as_str())
        .expect("noisy_pairs warning");
    assert!(
        w["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("({a}, {b}) spread"))),
        "{w}"
    );
    assert_eq!(v["provenance"]["parameters"]["pairs_noisy"], "1");
}

#[test]
fn bad_cpu_lists_and_pairs_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = run(dir.path(), &["infer", "--cpus", "0-x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--cpus") && err.contains('x'), "{err}");
    let (code, _, err) = run(dir.path(), &["matrix", "--cpus", "0,99999"]);
    assert_eq!(code, 2);
    assert!(err.contains("CPU 99999 is not available"), "{err}");
    let (code, _, err) = run(dir.path(), &["latency", "0", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("against itself"), "{err}");
    let (code, _, err) = run(dir.path(), &["infer", "--cpus", &cpus()[0].to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("at least two CPUs"), "{err}");
    let (code, _, err) = run(dir.path(), &["infer", "--from-matrix", "x.csv", "--full"]);
    assert_eq!(code, 2);
    assert!(err.contains("apply to measuring this machine"), "{err}");
}

#[test]
fn a_missing_description_says_how_to_create_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // `TOPOPROBE_FILE` names the description; where it holds none, the command falls back
    // to the OS's view and its note names the file and says how to measure.
    let (code, _, err) = run(dir.path(), &["show"]);
    assert_eq!(code, 0, "{err}");
    let missing = dir.path().join("machine.json");
    assert!(
        err.contains(&format!("no description at {}", missing.display())),
        "{err}"
    );
    assert!(err.contains("`topoprobe infer` measures it"), "{err}");
}

#[test]
fn an_smt_probe_that_disagrees_with_the_latencies_is_reported_not_obeyed() {
    // Two contexts 100 ns apart cannot share a core, whatever a slowdown suggested.
    let matrix = topoprobe_model::LatencyMatrix::from_fn(4, |a, b| {
        Some(if a / 2 == b / 2 { 100.0 } else { 240.0 })
    });
    let opts = topoprobe_infer::InferOptions {
        smt: Some(true),
        smt_origin: topoprobe_model::Origin::Measured,
        ..Default::default()
    };
    let topo = topoprobe_infer::infer(&matrix, &opts).expect("infer");
    assert!(!topo.has_smt());
    let unresolved = &topo.validation().unresolved;
    assert!(
        unresolved.iter().any(|u| u.reason.contains("SMT")),
        "{unresolved:?}"
    );
}

#[test]
fn siblings_the_smt_probe_missed_are_kept_and_reported() {
    // Pairs at 8 ns are SMT siblings even when the probe measured no slowdown.
    let matrix = topoprobe_model::LatencyMatrix::from_fn(8, |a, b| {
        Some(if a / 2 == b / 2 { 8.0 } else { 40.0 })
    });
    let opts = topoprobe_infer::InferOptions {
        smt: Some(false),
        smt_origin: topoprobe_model::Origin::Measured,
        ..Default::default()
    };
    let topo = topoprobe_infer::infer(&matrix, &opts).expect("infer");
    assert!(topo.has_smt());
    assert_eq!(topo.num_cores(), 4);
    let unresolved = &topo.validation().unresolved;
    assert!(
        unresolved.iter().any(|u| u.reason.contains("SMT probe")),
        "{unresolved:?}"
    );
    // The same from the command line (`--smt no`) is obeyed: the user knows.
    let given = topoprobe_infer::InferOptions {
        smt: Some(false),
        ..Default::default()
    };
    let topo = topoprobe_infer::infer(&matrix, &given).expect("infer");
    assert!(!topo.has_smt());
}
