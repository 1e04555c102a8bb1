//! `topoprobe bench <experiment>` speaks the output language of every command: `-o FILE`
//! (`-` is standard output), `--format text|json|csv`, `--json`; a bad value is a usage
//! error (exit status 2) naming the argument and what it allows; text says "1 run", not
//! "1 runs", and speed ratios in words. Every run here is tiny (a few KiB, one run, a few
//! milliseconds).

use crate::common;

use std::path::Path;

use assert_cmd::Command;

/// The tiniest run of each experiment.
const TINY: [&[&str]; 5] = [
    &[
        "locks",
        "--threads",
        "2",
        "--duration",
        "0.005",
        "--kinds",
        "ticket",
        "--backoffs",
        "none,educated",
    ],
    &[
        "false-sharing",
        "--strides",
        "8,64,128",
        "--runs",
        "1",
        "--duration",
        "0.005",
    ],
    &["line-ops", "--rounds", "1"],
    &["sort", "--size", "4K", "--runs", "1"],
    &["reduce", "--size", "4K", "--runs", "1"],
];

/// Runs `topoprobe bench ARGS --topology M` in a scratch directory.
fn bench(dir: &Path, args: &[&str]) -> std::process::Output {
    let m = common::two_cpu_matrix(dir);
    Command::new(common::exe())
        .current_dir(dir)
        .arg("bench")
        .args(args)
        .arg("--topology")
        .arg(&m)
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn values_out_of_range_are_usage_errors_naming_the_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, says) in [
        (
            &["false-sharing", "--strides", "7"][..],
            &["--strides 7", "multiples of 8"][..],
        ),
        (&["sort", "--size", "1"], &["--size 1", "8 B to"]),
        (&["line-ops", "--cpu", "5"], &["--cpu 5", "0-1"]),
        (&["reduce", "--runs", "0"], &["--runs 0", "1 to 1000"]),
        (&["locks", "--locks", "0"], &["--locks 0", "1 to"]),
    ] {
        let out = bench(dir.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn dash_is_standard_output_and_text_counts_right() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in TINY {
        let out = ok(&bench(dir.path(), &[args, &["-o", "-"]].concat()));
        assert!(!out.is_empty(), "{args:?}");
        assert!(!out.contains(" 1 runs"), "{args:?}: {out}");
        assert!(!out.contains(" 1 rounds"), "{args:?}: {out}");
        assert!(!out.contains("1 threads"), "{args:?}: {out}");
        assert!(!out.contains("x slower"), "{args:?}: {out}");
        assert!(!dir.path().join("-").exists());
    }
    let locks = ok(&bench(dir.path(), TINY[0]));
    assert!(
        locks.contains("1 lock,") && locks.contains("median of 1 run of 0.005 s"),
        "{locks}"
    );
    let sort = ok(&bench(dir.path(), TINY[3]));
    assert!(
        sort.starts_with("4 KiB of random keys, 2 threads, median of 1 run;"),
        "{sort}"
    );
    assert!(
        sort.contains("u32 keys: topoprobe is ") && sort.contains(" than rayon")
            || sort.contains("as fast as rayon"),
        "{sort}"
    );
    let line_ops = ok(&bench(dir.path(), TINY[2]));
    assert!(line_ops.contains("median of 1 round of 32"), "{line_ops}");
}

#[test]
fn json_is_each_experiments_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = |args: &[&str], flag: &[&str]| -> serde_json::Value {
        let out = ok(&bench(dir.path(), &[args, flag].concat()));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    };
    let v = json(TINY[0], &["--json"]);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["runs"], 1);
    assert_eq!(v["results"].as_array().expect("results").len(), 2 + 3);
    assert!(v["clock"].is_string() && v["advice"].is_array(), "{v}");
    let v = json(TINY[1], &["--format", "json"]);
    assert_eq!(v["results"].as_array().expect("results").len(), 3);
    assert!([8, 64, 128].contains(&v["padding_bytes"].as_u64().expect("padding")));
    let v = json(TINY[2], &["--json"]);
    assert_eq!(v["cpu"], 0);
    assert_eq!(v["rounds"], 1);
    assert_eq!(v["described_latency"]["cpus"], serde_json::json!([0, 1]));
    assert_eq!(v["described_latency"]["unit"], "ns");
    let v = json(TINY[3], &["--json"]);
    assert_eq!(v["verified"], true);
    assert_eq!(v["bytes"], 4096);
    assert_eq!(v["results"].as_array().expect("results").len(), 8);
    let v = json(TINY[4], &["-o", "-", "--json"]);
    assert_eq!(v["verified"], true);
    let r = v["results"].as_array().expect("results");
    assert_eq!(r[0]["reduction"], "tree");
    assert_eq!(r[1]["reduction"], "flat");
}

#[test]
fn a_csv_file_holds_the_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, header, rows) in [
        (
            TINY[0],
            "lock,backoff,threads,acquisitions_per_s,fairness",
            5,
        ),
        (TINY[1], "stride_bytes,threads,ops_per_s", 3),
        (
            TINY[2],
            "op,state,scope,latency_ns,cpu,owner_cpu,third_cpu",
            15,
        ),
        (TINY[3], "keys,algorithm,bytes,threads,seconds", 8),
        (TINY[4], "reduction,threads,bytes,rounds,seconds", 2),
    ] {
        let file = dir.path().join(format!("{}.csv", args[0]));
        let out = bench(
            dir.path(),
            &[args, &["-o", file.to_str().expect("path")]].concat(),
        );
        ok(&out);
        assert!(out.stdout.is_empty(), "{args:?}");
        let csv = std::fs::read_to_string(&file).expect("csv written");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], header, "{args:?}");
        assert_eq!(lines.len(), 1 + rows, "{args:?}: {csv}");
    }
}

#[test]
fn a_picture_file_is_a_usage_error_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in TINY {
        let out = bench(dir.path(), &[args, &["-o", "x.png"]].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("x.png"), "{args:?}: {err}");
        assert!(!dir.path().join("x.png").exists());
    }
    // --format csv with a .json file contradicts itself.
    let out = bench(
        dir.path(),
        &[TINY[4], &["--format", "csv", "-o", "r.json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
