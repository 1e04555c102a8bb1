//! Tests of `topoprobe autopin` on this machine: two compute-bound threads tried on the
//! schedules 0:0 and 0:1 with the default metric (whichever this machine has: instructions
//! where counters work, else CPU time) and with `--metric cpu-time` (the JSON result in
//! the `-o` file, the live table and the text result on standard error, the program left
//! pinned by the best: it runs until the test closes its standard input, once the live
//! table showed the best), exit statuses, 128 + signal, SIGTERM forwarding, Ctrl-C (the
//! program finishes pinned by the best), and clear errors. Which schedule wins and by how much is a measurement: on a shared,
//! loaded machine the scheduler may give both the same CPU time, so that check is the
//! script `scripts/bench/autopin-2cpu.sh`, not a test.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;

use common::{exe, tmp, two_cpus};

/// The spinning test program (N threads, S seconds or until its standard input closes,
/// prints each thread's CPUs).
fn spin() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| build("spin_threads"))
}

/// An idle main thread and two spinning workers (S seconds or until its standard input
/// closes, prints the workers' CPUs).
fn idle_main() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| build("idle_main"))
}

/// Builds `tests/progs/NAME.c`.
fn build(name: &str) -> String {
    {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/progs/{name}.c"));
        std::fs::create_dir_all(tmp()).expect("tmp dir");
        let out = tmp().join(format!("{name}-{}", std::process::id()));
        let st = Command::new("gcc")
            .args(["-O1", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-pthread")
            .status()
            .expect("gcc runs");
        assert!(st.success(), "cannot build {name}.c");
        out.to_string_lossy().into_owned()
    }
}

fn topoprobe(args: &[&str]) -> Output {
    Command::new(exe())
        .args(args)
        .output()
        .expect("topoprobe runs")
}

/// How long the test waits for a line of autopin before it fails (a failure message, not a
/// guess at how long autopin takes).
const PATIENCE: Duration = Duration::from_secs(120);

/// Runs topoprobe `args` with its standard input (which the program it starts inherits) a
/// pipe of the test's: the test closes it once a line of topoprobe's standard error
/// satisfies `until` (or topoprobe ended), so that a program that runs until its standard
/// input closes ends after that event. Returns topoprobe's output.
fn run_until(args: &[&str], until: impl Fn(&str) -> bool) -> Output {
    let mut child = Command::new(exe())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("topoprobe starts");
    let (out, lines) = common::stream_output(&mut child);
    let mut err = String::new();
    let deadline = Instant::now() + PATIENCE;
    loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                err.push_str(&line);
                err.push('\n');
                if until(&line) {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{args:?}: the awaited line did not come within {PATIENCE:?}: {err}");
            }
        }
    }
    drop(child.stdin.take());
    for line in lines {
        err.push_str(&line);
        err.push('\n');
    }
    let status = child.wait().expect("wait");
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.into_bytes(),
    }
}

/// The end of autopin's first round (its best), or the only placement applied without a
/// search, or a warning (then the assertions say what went wrong).
fn first_best(line: &str) -> bool {
    line.starts_with("autopin: best")
        || line.starts_with("autopin: one placement only")
        || line.starts_with("autopin: warning")
}

/// The threads autopin judged idle during its initial wait (its report's `idle_threads`).
fn idle_threads(report: &serde_json::Value) -> Vec<u64> {
    report["idle_threads"]
        .as_array()
        .map(|v| v.iter().filter_map(serde_json::Value::as_u64).collect())
        .unwrap_or_default()
}

/// The quick phases used here.
const QUICK: [&str; 6] = ["--initial-wait", "0.3", "--warmup", "0.2", "--measure", "1"];

/// `threadN CPUs` lines of the program's output.
fn thread_cpus(out: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = out
        .lines()
        .filter(|l| l.starts_with("thread"))
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

fn two_threads_on_two_schedules(metric_arg: Option<&str>) {
    let m2 = two_cpus();
    let mut args = vec![
        "autopin",
        "--topology",
        m2,
        "--schedule",
        "0:0",
        "--schedule",
        "0:1",
    ];
    if let Some(m) = metric_arg {
        args.extend(["--metric", m]);
    }
    args.extend(QUICK);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("result.json");
    let file_arg = file.to_string_lossy().into_owned();
    args.extend(["-o", &file_arg, "--", spin(), "2", "stdin"]);
    let o = run_until(&args, first_best);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    // Standard output is the program's alone; the result is in the file.
    assert!(
        out.lines()
            .all(|l| l.starts_with("thread") || l == "started"),
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("result")).expect("JSON");
    // No heartbeats here: the default metric is instructions where counters work, else
    // CPU time; --metric cpu-time forces CPU time.
    let metric = report["metric"].as_str().expect("metric").to_string();
    match metric_arg {
        Some(m) => assert_eq!(metric, m, "{err}"),
        None => assert!(metric == "instructions" || metric == "cpu-time", "{err}"),
    }
    assert_eq!(report["exit_status"], 0);
    let cands = report["candidates"].as_array().expect("candidates");
    assert_eq!(cands.len(), 2);
    assert_eq!(cands[0]["name"], "0:0");
    assert_eq!(cands[1]["cpus"], serde_json::json!([0, 1]));
    for c in cands {
        assert!(c["score"].as_f64().is_some_and(|s| s > 0.0), "{c}");
        assert!(c["spread"].as_f64().is_some(), "{c}");
        let state = c["state"].as_str().expect("state");
        assert!(state == "measured" || state == "stopped-early", "{state}");
    }
    // The best is the higher score, and the program ended pinned by it.
    let score = |i: usize| cands[i]["score"].as_f64().unwrap_or(0.0);
    let best = &report["best"];
    let want = if score(1) > score(0) { "0:1" } else { "0:0" };
    assert_eq!(best["name"], want, "{report}");
    let cpus: Vec<u64> = best["cpus"]
        .as_array()
        .expect("cpus")
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    // Each thread runs on its CPU of the best. On a loaded machine autopin may judge a
    // busy thread idle during its initial wait (it got less than its share of a CPU): such
    // a thread may run on every CPU of the best, and the others take the positions in
    // creation order.
    let idle = idle_threads(&report);
    if !idle.is_empty() {
        eprintln!(
            "note: autopin judged threads {idle:?} idle during its initial wait (a loaded machine)"
        );
    }
    let pid = report["pid"].as_u64().expect("pid");
    let every = {
        let mut v: Vec<u32> = cpus.iter().filter_map(|&c| u32::try_from(c).ok()).collect();
        v.sort_unstable();
        v.dedup();
        topoprobe_model::format_cpu_list(&v)
    };
    let mut positions = cpus.iter().map(ToString::to_string);
    let mut want = |idle: bool| {
        if idle {
            every.clone()
        } else {
            positions.next().expect("a position")
        }
    };
    let main_cpus = want(idle.contains(&pid));
    let other_cpus = want(idle.iter().any(|&t| t != pid));
    assert_eq!(
        thread_cpus(&out),
        vec![
            ("thread0".to_string(), main_cpus),
            ("thread1".to_string(), other_cpus)
        ],
        "{out}{report}"
    );
    // The live table names the metric, each candidate and the best, with a plural right.
    assert!(err.contains(&format!("metric {metric}")), "{err}");
    assert!(
        err.contains("0:1") && err.contains("autopin: best") && err.contains("2 candidates"),
        "{err}"
    );
    assert!(err.contains("x as fast as"), "{err}");
    if metric_arg.is_none() {
        assert!(
            err.contains("unavailable"),
            "why better metrics were not used: {err}"
        );
    }
}

#[test]
fn two_compute_threads_default_metric() {
    two_threads_on_two_schedules(None);
}

#[test]
fn two_compute_threads_cpu_time() {
    two_threads_on_two_schedules(Some("cpu-time"));
}

#[test]
fn exit_status_and_signals_are_the_programs() {
    let m2 = two_cpus();
    let base = [
        "autopin",
        "--topology",
        m2,
        "--schedule",
        "0",
        "--initial-wait",
        "0",
        "--",
    ];
    let code = |cmd: &[&str]| topoprobe(&[&base[..], cmd].concat()).status.code();
    assert_eq!(code(&["true"]), Some(0));
    assert_eq!(code(&["sh", "-c", "exit 7"]), Some(7));
    assert_eq!(code(&["sh", "-c", "kill -9 $$"]), Some(128 + 9));
    // The result goes to standard error as text by default; standard output is the
    // program's.
    let o = topoprobe(&[&base[..], &["sh", "-c", "echo out; exit 7"]].concat());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "out\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("autopin: stopped (the program ended)")
            && err.contains("exited with status 7"),
        "{err}"
    );
    let o = topoprobe(&[&base[..], &["/no/such/program"]].concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/program"));
}

/// Starts autopin on `cmd` with stdout piped, and waits for the program's `started` line.
fn start(
    extra: &[&str],
    cmd: &[&str],
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let m2 = two_cpus();
    let mut args = vec!["autopin", "--topology", m2];
    args.extend(extra);
    args.push("--");
    args.extend(cmd);
    let mut child = Command::new(exe())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read");
    assert!(line.starts_with("started"), "{line}");
    (child, out)
}

fn kill(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(st.success());
}

#[test]
fn sigterm_is_forwarded() {
    let (mut child, _out) = start(
        &["--schedule", "0", "--initial-wait", "0"],
        // A program that waits to be killed (it says so once it runs).
        &["sh", "-c", "echo started; exec sleep 60"],
    );
    kill(child.id(), "TERM");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
}

#[test]
fn after_ctrl_c_the_program_finishes_pinned_by_the_best() {
    let (mut child, mut out) = start(
        &[
            "--schedule",
            "1:1",
            "--schedule",
            "0:0",
            "--initial-wait",
            "0.2",
            "--warmup",
            "0.1",
            "--measure",
            "0.6",
            "--json",
            "-o",
            "-",
        ],
        &[spin(), "2", "60"],
    );
    // Wait for the search to end (the best line on stderr), then interrupt autopin.
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).expect("read") == 0 {
            panic!("autopin ended early: {seen}");
        }
        seen.push_str(&line);
        if line.starts_with("autopin: best") {
            break;
        }
    }
    kill(child.id(), "INT");
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("read");
    let mut tail = String::new();
    err.read_to_string(&mut tail).expect("read");
    let status = child.wait().expect("wait");
    // The program handles SIGINT by finishing its work: it exits 0.
    assert_eq!(status.code(), Some(0), "{seen}{tail}");
    let json_start = rest.find("{\n").expect("JSON");
    let report: serde_json::Value = serde_json::from_str(&rest[json_start..]).expect("JSON");
    let best = report["best"]["cpus"][0]
        .as_u64()
        .expect("best")
        .to_string();
    assert_eq!(report["stopped_by"], "signal 2", "{report}");
    let lines = thread_cpus(&rest[..json_start]);
    assert_eq!(lines.len(), 2, "{rest}");
    for (_, cpus) in lines {
        assert_eq!(cpus, best, "{rest}");
    }
    assert_eq!(report["launched"], true, "{report}");
}

#[test]
fn an_idle_main_thread_is_left_out_and_sharing_a_cpu_is_tried() {
    // Two busy workers and an idle main thread on two CPUs: the candidates are planned
    // for the two workers, one CPU each and both on one CPU, and the better is kept.
    let m2 = two_cpus();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("result.json");
    let file_arg = file.to_string_lossy().into_owned();
    let o = run_until(
        &[
            "autopin",
            "--topology",
            m2,
            "--initial-wait",
            "0.5",
            "--warmup",
            "0.2",
            "--measure",
            "1",
            "-o",
            &file_arg,
            "--",
            idle_main(),
            "stdin",
        ],
        first_best,
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("result")).expect("JSON");
    // A loaded machine may give a busy worker less than its share of a CPU during the
    // initial wait: autopin then rightly judges it idle too (with the main thread), or,
    // both workers starved, judges no thread apart (every thread idle); it plans for the
    // threads it saw running. Both are seen here: a worker among the idle threads, or no
    // idle thread while the workers got less than one CPU between them.
    let idle = idle_threads(&report);
    let pid = report["pid"].as_u64().expect("pid");
    let starved = report["metric"] == "cpu-time"
        && report["candidates"].as_array().is_some_and(|c| {
            c.iter()
                .all(|c| c["score"].as_f64().is_some_and(|s| s < 1.0))
        });
    if (idle.len() > 1 && idle.contains(&pid)) || (idle.is_empty() && starved) {
        eprintln!(
            "skipped: the workers did not get their share of a CPU (a loaded machine): autopin \
             judged threads {idle:?} idle during its initial wait\n{err}{report}"
        );
        return;
    }
    assert_eq!(
        report["idle_threads"],
        serde_json::json!([report["pid"]]),
        "{report}"
    );
    assert!(
        err.contains("1 thread was idle during the initial wait (the main thread"),
        "{err}"
    );
    let cands = report["candidates"].as_array().expect("candidates");
    let cpus = |c: &serde_json::Value| -> Vec<u64> {
        c["cpus"]
            .as_array()
            .expect("cpus")
            .iter()
            .filter_map(serde_json::Value::as_u64)
            .collect()
    };
    let shared = cands.iter().find(|c| {
        let v = cpus(c);
        v.len() == 2 && v[0] == v[1]
    });
    let apart = cands.iter().find(|c| {
        let v = cpus(c);
        v.len() == 2 && v[0] != v[1]
    });
    let (Some(shared), Some(apart)) = (shared, apart) else {
        panic!("both placements of two workers must be tried: {report}");
    };
    for c in [shared, apart] {
        let state = c["state"].as_str().expect("state");
        assert!(state == "measured" || state == "stopped-early", "{c}");
        assert!(c["score"].as_f64().is_some(), "{c}");
    }
    // The better is kept, and the workers ended pinned by it.
    let best = cands
        .iter()
        .max_by(|a, b| {
            let s = |c: &serde_json::Value| c["score"].as_f64().unwrap_or(f64::MIN);
            s(a).total_cmp(&s(b))
        })
        .expect("a best");
    assert_eq!(report["best"]["name"], best["name"], "{report}");
    let b = cpus(&report["best"]);
    assert_eq!(
        thread_cpus(&out),
        vec![
            ("thread1".to_string(), b[0].to_string()),
            ("thread2".to_string(), b[1].to_string())
        ],
        "{out}"
    );
}

#[test]
fn nothing_tuned_is_a_failure_said_once() {
    // No heartbeat from a program asked to be scored by heartbeats: the program runs to
    // its end untouched (it ends when the test closes its standard input, once autopin
    // said it has no heartbeat), and autopin exits 1 although it exited 0.
    let m2 = two_cpus();
    let o = run_until(
        &[
            "autopin",
            "--topology",
            m2,
            "--metric",
            "heartbeat",
            "--initial-wait",
            "0.2",
            "--",
            "sh",
            "-c",
            "read x; exit 0",
        ],
        |line| line.contains("no heartbeat"),
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("no heartbeat").count(), 1, "{err}");
    assert!(err.contains("the program keeps its own CPU masks"), "{err}");
    assert!(err.contains("exited with status 0"), "{err}");
}

#[test]
fn unknown_options_are_refused_not_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("started");
    let marker_arg = marker.to_string_lossy().into_owned();
    let m2 = two_cpus();
    for args in [
        vec!["autopin", "--schedul", "0:1", "--", "touch", &marker_arg],
        vec![
            "autopin",
            "--topology",
            m2,
            "--json",
            "-o",
            "x.json",
            "--verbos",
            "--",
            "touch",
            &marker_arg,
        ],
        vec![
            "autopin",
            "--topology",
            m2,
            "--schedule",
            "0",
            "--nope",
            "touch",
            &marker_arg,
        ],
    ] {
        let o = topoprobe(&args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(!err.contains("started process"), "{args:?}: {err}");
        assert!(!marker.exists(), "{args:?} started the program");
    }
    // The program starts at the first word that is not an option, and its own options
    // are its own.
    let o = topoprobe(&[
        "autopin",
        "--topology",
        m2,
        "--schedule",
        "0",
        "--initial-wait",
        "0",
        "sh",
        "-c",
        "exit 4",
    ]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn bad_requests_are_clear() {
    let m2 = two_cpus();
    let usage = |args: &[&str], want: &str| {
        let o = topoprobe(args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    };
    usage(
        &["autopin", "--schedule", "0:x", "--", "true"],
        "position 1",
    );
    usage(
        &[
            "autopin",
            "--topology",
            m2,
            "--schedule",
            "0:7",
            "--",
            "true",
        ],
        "CPU 7 is not in the topology",
    );
    usage(&["autopin", "--topology", m2], "<CMD>");
    usage(
        &[
            "autopin",
            "--topology",
            m2,
            "--policies",
            "con_hwc",
            "--schedule",
            "0",
            "--",
            "true",
        ],
        "cannot be used with",
    );
    usage(
        &["autopin", "--topology", m2, "--measure", "0", "--", "true"],
        "--measure",
    );
    let o = topoprobe(&["autopin", "--topology", m2, "--pid", "2147483647"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("2147483647"));
}

/// A process of another user than `uid`, other than init (which is refused for being
/// init before its owner is looked at).
fn another_users_process(uid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let owner: u32 = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        (pid != 1 && owner != uid).then_some(pid)
    })
}

#[test]
fn another_users_process_is_refused_by_name() {
    // As root, run autopin as nobody against a process of root's; as another user, against
    // a process of someone else's.
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc_geteuid() };
    let m2 = two_cpus();
    let o = if euid == 0 {
        // A program that waits to be killed.
        let mut victim = Command::new("sleep").arg("300").spawn().expect("sleep");
        let pid = victim.id().to_string();
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
            .args([
                "autopin",
                "--topology",
                m2,
                "--schedule",
                "0",
                "--pid",
                &pid,
            ])
            .output()
            .expect("setpriv");
        victim.kill().ok();
        victim.wait().ok();
        o
    } else {
        let Some(pid) = another_users_process(euid) else {
            eprintln!("skipped: no process of another user to be refused here");
            return;
        };
        let pid = pid.to_string();
        let o = topoprobe(&[
            "autopin",
            "--topology",
            m2,
            "--schedule",
            "0",
            "--pid",
            &pid,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("does not exist") {
            // That process (not one of the test's) ended before autopin looked at it.
            eprintln!("skipped: the other user's process ended first: {err}");
            return;
        }
        o
    };
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if euid == 0 && err.contains("setpriv:") {
        eprintln!("skipped: setpriv itself is not permitted here: {err}");
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not permitted") && err.contains("belongs to user"),
        "{err}"
    );
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}
