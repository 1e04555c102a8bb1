//! Tests of how `topoprobe place` and `topoprobe run` speak: every example of
//! `docs/PLACEMENT.md` that says what it prints is run against its topology file and
//! checked (the docs cannot drift), the output paths of `place` (`-o -`, `--json`, the
//! extension of `-o`, refused extensions), the report of `run` (written where asked, the
//! program's output and exit status untouched), and `--use-sockets`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;

use common::{run_preloaded as topoprobe, two_cpus};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// The paper's Ivy machine (libmctop's file).
fn ivy() -> String {
    root()
        .join("data/examples/xeon-e5-2680v2-2s.mct")
        .to_string_lossy()
        .into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether `got` matches `pattern`, where `...` stands for any text.
fn matches(pattern: &str, got: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").map(str::trim).collect();
    let (first, rest) = parts.split_first().expect("a part");
    let Some(mut tail) = got.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        let last = i + 1 == rest.len();
        if last {
            return tail.ends_with(part);
        }
        match tail.find(part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    tail.is_empty()
}

/// The `topoprobe place` or `topoprobe cpus` command of an example line (inside `$(...)`,
/// or up to a `#`, a `>` or the end), as arguments after `topoprobe` (`'...'` is one).
fn command_of(line: &str) -> Option<Vec<String>> {
    let start = line
        .find("topoprobe place ")
        .or_else(|| line.find("topoprobe cpus "))?;
    let rest = &line[start..];
    let end = if line[..start].ends_with("$(") {
        rest.find(')')?
    } else {
        rest.find(['#', '>']).unwrap_or(rest.len())
    };
    let quoted: Vec<&str> = rest[..end].split('\'').collect();
    let mut args = Vec::new();
    for (i, part) in quoted.iter().enumerate() {
        if i % 2 == 1 {
            args.push((*part).to_string());
        } else {
            args.extend(part.split_whitespace().map(str::to_string));
        }
    }
    Some(args.into_iter().skip(1).collect())
}

/// Every line of `docs/PLACEMENT.md` that runs `topoprobe place` (or `topoprobe cpus`) and
/// says what it prints
/// (a `# output` comment) prints that on the topology the page names for its block
/// (`<!-- topology: FILE -->`).
#[test]
fn the_placement_examples_print_what_the_docs_say() {
    let doc = std::fs::read_to_string(root().join("docs/PLACEMENT.md")).expect("PLACEMENT.md");
    let mut topology: Option<PathBuf> = None;
    let mut in_block = false;
    let mut block_topology: Option<PathBuf> = None;
    let mut checked = 0;
    for (n, line) in doc.lines().enumerate() {
        let n = n + 1;
        if let Some(t) = line
            .trim()
            .strip_prefix("<!-- topology:")
            .and_then(|t| t.strip_suffix("-->"))
        {
            topology = Some(root().join(t.trim()));
            continue;
        }
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            // A marker names the topology of the next block only.
            block_topology = if in_block { topology.take() } else { None };
            continue;
        }
        if !in_block || command_of(line).is_none() {
            continue;
        }
        let Some((_, expected)) = line.rsplit_once(" # ") else {
            continue;
        };
        let topo = block_topology.as_ref().unwrap_or_else(|| {
            panic!("PLACEMENT.md:{n}: an example with its output, but no <!-- topology: FILE --> before its block")
        });
        assert!(topo.is_file(), "PLACEMENT.md:{n}: {}", topo.display());
        let mut args = command_of(line).unwrap_or_else(|| panic!("PLACEMENT.md:{n}: {line}"));
        args.extend([
            "--topology".to_string(),
            topo.to_string_lossy().into_owned(),
        ]);
        let o = topoprobe(&args);
        assert!(
            o.status.success(),
            "PLACEMENT.md:{n}: topoprobe {args:?}: {}",
            text(&o.stderr)
        );
        let got = text(&o.stdout)
            .lines()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            matches(expected.trim(), &got),
            "PLACEMENT.md:{n}: `{}` prints\n  {got}\nnot, as the page says,\n  {}",
            args.join(" "),
            expected.trim()
        );
        checked += 1;
    }
    // 11 placements and 23 CPU sets when this was written.
    assert!(
        checked >= 30,
        "only {checked} examples found in PLACEMENT.md"
    );
}

#[test]
fn the_pattern_matcher_is_strict() {
    assert!(matches("0x3c0f", "0x3c0f"));
    assert!(!matches("0xc03", "0x3c0f"));
    assert!(matches("0,10,1,...", "0,10,1,11,2"));
    assert!(!matches("0,10,1,...", "0,1,10"));
    assert!(matches("a ... c ... e", "a b c d e"));
    assert!(!matches("a ... c", "a b c d"));
    assert_eq!(
        command_of("env $(topoprobe place --policy x -q --format omp) ./p # OMP"),
        Some(
            ["place", "--policy", "x", "-q", "--format", "omp"]
                .map(String::from)
                .to_vec()
        )
    );
    assert_eq!(
        command_of("topoprobe place --policy x -n 8   # 0,1"),
        Some(
            ["place", "--policy", "x", "-n", "8"]
                .map(String::from)
                .to_vec()
        )
    );
}

fn place(extra: &[&str]) -> Output {
    let ivy = ivy();
    let mut args = vec![
        "place",
        "--policy",
        "rr_core",
        "-n",
        "4",
        "-q",
        "--topology",
        &ivy,
    ];
    args.extend(extra);
    topoprobe(&args)
}

#[test]
fn place_writes_where_it_is_told() {
    let plain = place(&[]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(text(&plain.stdout), "0,10,1,11\n");
    // -o - is standard output.
    let dash = place(&["-o", "-"]);
    assert!(dash.status.success(), "{}", text(&dash.stderr));
    assert_eq!(dash.stdout, plain.stdout);
    // --json: the CPUs, every slot, the summary and the OpenMP environment.
    let json = place(&["--json"]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["contexts"], serde_json::json!([0, 10, 1, 11]));
    assert_eq!(v["policy"], "RR_CORE");
    assert_eq!(v["slots"][1]["socket"], 1);
    assert_eq!(v["omp"][1]["value"], "{0},{10},{1},{11}");
    assert_eq!(v["summary"]["max_latency"].as_f64(), Some(308.0));
    assert_eq!(v["host"], "lpdxeon2680");
    // -o x.json: the extension picks JSON; nothing on standard output.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.json");
    let o = place(&["-o", &file.to_string_lossy()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("file")).expect("JSON");
    assert_eq!(written, v);
    // A .txt file takes any text form.
    let file = dir.path().join("cmd.txt");
    let o = place(&["--format", "taskset", "-o", &file.to_string_lossy()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "taskset -c 0-1,10-11\n"
    );
    // An extension of a kind place does not write, or one against --format: usage errors,
    // before anything is written.
    for extra in [
        vec!["-o", "x.png"],
        vec!["--format", "mask", "-o", "x.json"],
        vec!["--json", "-o", "x.txt"],
    ] {
        let path = dir.path().join(extra[extra.len() - 1]);
        let mut args: Vec<String> = extra.iter().map(|s| (*s).to_string()).collect();
        let last = args.len() - 1;
        args[last] = path.to_string_lossy().into_owned();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = place(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(o.stdout.is_empty(), "{extra:?}");
        assert!(!path.exists(), "{extra:?}");
        assert!(err.contains(extra[extra.len() - 1]), "{extra:?}: {err}");
    }
}

#[test]
fn use_sockets_is_how_many_sockets_to_use() {
    let ivy = ivy();
    let args = |s: &str| {
        vec![
            "place".to_string(),
            "--policy".into(),
            "balance_core".into(),
            "-n".into(),
            "8".into(),
            "-q".into(),
            s.to_string(),
            "2".into(),
            "--topology".into(),
            ivy.clone(),
        ]
    };
    let o = topoprobe(&args("--use-sockets"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "0,1,2,3,10,11,12,13\n");
    // `--sockets` is infer's hint that the machine has N sockets: not a placing option.
    let o = topoprobe(&args("--sockets"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--use-sockets"),
        "{}",
        text(&o.stderr)
    );
    let o = topoprobe(&["place", "--help"]);
    let help = text(&o.stdout);
    assert!(help.contains("--use-sockets <N>"), "{help}");
    assert!(!help.contains("--sockets <"), "{help}");
}

#[test]
fn the_summary_is_figure_7() {
    let ivy = ivy();
    let o = topoprobe(&[
        "place",
        "--policy",
        "con_hwc",
        "-n",
        "30",
        "--topology",
        &ivy,
    ]);
    assert!(o.status.success());
    let err = text(&o.stderr);
    for want in [
        "## topoprobe placement: CON_HWC",
        "# # Cores             : 15",
        "# HW contexts (30 )   : 0 20 1 21",
        "# # HW ctx / socket    : 20 10",
        "# # Cores / socket     : 10 5",
        "# Max latency          : 308 cycles",
        "# Min bandwidth        : 24.28 GB/s",
        "Watt",
    ] {
        assert!(err.contains(want), "{want:?} missing from\n{err}");
    }
}

/// `topoprobe run` on the 2-CPU description, `extra` before `--`, then `cmd`.
fn run_with(extra: &[&str], cmd: &[&str]) -> Output {
    let m2 = two_cpus();
    let mut args = vec!["run", "--policy", "rr_core", "-n", "2", "--topology", m2];
    args.extend(extra);
    args.push("--");
    args.extend(cmd);
    topoprobe(&args)
}

#[test]
fn run_writes_its_report_where_asked_and_keeps_the_exit_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("r.json");
    let f = file.to_string_lossy().into_owned();
    let o = run_with(&["--format", "json", "-o", &f], &["true"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "the program's output is its own");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("report")).expect("JSON");
    assert_eq!(v["exit_status"], 0);
    assert_eq!(v["command"], serde_json::json!(["true"]));
    assert_eq!(v["placement"]["contexts"], serde_json::json!([0, 1]));
    assert_eq!(v["memory"]["policy"], "local");
    let vars: Vec<&str> = v["environment"]
        .as_array()
        .expect("environment")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    for want in [
        "OMP_NUM_THREADS",
        "OMP_PLACES",
        "TOPOPROBE_PIN_CPUS",
        "LD_PRELOAD",
    ] {
        assert!(vars.contains(&want), "{want} missing: {v}");
    }
    assert!(
        v["preload"].as_str().is_some_and(|p| p.ends_with(".so")),
        "{v}"
    );

    // The program's status stands, and its output is untouched: the report (text by the
    // extension) goes to the file.
    let file = dir.path().join("r.txt");
    let f = file.to_string_lossy().into_owned();
    let o = run_with(&["-o", &f], &["sh", "-c", "echo out; exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "out\n");
    let report = std::fs::read_to_string(&file).expect("report");
    assert!(report.contains("exit status: 3"), "{report}");
    assert!(report.contains("2 threads on CPUs 0-1"), "{report}");

    // --json without -o: on standard error, after the program's own output.
    let o = run_with(&["--json"], &["sh", "-c", "echo out"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "out\n");
    let err = text(&o.stderr);
    let at = err.find("{\n").expect("the JSON report on standard error");
    let v: serde_json::Value = serde_json::from_str(&err[at..]).expect("JSON");
    assert_eq!(v["exit_status"], 0);

    // -o -: standard output, after the program's.
    let o = run_with(&["--json", "-o", "-"], &["sh", "-c", "echo out"]);
    let out = text(&o.stdout);
    assert!(out.starts_with("out\n{"), "{out}");

    // Without --format, --json or -o, nothing but the program's output.
    let o = run_with(&[], &["sh", "-c", "echo out"]);
    assert_eq!(text(&o.stdout), "out\n");
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));

    // A report file that cannot be written is refused before the program runs.
    let o = run_with(&["-o", "/no/such/dir/r.json"], &["sh", "-c", "echo ran"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    let o = run_with(&["-o", "r.png"], &["sh", "-c", "echo ran"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}
