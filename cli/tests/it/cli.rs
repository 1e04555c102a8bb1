//! Tests of the `topoprobe` binary: `infer` and `show` on the fixture matrices and libmctop
//! files of `tests/data/`, every output format, the round trips between formats, errors and
//! exit codes, help and version, and a closed standard output.
//!
//! Fixtures (copies of `shared/data`): `nv-i7-6700k.csv` (4 cores × 2 SMT, one socket),
//! `nv-2x-power7.csv` (2 sockets × 8 cores), `hy-apple-m1pro-10c.csv` (directed; 2 E-cores
//! and 2 clusters of 4 P-cores), `kc-fx-8300.csv` (4 modules of 2 cores), `lpdxeon2680.mct`
//! (libmctop, 2 sockets × 10 cores × 2 SMT, cycles) and `lpdpc4.mct` (one socket, 4 cores × 2
//! SMT).

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};

use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;
use common::{arg, data, exe, run_fail, run_ok};
use predicates::prelude::*;
use serde_json::Value;

/// The partition TSV header of the contract.
const TSV_HEADER: &str = "cpu\tcore\tsocket\tnode\tgroups";

fn bin() -> Command {
    Command::new(exe())
}

/// `infer --from-matrix FIXTURE` with extra arguments.
fn infer_matrix(name: &str, extra: &[&str]) -> String {
    let path = data(name);
    let mut args = vec!["infer", "--from-matrix", arg(&path)];
    args.extend_from_slice(extra);
    run_ok(&args)
}

/// `infer --from-mct FIXTURE` with extra arguments.
fn infer_mct(name: &str, extra: &[&str]) -> String {
    let path = data(name);
    let mut args = vec!["infer", "--from-mct", arg(&path)];
    args.extend_from_slice(extra);
    run_ok(&args)
}

/// Text with every run of white space replaced by one space (the text view aligns columns).
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_has(text: &str, wanted: &[&str]) {
    let flat = squash(text);
    for w in wanted {
        assert!(flat.contains(w), "{w:?} not in:\n{text}");
    }
}

/// A parsed partition TSV.
#[derive(Debug, PartialEq)]
struct Tsv {
    /// The `#` lines before the header.
    comments: Vec<String>,
    /// `cpu, core, socket, node, groups` of every line.
    rows: Vec<(u32, u32, u32, i64, Vec<u32>)>,
}

/// Parses a partition TSV strictly: the exact header, data lines of exactly five
/// tab-separated fields, then `#` comment lines.
fn parse_tsv(s: &str) -> Tsv {
    let mut lines = s.lines();
    let header = lines.next().expect("a header line");
    assert_eq!(header, TSV_HEADER);
    let (comments, data): (Vec<&str>, Vec<&str>) = lines.partition(|l| l.starts_with("# "));
    let comments: Vec<String> = comments.into_iter().map(ToString::to_string).collect();
    assert!(
        s.lines().skip(1 + data.len()).all(|l| l.starts_with("# ")),
        "comments come after the data"
    );
    let rows = data
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "line {l:?}");
            let groups = if f[4].is_empty() {
                Vec::new()
            } else {
                f[4].split(',')
                    .map(|g| g.parse().expect("group id"))
                    .collect()
            };
            (
                f[0].parse().expect("cpu"),
                f[1].parse().expect("core"),
                f[2].parse().expect("socket"),
                f[3].parse().expect("node"),
                groups,
            )
        })
        .collect();
    assert!(s.ends_with('\n'), "the TSV ends with a newline");
    Tsv { comments, rows }
}

/// The sets of contexts that share a value of `key`, in order of their first context.
fn partition(
    rows: &[(u32, u32, u32, i64, Vec<u32>)],
    key: impl Fn(&(u32, u32, u32, i64, Vec<u32>)) -> u32,
) -> Vec<Vec<u32>> {
    let mut sets: Vec<(u32, Vec<u32>)> = Vec::new();
    for r in rows {
        let k = key(r);
        match sets.iter_mut().find(|(v, _)| *v == k) {
            Some((_, s)) => s.push(r.0),
            None => sets.push((k, vec![r.0])),
        }
    }
    sets.into_iter().map(|(_, s)| s).collect()
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON")
}

/// A description without the fields that differ from run to run (creation time, duration).
fn stable(mut v: Value) -> Value {
    let p = v["provenance"]
        .as_object_mut()
        .expect("a provenance object");
    assert!(p.remove("created").is_some(), "provenance.created");
    assert!(p.remove("duration_s").is_some(), "provenance.duration_s");
    v
}

fn len(v: &Value, key: &str) -> usize {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is an array"))
        .len()
}

// ---------------------------------------------------------------------------------------
// infer --from-matrix, text

#[test]
fn infer_text_i7_6700k() {
    let out = infer_matrix("nv-i7-6700k.csv", &[]);
    assert!(out.starts_with(
        "topoprobe: 8 hardware contexts, 4 cores, 0 groups, 1 socket (latency matrix"
    ));
    assert_has(
        &out,
        &[
            "sockets: 1 (inferred)",
            "SMT: yes, up to 2 contexts per core (inferred)",
            "units: ns",
            "level 1 6.9 ns smt min 6.9 ns max 7.0 ns (4 pairs)",
            "level 2 19.7 ns socket min 18.0 ns max 23.4 ns (24 pairs)",
            "Socket 0 · 4 cores, 8 contexts",
            "0 (0-1) 1 (2-3) 2 (4-5) 3 (6-7)",
        ],
    );
    // --format text is the default.
    assert_eq!(
        squash(&infer_matrix("nv-i7-6700k.csv", &["--format", "text"])),
        squash(&out)
    );
}

#[test]
fn infer_text_power7() {
    let out = infer_matrix("nv-2x-power7.csv", &["--format", "text"]);
    assert_has(
        &out,
        &[
            "16 hardware contexts, 16 cores, 0 groups, 2 sockets",
            "sockets: 2 (inferred)",
            "SMT: no (inferred)",
            "level 1 173 ns socket",
            "level 2 443 ns cross_socket",
            "Socket 0 · 8 cores, 8 contexts",
            "Socket 1 · 8 cores, 8 contexts",
            "socket 0 <-> socket 1: 443 ns",
        ],
    );
}

#[test]
fn infer_text_m1pro_directed() {
    let out = infer_matrix("hy-apple-m1pro-10c.csv", &["--format", "text"]);
    assert_has(
        &out,
        &[
            "10 hardware contexts, 10 cores, 3 groups, 1 socket (latency matrix",
            "SMT: no (inferred)",
            "level 1 39.5 ns group",
            "level 2 150 ns socket",
            "Group 0 · 2 cores",
            "Group 1 · 4 cores",
            "Group 2 · 4 cores",
            // The matrix is directed: the text says so and how it was symmetrized.
            "- the two directions of a pair differ by up to 36%",
            "symmetrized by the mean of both directions",
        ],
    );
}

#[test]
fn infer_text_fx8300_modules() {
    let out = infer_matrix("kc-fx-8300.csv", &[]);
    assert_has(
        &out,
        &[
            "8 hardware contexts, 8 cores, 4 groups, 1 socket (latency matrix",
            "SMT: no (inferred)",
            "level 1 42.2 ns group",
            "level 2 287 ns socket",
            "Group 3 · 2 cores",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// infer --from-matrix, TSV

#[test]
fn infer_tsv_i7_6700k() {
    let out = infer_matrix("nv-i7-6700k.csv", &["--format", "tsv"]);
    // No unresolved level: the header is the first line.
    assert_eq!(out.lines().next(), Some(TSV_HEADER));
    let t = parse_tsv(&out);
    assert_eq!(t.rows.len(), 8);
    assert_eq!(
        t.rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    assert_eq!(
        partition(&t.rows, |r| r.1),
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert!(t
        .rows
        .iter()
        .all(|r| r.2 == 0 && r.3 == -1 && r.4.is_empty()));
}

#[test]
fn infer_tsv_power7_two_sockets() {
    let out = infer_matrix("nv-2x-power7.csv", &["--format", "tsv"]);
    let t = parse_tsv(&out);
    // Every level is right, and none is flagged (the flags are kept for levels that may be
    // wrong).
    assert!(t.comments.is_empty(), "{:?}", t.comments);
    assert_eq!(t.rows.len(), 16);
    assert_eq!(
        t.rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..16).collect::<Vec<_>>()
    );
    let sockets = partition(&t.rows, |r| r.2);
    assert_eq!(sockets, vec![(0..8).collect::<Vec<_>>(), (8..16).collect()]);
    let ids: BTreeSet<u32> = t.rows.iter().map(|r| r.2).collect();
    assert_eq!(ids.len(), 2);
    // 16 single-context cores, no groups, nodes unknown.
    assert_eq!(
        t.rows.iter().map(|r| r.1).collect::<BTreeSet<_>>().len(),
        16
    );
    assert!(t.rows.iter().all(|r| r.3 == -1 && r.4.is_empty()));
}

#[test]
fn infer_tsv_m1pro_groups() {
    let t = parse_tsv(&infer_matrix(
        "hy-apple-m1pro-10c.csv",
        &["--format", "tsv"],
    ));
    assert_eq!(t.rows.len(), 10);
    assert!(t.rows.iter().all(|r| r.2 == 0 && r.4.len() == 1));
    assert_eq!(
        partition(&t.rows, |r| r.4[0]),
        vec![vec![0, 1], vec![2, 3, 4, 5], vec![6, 7, 8, 9]]
    );
}

#[test]
fn infer_tsv_fx8300_modules() {
    let t = parse_tsv(&infer_matrix("kc-fx-8300.csv", &["--format", "tsv"]));
    assert_eq!(t.rows.len(), 8);
    assert!(t.rows.iter().all(|r| r.4.len() == 1));
    assert_eq!(
        partition(&t.rows, |r| r.4[0]),
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert_eq!(partition(&t.rows, |r| r.1).len(), 8);
}

// ---------------------------------------------------------------------------------------
// infer --from-matrix, JSON

#[test]
fn infer_json_descriptions() {
    // (fixture, contexts, cores, groups, sockets, SMT)
    let cases = [
        ("nv-i7-6700k.csv", 8, 4, 0, 1, true),
        ("nv-2x-power7.csv", 16, 16, 0, 2, false),
        ("hy-apple-m1pro-10c.csv", 10, 10, 3, 1, false),
        ("kc-fx-8300.csv", 8, 8, 4, 1, false),
    ];
    for (name, contexts, cores, groups, sockets, smt) in cases {
        let v = json(&infer_matrix(name, &["--format", "json"]));
        assert_eq!(v["format"], "topoprobe/1", "{name}");
        assert_eq!(v["units"], "ns", "{name}");
        assert_eq!(len(&v, "contexts"), contexts, "{name}");
        assert_eq!(len(&v, "cores"), cores, "{name}");
        assert_eq!(len(&v, "groups"), groups, "{name}");
        assert_eq!(len(&v, "sockets"), sockets, "{name}");
        assert_eq!(v["facts"]["sockets"]["origin"], "inferred", "{name}");
        assert_eq!(v["facts"]["sockets"]["value"], sockets, "{name}");
        assert_eq!(v["facts"]["smt"]["origin"], "inferred", "{name}");
        assert_eq!(v["facts"]["smt"]["value"], smt, "{name}");
        assert_eq!(v["provenance"]["tool"], "topoprobe", "{name}");
        assert_eq!(
            v["provenance"]["version"],
            env!("CARGO_PKG_VERSION"),
            "{name}"
        );
        assert_eq!(v["provenance"]["source"]["kind"], "matrix", "{name}");
        assert_eq!(
            v["provenance"]["source"]["path"],
            arg(&data(name)),
            "{name}"
        );
    }
}

#[test]
fn json_flag_equals_format_json() {
    for name in ["nv-2x-power7.csv", "hy-apple-m1pro-10c.csv"] {
        let a = json(&infer_matrix(name, &["--json"]));
        let b = json(&infer_matrix(name, &["--format", "json"]));
        assert_eq!(stable(a), stable(b), "{name}");
    }
}

#[test]
fn json_and_format_conflict() {
    let p = data("nv-i7-6700k.csv");
    let err = run_fail(
        &[
            "infer",
            "--from-matrix",
            arg(&p),
            "--json",
            "--format",
            "tsv",
        ],
        2,
    );
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn sockets_hint_is_given() {
    let v = json(&infer_matrix(
        "nv-2x-power7.csv",
        &["--sockets", "2", "--json"],
    ));
    assert_eq!(v["facts"]["sockets"]["value"], 2);
    assert_eq!(v["facts"]["sockets"]["origin"], "given");
    assert_eq!(v["facts"]["smt"]["origin"], "inferred");
    assert_eq!(v["provenance"]["parameters"]["sockets"], "2");
    assert_eq!(len(&v, "sockets"), 2);
    let text = infer_matrix("nv-2x-power7.csv", &["--sockets", "2"]);
    assert_has(&text, &["sockets: 2 (given)"]);
}

#[test]
fn smt_hint_is_given() {
    let v = json(&infer_matrix(
        "nv-i7-6700k.csv",
        &["--smt", "yes", "--json"],
    ));
    assert_eq!(v["facts"]["smt"]["value"], true);
    assert_eq!(v["facts"]["smt"]["origin"], "given");
    assert_eq!(v["provenance"]["parameters"]["smt"], "yes");
    assert_eq!(len(&v, "cores"), 4);
}

#[test]
fn sockets_hint_against_the_latencies_is_unresolved() {
    // One socket by the latencies: a hint of 2 is followed (the user may know better) and
    // the socket level reported as unresolved, with why the split is implausible.
    let v = json(&infer_matrix(
        "nv-i7-6700k.csv",
        &["--sockets", "2", "--json"],
    ));
    assert_eq!(v["facts"]["sockets"]["value"], 2);
    assert_eq!(v["facts"]["sockets"]["origin"], "given");
    let unresolved = v["validation"]["unresolved"].as_array().expect("an array");
    assert_eq!(unresolved.len(), 1, "{unresolved:?}");
    assert_eq!(unresolved[0]["level"], "socket");
    let tsv = infer_matrix("nv-i7-6700k.csv", &["--sockets", "2", "--format", "tsv"]);
    assert!(
        tsv.starts_with("cpu\tcore\tsocket\tnode\tgroups\n"),
        "{tsv}"
    );
    let last = tsv.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("# unresolved: socket: 2 sockets were given"),
        "{tsv}"
    );
}

#[test]
fn mct_of_a_nanosecond_topology_needs_a_frequency() {
    let out = bin()
        .args([
            "infer",
            "--from-matrix",
            arg(&data("nv-i7-6700k.csv")),
            "--format",
            "mct",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--ghz") && stderr.contains("cycles"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------
// infer --from-matrix, .mct and -o

#[test]
fn mct_output_reparses() {
    let dir = tempfile::tempdir().unwrap();
    for (name, n, header) in [
        ("nv-i7-6700k.csv", 8, "#HWCs 8 #Nodes 1 SMT 1"),
        ("nv-2x-power7.csv", 16, "#HWCs 16 #Nodes 2 SMT 0"),
        ("kc-fx-8300.csv", 8, "#HWCs 8 #Nodes 1 SMT 0"),
    ] {
        let mct = dir.path().join(name.replace(".csv", ".mct"));
        let stdout = infer_matrix(name, &["--format", "mct", "--ghz", "3"]);
        let out = bin()
            .args([
                "infer",
                "--from-matrix",
                arg(&data(name)),
                "--format",
                "mct",
                "--ghz",
                "3",
                "-o",
            ])
            .arg(&mct)
            .output()
            .unwrap();
        assert!(out.status.success());
        let written = std::fs::read_to_string(&mct).unwrap();
        assert_eq!(written, stdout, "{name}: -o writes what stdout shows");
        let first = written.lines().next().unwrap();
        assert!(
            first.starts_with('#') && first.ends_with(header),
            "{name}: {first}"
        );
        let (triples, _) = parse_mct(&written);
        assert_eq!(triples.len(), n * n, "{name}");
        if name == "nv-i7-6700k.csv" {
            // 6.93 ns between SMT siblings, at 3 GHz: 21 cycles.
            assert!(
                written.contains("\n0    1    21\n"),
                "{name}: ns converted to cycles"
            );
        }

        // The .mct file reads back to the same partition.
        let shown = parse_tsv(&run_ok(&[
            "show",
            "--topology",
            arg(&mct),
            "--format",
            "tsv",
        ]));
        let inferred = parse_tsv(&infer_matrix(name, &["--format", "tsv"]));
        assert_eq!(shown.rows.len(), n);
        assert_eq!(
            partition(&shown.rows, |r| r.1),
            partition(&inferred.rows, |r| r.1),
            "{name}: cores"
        );
        assert_eq!(
            partition(&shown.rows, |r| r.2),
            partition(&inferred.rows, |r| r.2),
            "{name}: sockets"
        );
        assert_eq!(
            shown.rows.iter().map(|r| r.4.clone()).collect::<Vec<_>>(),
            inferred
                .rows
                .iter()
                .map(|r| r.4.clone())
                .collect::<Vec<_>>(),
            "{name}: groups"
        );
    }
}

#[test]
fn output_file_keeps_stdout_empty_and_refuses_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let p = data("nv-2x-power7.csv");
    // A missing directory is named, not created silently.
    let missing = dir.path().join("a").join("b").join("p7.json");
    let out = bin()
        .args(["infer", "--from-matrix", arg(&p), "--json", "-o"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&dir.path().join("a").join("b").display().to_string())
            && err.contains("no such directory"),
        "{err}"
    );
    assert!(!dir.path().join("a").exists(), "no directory is created");
    let file = dir.path().join("p7.json");
    let out = bin()
        .args(["infer", "--from-matrix", arg(&p), "--json", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "nothing on stdout with -o");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("topoprobe: wrote {}\n", file.display())
    );
    let written = json(&std::fs::read_to_string(&file).unwrap());
    let printed = json(&infer_matrix("nv-2x-power7.csv", &["--json"]));
    assert_eq!(stable(written), stable(printed));
    // Only the file was created in the new directory (the atomic write left no temporary).
    let entries: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("p7.json")]);

    // --output is the long form, and it replaces an existing file.
    let tsv = dir.path().join("p7.tsv");
    std::fs::write(&tsv, "old contents that are longer than nothing\n").unwrap();
    bin()
        .args([
            "infer",
            "--from-matrix",
            arg(&p),
            "--format",
            "tsv",
            "--output",
        ])
        .arg(&tsv)
        .assert()
        .success()
        .stdout("");
    assert_eq!(
        std::fs::read_to_string(&tsv).unwrap(),
        infer_matrix("nv-2x-power7.csv", &["--format", "tsv"])
    );
}

// ---------------------------------------------------------------------------------------
// infer --from-mct

#[test]
fn infer_from_mct_xeon2680() {
    let text = infer_mct("lpdxeon2680.mct", &[]);
    assert_has(
        &text,
        &[
            "40 hardware contexts, 20 cores, 0 groups, 2 sockets",
            "sockets: 2 (from file)",
            "SMT: yes, up to 2 contexts per core (from file)",
            "nodes: 2",
            "units: cycles",
            "level 1 28 cycles smt",
            "level 2 112 cycles socket",
            "level 3 308 cycles cross_socket",
            "socket 0 <-> socket 1: 308 cycles",
            "Node 1: memory 505 cycles",
        ],
    );

    let v = json(&infer_mct("lpdxeon2680.mct", &["--json"]));
    assert_eq!(v["format"], "topoprobe/1");
    assert_eq!(v["units"], "cycles");
    assert_eq!(len(&v, "contexts"), 40);
    assert_eq!(len(&v, "cores"), 20);
    assert_eq!(len(&v, "sockets"), 2);
    assert_eq!(v["facts"]["sockets"]["value"], 2);
    assert_eq!(v["facts"]["sockets"]["origin"], "file");
    assert_eq!(v["facts"]["smt"]["value"], true);
    assert_eq!(v["facts"]["smt"]["origin"], "file");
    let levels: Vec<(String, f64)> = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["role"].as_str().unwrap().to_string(),
                l["median"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        vec![
            ("smt".to_string(), 28.0),
            ("socket".to_string(), 112.0),
            ("cross_socket".to_string(), 308.0)
        ]
    );

    // Linux numbering: context i and i + 20 are SMT siblings; 0-9 and 20-29 are socket 0.
    let t = parse_tsv(&infer_mct("lpdxeon2680.mct", &["--format", "tsv"]));
    assert_eq!(t.rows.len(), 40);
    let cores = partition(&t.rows, |r| r.1);
    assert_eq!(cores, (0..20).map(|i| vec![i, i + 20]).collect::<Vec<_>>());
    let s0: Vec<u32> = (0..10).chain(20..30).collect();
    let s1: Vec<u32> = (10..20).chain(30..40).collect();
    let mut sockets = partition(&t.rows, |r| r.2);
    sockets.iter_mut().for_each(|s| s.sort_unstable());
    assert_eq!(sockets, vec![s0, s1]);
    // The .mct's nodes are known: each socket's local node.
    assert!(t.rows.iter().all(|r| r.3 == i64::from(r.2)));
}

#[test]
fn infer_from_mct_pc4() {
    let text = infer_mct("lpdpc4.mct", &[]);
    assert_has(
        &text,
        &[
            "8 hardware contexts, 4 cores, 0 groups, 1 socket (libmctop file",
            "sockets: 1 (from file)",
            "level 1 28 cycles smt",
            "level 2 88 cycles socket",
            "0 (0,4) 1 (1,5) 2 (2,6) 3 (3,7)",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// show

#[test]
fn show_json_gives_the_tsv_of_infer() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "nv-i7-6700k.csv",
        "nv-2x-power7.csv",
        "hy-apple-m1pro-10c.csv",
        "kc-fx-8300.csv",
    ] {
        let file = dir.path().join(name.replace(".csv", ".json"));
        bin()
            .args(["infer", "--from-matrix", arg(&data(name)), "--json", "-o"])
            .arg(&file)
            .assert()
            .success();
        let inferred = infer_matrix(name, &["--format", "tsv"]);
        let shown = run_ok(&["show", "--topology", arg(&file), "--format", "tsv"]);
        assert_eq!(shown, inferred, "{name}");
        // The text view too, and the JSON is shown as it was written (provenance included).
        assert_eq!(
            run_ok(&["show", "--topology", arg(&file)]),
            infer_matrix(name, &[]),
            "{name}"
        );
        let again = json(&run_ok(&["show", "--topology", arg(&file), "--json"]));
        assert_eq!(
            again,
            json(&std::fs::read_to_string(&file).unwrap()),
            "{name}"
        );
    }
}

#[test]
fn show_mct_and_matrix_like_infer() {
    for name in ["lpdxeon2680.mct", "lpdpc4.mct"] {
        let shown = run_ok(&["show", "--topology", arg(&data(name)), "--format", "tsv"]);
        assert_eq!(shown, infer_mct(name, &["--format", "tsv"]), "{name}");
    }
    for name in ["nv-2x-power7.csv", "hy-apple-m1pro-10c.csv"] {
        let shown = run_ok(&["show", "--topology", arg(&data(name)), "--format", "tsv"]);
        assert_eq!(shown, infer_matrix(name, &["--format", "tsv"]), "{name}");
    }
    // Hints apply to show on a matrix as they do to infer.
    let v = json(&run_ok(&[
        "show",
        "--topology",
        arg(&data("nv-2x-power7.csv")),
        "--sockets",
        "2",
        "--json",
    ]));
    assert_eq!(v["facts"]["sockets"]["origin"], "given");
}

// ---------------------------------------------------------------------------------------
// .mct -> JSON -> .mct

/// The `x y lat` triples before the first `#Mem` header, and the tokens from that header
/// on (a `#` starts a new token: libmctop writes `SizeEst 22528#Power_measurements`).
fn parse_mct(s: &str) -> (Vec<(u32, u32, f64)>, Vec<String>) {
    let start = s.find("#Mem").unwrap_or(s.len());
    let (head, tail) = s.split_at(start);
    let triples = head
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "triple line {l:?}");
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    let tokens = tail
        .replace('#', " #")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    (triples, tokens)
}

fn same_number_or_word(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

#[test]
fn mct_json_mct_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["lpdxeon2680.mct", "lpdpc4.mct"] {
        let a = dir.path().join(name.replace(".mct", ".json"));
        let b = dir.path().join(format!("back-{name}"));
        bin()
            .args([
                "infer",
                "--from-mct",
                arg(&data(name)),
                "--format",
                "json",
                "-o",
            ])
            .arg(&a)
            .assert()
            .success()
            .stdout("");
        bin()
            .args(["show", "--topology", arg(&a), "--format", "mct", "-o"])
            .arg(&b)
            .assert()
            .success()
            .stdout("");
        let original = std::fs::read_to_string(data(name)).unwrap();
        let back = std::fs::read_to_string(&b).unwrap();
        assert_eq!(
            squash(original.lines().next().unwrap()),
            squash(back.lines().next().unwrap()),
            "{name}: header"
        );
        let (t0, s0) = parse_mct(&original);
        let (t1, s1) = parse_mct(&back);
        assert!(!t0.is_empty());
        assert_eq!(t1, t0, "{name}: latency triples");
        assert!(s0.iter().any(|t| t == "#Mem_latencies"), "{name}");
        assert_eq!(s1.len(), s0.len(), "{name}: sections\n{s0:?}\n{s1:?}");
        for (x, y) in s0.iter().zip(&s1) {
            assert!(same_number_or_word(x, y), "{name}: {x:?} became {y:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Errors and exit codes

#[test]
fn missing_file_is_a_runtime_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-matrix.csv");
    let err = run_fail(&["infer", "--from-matrix", arg(&missing)], 1);
    assert!(err.starts_with("topoprobe: error: "), "{err}");
    assert!(err.contains(arg(&missing)), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");

    let missing = dir.path().join("no-such.mct");
    let err = run_fail(&["infer", "--from-mct", arg(&missing)], 1);
    assert!(err.contains(arg(&missing)), "{err}");

    let missing = dir.path().join("no-such.json");
    let err = run_fail(&["show", "--topology", arg(&missing)], 1);
    assert!(err.contains(arg(&missing)), "{err}");
}

#[test]
fn malformed_csv_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    // `1,2\nfoo,3`: the first problem is on line 1 (a diagonal entry that is not 0).
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "1,2\nfoo,3\n").unwrap();
    let err = run_fail(&["infer", "--from-matrix", arg(&bad)], 1);
    assert!(err.contains(&format!("{}:1: ", bad.display())), "{err}");
    assert!(err.contains("diagonal entry is \"1\""), "{err}");

    // With a valid diagonal, the bad value of line 2 is named.
    let bad2 = dir.path().join("bad2.csv");
    std::fs::write(&bad2, "0,2\nfoo,0\n").unwrap();
    let err = run_fail(&["infer", "--from-matrix", arg(&bad2)], 1);
    assert!(err.contains(&format!("{}:2: ", bad2.display())), "{err}");
    assert!(err.contains("not a number: \"foo\""), "{err}");

    // show reads matrices the same way.
    let err = run_fail(&["show", "--topology", arg(&bad2)], 1);
    assert!(err.contains(&format!("{}:2: ", bad2.display())), "{err}");
}

#[test]
fn bad_latencies_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for (content, wanted) in [
        ("0,-2\n-2,0\n", "negative latency"),
        ("0,nan\nnan,0\n", "is not a latency"),
        ("", "empty file"),
    ] {
        let f = dir.path().join("m.csv");
        std::fs::write(&f, content).unwrap();
        let err = run_fail(&["infer", "--from-matrix", arg(&f)], 1);
        assert!(err.contains(arg(&f)), "{content:?}: {err}");
        assert!(err.contains(wanted), "{content:?}: {err}");
    }
}

#[test]
fn one_by_one_matrix_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("one.csv");
    std::fs::write(&f, "0\n").unwrap();
    let err = run_fail(&["infer", "--from-matrix", arg(&f)], 1);
    assert!(err.contains(&format!("{}:1: ", f.display())), "{err}");
    assert!(err.contains("at least 2 hardware contexts"), "{err}");
}

#[test]
fn zero_sockets_is_rejected() {
    let p = data("nv-i7-6700k.csv");
    // Both are usage errors (exit 2): the option does not fit the input.
    let err = run_fail(&["infer", "--from-matrix", arg(&p), "--sockets", "0"], 2);
    assert!(
        err.contains("invalid value '0' for '--sockets <N>'"),
        "{err}"
    );
    let err = run_fail(&["infer", "--from-matrix", arg(&p), "--sockets", "9"], 2);
    assert!(
        err.contains("--sockets 9 is out of range for 8 contexts"),
        "{err}"
    );
}

#[test]
fn bad_ghz_is_rejected() {
    let p = data("nv-i7-6700k.csv");
    for bad in ["0", "-1", "nan", "fast"] {
        let err = run_fail(
            &["infer", "--from-matrix", arg(&p), &format!("--ghz={bad}")],
            2,
        );
        assert!(err.contains("for '--ghz <GHZ>'"), "{bad}: {err}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let p = data("nv-i7-6700k.csv");
    let err = run_fail(&["infer", "--from-matrix", arg(&p), "--bogus"], 2);
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    let err = run_fail(
        &["infer", "--from-matrix", arg(&p), "--units", "furlongs"],
        2,
    );
    assert!(
        err.contains("invalid value 'furlongs' for '--units <UNITS>'"),
        "{err}"
    );
    let err = run_fail(&["infer", "--from-matrix", arg(&p), "--format", "xml"], 2);
    assert!(err.contains("invalid value 'xml'"), "{err}");
    let err = run_fail(&["infer", "--from-matrix", arg(&p), "--sockets", "two"], 2);
    assert!(err.contains("invalid value 'two'"), "{err}");
    let err = run_fail(
        &[
            "infer",
            "--from-matrix",
            arg(&p),
            "--from-mct",
            arg(&data("lpdpc4.mct")),
        ],
        2,
    );
    assert!(err.contains("cannot be used with"), "{err}");
    let err = run_fail(&["show", "--topology"], 2);
    assert!(err.contains("--topology <FILE>"), "{err}");
    let err = run_fail(&["frobnicate"], 2);
    assert!(
        err.contains("unrecognized subcommand 'frobnicate'"),
        "{err}"
    );
    run_fail(&[], 2);
}

#[test]
fn cycles_units_are_used() {
    let v = json(&infer_matrix(
        "nv-i7-6700k.csv",
        &["--units", "cycles", "--json"],
    ));
    assert_eq!(v["units"], "cycles");
    assert_eq!(v["provenance"]["parameters"]["units"], "cycles");
    assert_has(
        &infer_matrix("nv-i7-6700k.csv", &["--units", "cycles"]),
        &["units: cycles"],
    );
}

// ---------------------------------------------------------------------------------------
// Help and version

#[test]
fn every_command_has_help() {
    for (args, usage) in [
        (vec!["--help"], "Usage: topoprobe <COMMAND>"),
        (vec!["-h"], "Usage: topoprobe <COMMAND>"),
        (vec!["help"], "Usage: topoprobe <COMMAND>"),
        (vec!["infer", "--help"], "Usage: topoprobe infer [OPTIONS]"),
        (vec!["infer", "-h"], "Usage: topoprobe infer [OPTIONS]"),
        (vec!["help", "infer"], "Usage: topoprobe infer [OPTIONS]"),
        (vec!["show", "--help"], "Usage: topoprobe show [OPTIONS]"),
        (vec!["show", "-h"], "Usage: topoprobe show [OPTIONS]"),
        (
            vec!["matrix", "--help"],
            "Usage: topoprobe matrix [OPTIONS]",
        ),
        (
            vec!["latency", "--help"],
            "Usage: topoprobe latency [OPTIONS] <A> <B>",
        ),
    ] {
        let out = run_ok(&args);
        assert!(out.contains(usage), "{args:?}:\n{out}");
    }
    let top = run_ok(&["--help"]);
    assert_has(
        &top,
        &[
            "infer Measure this machine",
            "show Show a topology",
            "matrix Measure and print the core-to-core latency matrix",
            "latency Measure the latency between two hardware contexts",
        ],
    );
    let infer = run_ok(&["infer", "--help"]);
    for opt in [
        "--from-matrix <FILE>",
        "--from-mct <FILE>",
        "--units <UNITS>",
        "--sockets <N>",
        "--smt <yes|no>",
        "--ghz <GHZ>",
        "--format <FORMAT>",
        "--json",
        "-o, --output <FILE>",
        "--cpus <CPUS>",
        "--reps <N>",
        "--max-stdev <PERCENT>",
        "--full",
        "--seed <N>",
    ] {
        assert!(infer.contains(opt), "{opt} not in infer --help");
    }
}

#[test]
fn version_is_printed() {
    // The version first, then the build (commit, profile, features: tests/packaging.rs).
    let v = env!("CARGO_PKG_VERSION");
    for flag in ["--version", "-V"] {
        bin()
            .arg(flag)
            .assert()
            .success()
            .stdout(predicate::str::starts_with(format!(
                "topoprobe {v} (commit "
            )));
    }
    // Subcommands print their own name with the version.
    for cmd in ["infer", "show"] {
        bin()
            .args([cmd, "--version"])
            .assert()
            .success()
            .stdout(predicate::str::starts_with(format!(
                "topoprobe-{cmd} {v} ("
            )))
            .stdout(predicate::str::ends_with(")\n"));
    }
}

// ---------------------------------------------------------------------------------------
// A closed standard output

/// A symmetric 96-context matrix: two sockets of 48 cores (about 50 and 150 ns).
fn big_matrix() -> String {
    let n = 96;
    let mut s = String::new();
    for a in 0..n {
        let row: Vec<String> = (0..n)
            .map(|b| {
                if a == b {
                    String::new()
                } else if a / 48 == b / 48 {
                    format!("{}", 50.0 + ((a + b) % 7) as f64 * 0.5)
                } else {
                    format!("{}", 150.0 + ((a * b) % 5) as f64)
                }
            })
            .collect();
        s.push_str(&row.join(","));
        s.push('\n');
    }
    s
}

#[test]
fn closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("big.csv");
    std::fs::write(&csv, big_matrix()).unwrap();
    let big = dir.path().join("big.json");
    bin()
        .args(["infer", "--from-matrix", arg(&csv), "--json", "-o"])
        .arg(&big)
        .assert()
        .success();
    for format in ["json", "mct"] {
        // Far more than a pipe holds, so the writer meets the closed pipe.
        let args = [
            "show",
            "--topology",
            arg(&big),
            "--format",
            format,
            "--ghz",
            "3",
        ];
        let full = run_ok(&args);
        assert!(full.len() > 1 << 16, "{format}: {} bytes", full.len());
        let mut child = StdCommand::new(exe())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).unwrap();
        assert_eq!(first, format!("{}\n", full.lines().next().unwrap()));
        // The reader is dropped here: the pipe is closed.
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{format}: {status:?}: {stderr}");
        assert_eq!(stderr, "", "{format}");
    }
}
