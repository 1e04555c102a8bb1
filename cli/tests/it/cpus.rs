//! `topoprobe cpus` and every `--cpus`: CPU sets named as hwloc-calc and likwid-pin name
//! them, checked against those tools. `hwloc-calc --input DIR` on six captured machines
//! (round-robin numbering, sub-NUMA clusters, a hybrid Intel, ARM clusters, offline CPUs)
//! and on this machine; `likwid-pin -p` on this machine; `place --cpus` on a description
//! of this machine giving what hwloc-calc gives; the measuring commands resolving names on
//! the operating system's view; the command's output paths and errors.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{arg, bin_in, outcome};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn ivy() -> PathBuf {
    root().join("data/examples/xeon-e5-2680v2-2s.mct")
}

/// Runs topoprobe with no description of this machine (`TOPOPROBE_FILE` points into an
/// empty directory): (exit status, standard output, standard error).
fn topoprobe(args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = bin_in(dir.path())
        .args(args)
        .output()
        .expect("topoprobe runs");
    outcome(&out)
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = topoprobe(args);
    assert_eq!(code, 0, "topoprobe {args:?}: {err}");
    out.trim().to_string()
}

/// Runs a tool, or `None` when it is not installed.
fn tool(name: &str, args: &[&str]) -> Option<(bool, String, String)> {
    let out = Command::new(name).args(args).output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    ))
}

/// Whether a tool is installed; when it is not, says so (a failure under CI, where the
/// setup script installs it).
fn have(name: &str) -> bool {
    if tool(name, &["--version"]).is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{name} is missing under CI (scripts/setup.sh installs it)"
    );
    eprintln!("note: {name} is not installed; its comparison is skipped");
    false
}

/// Expressions compared with hwloc-calc: every form of location and operator.
const EXPRESSIONS: &[&str] = &[
    "all",
    "pu:0",
    "pu:0-3",
    "pu:5",
    "pu:odd",
    "core:1",
    "core:0-2",
    "core:2-",
    "core:1:3",
    "core:all.pu:0",
    "core:all.pu:1",
    "package:0",
    "package:1",
    "package:1.core:0-1",
    "package:0.core:1.pu:1",
    "numanode:1",
    "node:0",
    "node:1.core:0",
    "package:1.node:0",
    "l3cache:1",
    "l2cache:3",
    "l1cache:2",
    "package:1.l3cache:0",
    "group:1",
    "package:0 ~core:0",
    "all xpackage:1",
    "core:0 ^pu:0-3",
];

/// Types compared with `hwloc-calc --intersect` and `--number-of`.
const TYPES: &[&str] = &[
    "pu", "core", "package", "node", "l3cache", "l2cache", "group",
];

/// Compares `topoprobe cpus` with `hwloc-calc` on the topology `input` (a sysfs root):
/// where topoprobe resolves an expression it prints what hwloc-calc prints; where it
/// refuses one (an index past the last object) hwloc-calc warns of it.
fn compare_with_hwloc(input: &Path) -> usize {
    let mut compared = 0;
    let topo = ["--topology", arg(input)];
    let h = |args: &[&str]| {
        let mut all = vec!["--input", arg(input)];
        all.extend_from_slice(args);
        tool("hwloc-calc", &all).expect("hwloc-calc runs")
    };
    for e in EXPRESSIONS {
        let words: Vec<&str> = e.split(' ').collect();
        let mut args = vec!["cpus", "--format", "hwloc"];
        args.extend_from_slice(&topo);
        args.extend_from_slice(&words);
        let (code, out, err) = topoprobe(&args);
        let (_, hout, herr) = h(&words);
        if code == 0 {
            assert_eq!(
                out.trim(),
                hout,
                "{}: `{e}` (hwloc-calc: {herr})",
                input.display()
            );
            compared += 1;
        } else {
            assert_eq!(code, 2, "{}: `{e}`: {err}", input.display());
            assert!(
                hout == "0x0" || !herr.is_empty(),
                "{}: topoprobe refuses `{e}` ({err}), hwloc-calc prints {hout}",
                input.display()
            );
        }
    }
    for ty in TYPES {
        for (ours, theirs) in [
            ("--intersect", "--intersect"),
            ("--number-of", "--number-of"),
        ] {
            let mut args = vec!["cpus", ours, ty];
            args.extend_from_slice(&topo);
            args.push("all");
            let (code, out, err) = topoprobe(&args);
            let (hok, hout, _) = h(&[theirs, ty, "all"]);
            if hok && !hout.is_empty() {
                assert_eq!(
                    (code, out.trim()),
                    (0, hout.as_str()),
                    "{}: {ours} {ty}: {err}",
                    input.display()
                );
                compared += 1;
            } else {
                // hwloc has no object of that type (no groups): topoprobe has none either.
                assert!(
                    code != 0 || out.trim().is_empty() || out.trim() == "0",
                    "{}: {ours} {ty}: {out}",
                    input.display()
                );
            }
        }
    }
    compared
}

/// Unpacks capture `name` of `measure/tests/data/sysfs` into `dir` and returns its root.
fn unpack(name: &str, dir: &Path) -> PathBuf {
    let tarball = root().join(format!("measure/tests/data/sysfs/{name}.tar.bz2"));
    let out = Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tar (needs tar and bzip2): {e}"));
    assert!(
        out.status.success(),
        "tar xjf {}: {}",
        tarball.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(name)
}

#[test]
fn hwloc_calc_agrees_on_captured_machines() {
    if !have("hwloc-calc") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for name in [
        "128arm-2pa2n8cluster4co",
        "16em64t-4s2c2t",
        "20em64t-hybrid-1p6c2t+2ca4co1t",
        "amd-zen3-vm-2c",
        "memorysidecaches",
        "offline-cpu0-node0",
    ] {
        let root = unpack(name, dir.path());
        let compared = compare_with_hwloc(&root);
        assert!(compared >= 15, "{name}: only {compared} comparisons");
    }
}

#[test]
fn hwloc_calc_agrees_on_this_machine() {
    if !have("hwloc-calc") {
        return;
    }
    let compared = compare_with_hwloc(Path::new("/"));
    assert!(compared >= 10, "only {compared} comparisons");
    // Without --topology nor a description: the operating system's view, as hwloc-calc.
    for e in ["all", "package:0.core:0-1", "core:0", "pu:0"] {
        let (_, h, _) = tool("hwloc-calc", &[e]).expect("hwloc-calc");
        if h != "0x0" {
            assert_eq!(ok(&["cpus", "--format", "hwloc", e]), h, "{e}");
        }
    }
}

/// The OS numbers hwloc-calc gives for the PUs of `location`, in its logical order.
fn hwloc_pus(location: &str) -> Vec<u32> {
    let (_, out, err) =
        tool("hwloc-calc", &["--po", "--intersect", "pu", location]).expect("hwloc-calc");
    out.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{location}: {out} {err}"))
        })
        .collect()
}

fn numbers(text: &str) -> Vec<u32> {
    text.trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("not a CPU list: {text}"))
        })
        .collect()
}

/// A description of this machine made from what its OS says: a latency matrix with a
/// gap between SMT siblings, cores of a package and packages, inferred; `None` when the
/// online CPUs are not numbered 0..n (a matrix's rows are).
fn described_this_machine(dir: &Path) -> Option<PathBuf> {
    let view = topoprobe_measure::os::current().expect("the OS view of this machine");
    let online = view.online();
    if online.len() < 2 || online.iter().enumerate().any(|(i, &c)| c as usize != i) {
        return None;
    }
    let n = online.len();
    let mut csv = String::new();
    for a in 0..n {
        let row: Vec<String> = (0..n)
            .map(|b| {
                let (x, y) = (&view.cpus[a], &view.cpus[b]);
                match () {
                    () if a == b => String::new(),
                    () if x.core_key() == y.core_key() => "10".into(),
                    () if x.package == y.package => "60".into(),
                    () => "200".into(),
                }
            })
            .collect();
        csv.push_str(&row.join(","));
        csv.push('\n');
    }
    let m = dir.join("this.csv");
    std::fs::write(&m, csv).expect("matrix");
    let d = dir.join("this.json");
    let sockets = view.num_packages().to_string();
    let smt = if view.smt() { "yes" } else { "no" };
    ok(&[
        "infer",
        "--from-matrix",
        arg(&m),
        "--sockets",
        &sockets,
        "--smt",
        smt,
        "-o",
        arg(&d),
    ]);
    Some(d)
}

/// The check: `place --cpus S0:0-1` and `--cpus package:0.core:0-1` give the CPUs
/// `hwloc-calc package:0.core:0-1 --intersect pu` gives (on a machine without SMT; with
/// SMT, `S0:0-1` is the first thread of each of those cores).
#[test]
fn place_cpus_match_hwloc_calc_on_this_machine() {
    if !have("hwloc-calc") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(desc) = described_this_machine(dir.path()) else {
        eprintln!("note: this machine's CPUs are not numbered 0..n; the place check is skipped");
        return;
    };
    let cores = if tool("hwloc-calc", &["-N", "core", "package:0"])
        .expect("hwloc-calc")
        .1
        == "1"
    {
        "0"
    } else {
        "0-1"
    };
    let location = format!("package:0.core:{cores}");
    let place = |cpus: &str| {
        let mut v = numbers(&ok(&[
            "place",
            "--policy",
            "none",
            "-q",
            "--cpus",
            cpus,
            "--topology",
            arg(&desc),
        ]));
        v.sort_unstable();
        v
    };
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v
    };
    let whole = sorted(hwloc_pus(&location));
    let firsts = sorted(hwloc_pus(&format!("{location}.pu:0")));
    assert_eq!(place(&location), whole);
    assert_eq!(place(&format!("S0:{cores}")), firsts);
    let smt = tool("hwloc-calc", &["-N", "pu", "core:0"])
        .expect("hwloc-calc")
        .1
        != "1";
    if !smt {
        assert_eq!(firsts, whole, "without SMT, S0:{cores} is {location}");
    }
    // The same on the operating system's view, in order.
    assert_eq!(
        numbers(&ok(&["cpus", "--format", "likwid", &format!("S0:{cores}")])),
        hwloc_pus(&format!("{location}.pu:0"))
    );
    assert_eq!(
        numbers(&ok(&["cpus", "--format", "likwid", &location])),
        hwloc_pus(&location)
    );
}

#[test]
fn likwid_pin_agrees_on_this_machine() {
    if !have("likwid-pin") {
        return;
    }
    let (_, s0, _) = tool("hwloc-calc", &["-N", "pu", "package:0"]).unwrap_or_default();
    let in_s0: usize = s0.parse().unwrap_or(1);
    let mut exprs = vec!["S0:0", "N:0", "C0:0", "M0:0", "S0", "E:S0:1", "S:scatter:1"];
    if in_s0 >= 2 {
        exprs.extend([
            "S0:0-1",
            "S0:1-0",
            "N:0-1",
            "E:N:2:1:1",
            "S0:0@S0:1",
            "S0:1,0",
            "L:S0:0-1",
        ]);
    }
    let mut compared = 0;
    for e in exprs {
        let Some((_, theirs, err)) = tool("likwid-pin", &["-c", e, "-p"]) else {
            return;
        };
        let theirs = theirs.lines().last().unwrap_or("").to_string();
        if theirs.is_empty() || !theirs.chars().all(|c| c.is_ascii_digit() || c == ',') {
            eprintln!("note: likwid-pin -c {e} -p printed {theirs:?} ({err}); not compared");
            continue;
        }
        assert_eq!(ok(&["cpus", "--format", "likwid", e]), theirs, "{e}");
        compared += 1;
    }
    assert!(compared >= 4, "only {compared} likwid expressions compared");
}

#[test]
fn measuring_commands_resolve_names_on_this_machine() {
    let (code, out, err) =
        topoprobe(&["matrix", "--cpus", "package:0.core:0-1", "--plan", "--json"]);
    if !err.contains("holds 1 core") {
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("latency pairs of 2 contexts"), "{out}");
    }
    assert_eq!(topoprobe(&["cache", "--cpus", "pu:0", "--plan"]).0, 0);
    let (code, _, err) = topoprobe(&["cache", "--cpus", "all", "--plan"]);
    if ok(&["cpus", "-N", "pu", "all"]) != "1" {
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--cpus all: the caches are measured on one CPU"),
            "{err}"
        );
    }
    let (code, _, err) = topoprobe(&["infer", "--cpus", "core:99999", "--plan"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--cpus core:99999: the topology has") && err.contains("cores"),
        "{err}"
    );
    assert!(err.contains("Usage: topoprobe infer"), "{err}");
    let (code, _, err) = topoprobe(&["matrix", "--cpus", "S0:", "--plan"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn place_takes_every_form_and_says_what_is_wrong() {
    let ivy = ivy();
    let place = |cpus: &str| {
        ok(&[
            "place",
            "--policy",
            "rr_core",
            "-n",
            "4",
            "-q",
            "--cpus",
            cpus,
            "--topology",
            arg(&ivy),
        ])
    };
    let want = "0,10,1,11";
    for cpus in [
        "0x3c0f",
        "0-1,10-11",
        "S0:0-1@S1:0-1",
        "package:all.core:0-1 ~pu:odd",
        "0x00000c03",
        "N:0-1 M1:0-1",
    ] {
        assert_eq!(place(cpus), want, "{cpus}");
    }
    for (cpus, says) in [
        (
            "package:2",
            "--cpus package:2: the topology has 2 packages (0-1)",
        ),
        (
            "S1:0-20",
            "--cpus S1:0-20: index 20: S1 has 20 hardware threads (0-19)",
        ),
        (
            "all l3cache:0",
            "--cpus \"all l3cache:0\": l3cache:0: the description does not say",
        ),
        ("0-40", "CPU 40 is not a hardware context"),
        ("core:0 xcore:1", "names no CPU"),
        ("pu:", "expected an index"),
    ] {
        let (code, _, err) = topoprobe(&[
            "place",
            "--policy",
            "rr_core",
            "--cpus",
            cpus,
            "--topology",
            arg(&ivy),
        ]);
        assert_eq!(code, 2, "{cpus}: {err}");
        assert!(err.contains(says), "{cpus}: {err}");
        assert!(err.contains("Usage: topoprobe place"), "{err}");
    }
}

#[test]
fn cpus_speaks_the_output_language() {
    let ivy = ivy();
    let t = ["--topology", arg(&ivy)];
    let cpus = |args: &[&str]| ok(&[&["cpus"], args, &t].concat());
    assert_eq!(cpus(&["S1:0-3"]), "10-13");
    assert_eq!(cpus(&["--format", "mask", "S1:0-3"]), "0x3c00");
    assert_eq!(cpus(&["--format", "hwloc", "pu:39"]), "0x00000080,0x0");
    assert_eq!(cpus(&["--format", "likwid", "all", "xS1:0-1"]), "10,11");
    assert_eq!(cpus(&["-N", "core", "pu:0-3"]), "2");
    assert_eq!(cpus(&["-I", "core", "S1:0-1"]), "10,11");
    let json: serde_json::Value =
        serde_json::from_str(&cpus(&["--json", "-I", "package", "pu:38-39"])).expect("JSON");
    assert_eq!(json["cpus"], serde_json::json!([19, 39]));
    assert_eq!(json["order"], serde_json::json!([19, 39]));
    assert_eq!(json["intersect"]["indexes"], serde_json::json!([1]));
    assert_eq!(json["intersect"]["type"], "package");
    assert_eq!(json["hwloc"], "0x00000080,0x00080000");
    assert!(json.get("number_of").is_none(), "{json}");
    let json: serde_json::Value =
        serde_json::from_str(&cpus(&["--json", "-N", "core", "pu:0-3"])).expect("JSON");
    assert_eq!(
        json["number_of"],
        serde_json::json!({ "type": "core", "count": 2 })
    );
    // hwloc's logical PUs 0-3 are the two threads of cores 0 and 1.
    assert_eq!(json["likwid"], "0,20,1,21");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("s.json");
    let _ = cpus(&["S0:0", "-o", arg(&file)]);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("written")).expect("JSON");
    assert_eq!(json["list"], "0");
    for (args, says) in [
        (
            vec!["--format", "mask", "-N", "core", "all"],
            "--number-of and --intersect print numbers",
        ),
        (vec!["-N", "cpu", "all"], "unknown object type \"cpu\""),
        (vec!["package:0", "-o", "x.png"], "does not write"),
        (vec!["pu:40"], "pu:40: the topology has 40 PUs (0-39)"),
    ] {
        let (code, _, err) = topoprobe(&[&["cpus"], args.as_slice(), &t].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A sysfs root names the OS's view; `-` cannot be an expression.
    assert!(!ok(&["cpus", "--topology", "/", "all"]).is_empty());
    assert_eq!(topoprobe(&["cpus"]).0, 2);
}
