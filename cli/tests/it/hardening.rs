//! Regressions of the first-user hardening pass at the command line: formats chosen by
//! the extension of `-o`, missing directories, exit codes and usage lines, links and modes
//! of replaced files, standard input and size caps, `run`'s checks and child handling,
//! `--ghz`, and readable texts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{data, exe, run};

/// How long a test waits for a process (to start, to end) before it fails: a failure
/// message, not a guess at how long it takes.
const PATIENCE: Duration = Duration::from_secs(120);

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Row 4: the extension of -o picks the format; a conflicting --format or picture flag is
/// a usage error.
#[test]
fn the_extension_of_the_output_picks_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let m = data("nv-i7-6700k.csv");
    let json = dir.path().join("t.json");
    let (code, _, err) = run(&["show", "--topology", s(&m), "-o", s(&json)]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.trim_start().starts_with('{'), "{text}");
    let (code, _, err) = run(&[
        "show",
        "--topology",
        s(&m),
        "--format",
        "tsv",
        "-o",
        s(&json),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Usage: topoprobe show"), "{err}");
    let svg = dir.path().join("g.svg");
    let (code, _, err) = run(&["show", "--topology", s(&m), "--png", "-o", s(&svg)]);
    assert_eq!(code, 2, "{err}");
    let png = dir.path().join("g.png");
    let (code, _, err) = run(&["show", "--topology", s(&m), "--svg", "-o", s(&png)]);
    assert_eq!(code, 2, "{err}");
    assert!(!png.exists() && !svg.exists());
}

/// Row 5: the README's .mct export names what it needs when the description has no clock
/// rate, and works with --ghz.
#[test]
fn mct_export_of_a_description_says_what_to_add() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let m = data("nv-i7-6700k.csv");
    assert_eq!(run(&["infer", "--from-matrix", s(&m), "-o", s(&json)]).0, 0);
    let (code, _, err) = run(&["show", "--topology", s(&json), "--format", "mct"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--ghz") && err.contains("no clock frequency recorded"),
        "{err}"
    );
    let (code, out, err) = run(&[
        "show",
        "--topology",
        s(&json),
        "--format",
        "mct",
        "--ghz",
        "2.8",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with('#'));
}

/// Row 7: a missing directory is an error naming it; nothing is created.
#[test]
fn a_missing_output_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("nonexistent/dir/x.json");
    let (code, _, err) = run(&[
        "show",
        "--topology",
        s(&data("nv-i7-6700k.csv")),
        "-o",
        s(&target),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("nonexistent/dir") && err.contains("no such directory"),
        "{err}"
    );
    assert!(!dir.path().join("nonexistent").exists());
}

/// Row 16: implausible clock frequencies are usage errors.
#[test]
fn implausible_frequencies_are_refused() {
    let m = data("nv-i7-6700k.csv");
    for ghz in ["1e308", "0.01"] {
        let (code, out, err) = run(&["show", "--topology", s(&m), "--format", "mct", "--ghz", ghz]);
        assert_eq!(code, 2, "--ghz {ghz}: {out}{err}");
    }
}

/// Row 18: JSON given as a matrix says to use --topology.
#[test]
fn json_given_as_a_matrix_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    assert_eq!(
        run(&[
            "infer",
            "--from-matrix",
            s(&data("nv-i7-6700k.csv")),
            "-o",
            s(&json)
        ])
        .0,
        0
    );
    let (code, _, err) = run(&["infer", "--from-matrix", s(&json)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("this is JSON") && err.contains("--topology"),
        "{err}"
    );
}

/// Row 20: usage errors exit 2 with the command's usage line.
#[test]
fn usage_errors_exit_2_with_the_commands_usage() {
    let m = data("nv-i7-6700k.csv");
    let (code, _, err) = run(&["infer", "--from-matrix", s(&m), "--cpus", "0-3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Usage: topoprobe infer"), "{err}");
    let (code, _, err) = run(&["infer", "--from-matrix", s(&m), "--sockets", "1000"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(&["latency", "1", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Usage: topoprobe latency"), "{err}");
}

/// Row 21: replacing an -o target follows its link and keeps its mode.
#[cfg(unix)]
#[test]
fn replacing_a_file_keeps_its_link_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(&[
        "show",
        "--topology",
        s(&data("nv-i7-6700k.csv")),
        "-o",
        s(&link),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real).unwrap().starts_with('{'));
    assert_eq!(
        std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// Row 22: `-` is standard input; an endless file is refused at once.
#[test]
fn standard_input_and_endless_files() {
    let m = std::fs::read(data("nv-i7-6700k.csv")).unwrap();
    let mut child = Command::new(exe())
        .args(["infer", "--from-matrix", "-", "--format", "tsv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &m).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("cpu\tcore"));
    if Path::new("/dev/zero").exists() {
        // Refused at once rather than read forever: a run that has not ended after
        // PATIENCE fails the test (a guard against a hang, not a measurement).
        let mut child = Command::new(exe())
            .args(["infer", "--from-matrix", "/dev/zero"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > PATIENCE {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("an endless file was still being read after {PATIENCE:?}");
            }
            // A bounded poll: the refusal ends the process.
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("binary data"), "{err}");
    }
}

/// Row 1 at the command line: 10⁸ nodes are refused naming the limit.
#[test]
fn a_hundred_million_nodes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.mct");
    std::fs::write(
        &big,
        "#h #HWCs 2 #Nodes 100000000 SMT 0\n0 0 0\n0 1 10\n1 0 10\n1 1 0\n",
    )
    .unwrap();
    for cmd in ["show", "report"] {
        let (code, _, err) = run(&[cmd, "--topology", s(&big)]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("big.mct:1:") && err.contains("1024"), "{err}");
    }
}

/// Row 24: rounded latencies and singular counts.
#[test]
fn texts_round_and_count_right() {
    let (code, out, err) = run(&["show", "--topology", s(&data("kc-fx-8300.csv"))]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains("(1 pairs)") && !out.contains(" 1 groups"),
        "{out}"
    );
    let (code, _, err) = run(&[
        "place",
        "--policy",
        "rr_core",
        "--topology",
        s(&data("nv-i7-6700k.csv")),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = err.lines().find(|l| l.contains("Max latency")).unwrap();
    let num = line
        .split(':')
        .nth(1)
        .unwrap()
        .trim()
        .split(' ')
        .next()
        .unwrap();
    assert!(num.split('.').nth(1).is_none_or(|d| d.len() <= 1), "{line}");
}

/// A two-context topology of this machine's first two CPUs (or its only one, twice).
fn this_machine(dir: &Path) -> PathBuf {
    let p = dir.join("two.csv");
    std::fs::write(&p, ",10\n10,\n").unwrap();
    p
}

/// Row 8: a topology of another machine is a usage error before anything starts.
#[test]
fn run_refuses_cpus_this_machine_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let big = data("nv-2x-epyc-7742.csv");
    let (code, _, err) = run(&[
        "run",
        "--policy",
        "rr_core",
        "--topology",
        s(&big),
        "--",
        "touch",
        s(&marker),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("may not run on"), "{err}");
    assert!(!marker.exists());
}

/// Row 14: OMP_NUM_THREADS from the environment is kept.
#[test]
fn run_keeps_the_users_omp_variables() {
    let dir = tempfile::tempdir().unwrap();
    let two = this_machine(dir.path());
    let out = Command::new(exe())
        .args([
            "run",
            "--policy",
            "none",
            "--topology",
            s(&two),
            "--",
            "sh",
            "-c",
            "echo $OMP_NUM_THREADS",
        ])
        .env("OMP_NUM_THREADS", "8")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "8");
}

/// Row 13: a statically linked program gets a warning that its threads are not pinned.
#[test]
fn run_warns_about_static_programs() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let prog = dir.path().join("s");
    let built = Command::new("cc")
        .args(["-static", "-o", s(&prog), s(&src)])
        .status();
    if !built.is_ok_and(|b| b.success()) {
        eprintln!("skipped: no static C toolchain");
        return;
    }
    let cpus = topoprobe_sys::affinity::allowed_cpus().unwrap().to_vec();
    let (code, _, err) = run(&[
        "run",
        "--policy",
        "sequential",
        "-n",
        "1",
        "--cpus",
        &cpus[0].to_string(),
        "--topology",
        s(&this_machine(dir.path())),
        "--",
        s(&prog),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("statically linked"), "{err}");
}

/// Row 12: killing topoprobe (SIGKILL) ends the command too.
#[test]
fn run_ends_the_command_when_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // A program that waits to be killed (topoprobe's death ends it).
    let script = format!("echo $$ > {}; exec sleep 300", s(&pidfile));
    let mut child = Command::new(exe())
        .args([
            "run",
            "--policy",
            "none",
            "--topology",
            s(&this_machine(dir.path())),
            "--",
            "sh",
            "-c",
            &script,
        ])
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
        assert!(started.elapsed() < PATIENCE, "the command did not start");
        // A bounded poll: the command writes its pid file once it runs.
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for init.
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
    };
    let started = Instant::now();
    while !gone(pid) {
        assert!(
            started.elapsed() < PATIENCE,
            "the command outlived topoprobe"
        );
        // A bounded poll: the kernel ends the command as topoprobe dies.
        std::thread::sleep(Duration::from_millis(20));
    }
}

// Row 6 (Ctrl-C on a terminal reaches the command once) is checked for `run` and
// `autopin` in `signals.rs`, after the program's handshake.

/// Row 23: the measuring commands write their report with `-o` as the others do: JSON for
/// a `.json` name, atomically, nothing on standard output; `--json` with a file named for
/// text is a usage error.
#[test]
fn measuring_commands_write_their_report_with_o() {
    let dir = tempfile::tempdir().unwrap();
    let cpus = topoprobe_sys::affinity::allowed_cpus().unwrap();
    let ids: Vec<String> = cpus.iter().take(2).map(|c| c.to_string()).collect();
    if ids.len() == 2 {
        let file = dir.path().join("pair.json");
        let (code, out, err) = run(&["latency", &ids[0], &ids[1], "--reps", "50", "-o", s(&file)]);
        assert_eq!(code, 0, "{err}");
        assert!(out.is_empty(), "{out}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(v["median_ns"].as_f64().is_some(), "{v}");
    }
    // power is unavailable on most machines and says so, in the file too.
    let file = dir.path().join("power.txt");
    let (code, out, err) = run(&["power", "-o", s(&file)]);
    assert!(out.is_empty(), "{out}");
    if code == 0 {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("power"), "{text}");
    }
    let (code, _, err2) = run(&["power", "--json", "-o", s(&file)]);
    assert_eq!(code, 2, "{err} {err2}");
    assert!(err2.contains("--json conflicts with -o"), "{err2}");
    let missing = dir.path().join("no").join("cache.json");
    let (code, _, err) = run(&["cache", "-o", s(&missing)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no such directory"), "{err}");
}
