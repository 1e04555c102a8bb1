//! Signals of a program started by topoprobe (`autopin`, and `run`, which becomes the
//! program): SIGINT sent once to the process group of
//! topoprobe (what a terminal's Ctrl-C does to a foreground job) reaches the program
//! exactly once, 20 times in a row, and topoprobe exits with the program's status (its
//! own code when it handles the signal, 130 when it dies of it); `kill -9` of topoprobe
//! leaves no program running (`--keep-child` keeps it). Then the same with a terminal:
//! under `script` (a pseudo-terminal), Ctrl-C typed on the terminal reaches the program
//! once, and the program reads the terminal.
//!
//! topoprobe runs in a process group of its own here, with no terminal, so that the test
//! can signal its whole group as a terminal would.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;

use common::{exe, tmp, two_cpus};

/// How many times each check is repeated.
const TRIES: usize = 20;

/// The SIGINT counter (`tests/progs/sigcount.c`), built once.
fn sigcount() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/progs/sigcount.c");
        std::fs::create_dir_all(tmp()).expect("tmp dir");
        let out = tmp().join(format!("sigcount-{}", std::process::id()));
        let st = Command::new("gcc")
            .args(["-O1", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("gcc runs");
        assert!(st.success(), "cannot build sigcount.c");
        out.to_string_lossy().into_owned()
    })
}

/// The topoprobe commands that start a program, with their options (before `--`).
fn launchers() -> Vec<(&'static str, Vec<String>)> {
    let autopin = [
        "autopin",
        "--topology",
        two_cpus(),
        "--schedule",
        "0",
        "--initial-wait",
        "0",
    ];
    // `run` becomes the program (exec): the signal reaches it as it would reach the
    // program alone.
    let run = [
        "run",
        "--topology",
        two_cpus(),
        "--policy",
        "con_hwc",
        "-n",
        "1",
    ];
    vec![
        ("autopin", autopin.iter().map(ToString::to_string).collect()),
        ("run", run.iter().map(ToString::to_string).collect()),
    ]
}

/// The status a shell reports: the exit code, or 128 + the signal that ended the process
/// (`run` is the program itself, so a signal ends it directly).
fn shell_status(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

/// topoprobe `args -- sigcount mode` in a process group of its own, without a terminal;
/// returns it, its standard output (the program's) and the program's pid, once the
/// program is ready.
fn start(args: &[String], mode: &str) -> (Child, BufReader<ChildStdout>, i32) {
    let mut child = Command::new(exe())
        .args(args)
        .arg("--")
        .arg(sigcount())
        .arg(mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("topoprobe starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read");
    let pid = line
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the program did not start: {line:?}"));
    (child, out, pid)
}

/// `kill -SIG TARGET` (a negative target: a process group).
fn kill(sig: &str, target: i64) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg("--")
        .arg(target.to_string())
        .status()
        .expect("kill runs");
    assert!(st.success(), "kill -{sig} {target}");
}

/// Standard error of a finished child.
fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

#[test]
fn sigint_to_the_group_reaches_a_handling_program_once() {
    for (name, args) in launchers() {
        for i in 0..TRIES {
            let (mut child, mut out, _) = start(&args, "count");
            kill("INT", -i64::from(child.id()));
            let mut rest = String::new();
            out.read_to_string(&mut rest).expect("read");
            let status = child.wait().expect("wait");
            let err = stderr_of(&mut child);
            assert_eq!(
                rest.trim(),
                "sigint 1",
                "{name}, try {i}: the program's count\n{err}"
            );
            // The program handled it and exited 10 + 1: topoprobe exits alike.
            assert_eq!(shell_status(status), Some(11), "{name}, try {i}\n{err}");
        }
    }
}

#[test]
fn sigint_to_the_group_ends_a_program_that_keeps_the_default() {
    for (name, args) in launchers() {
        for i in 0..TRIES {
            let (mut child, mut out, _) = start(&args, "default");
            kill("INT", -i64::from(child.id()));
            let mut rest = String::new();
            out.read_to_string(&mut rest).expect("read");
            let status = child.wait().expect("wait");
            let err = stderr_of(&mut child);
            assert_eq!(rest, "", "{name}, try {i}");
            assert_eq!(shell_status(status), Some(130), "{name}, try {i}\n{err}");
        }
    }
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

#[test]
fn kill_9_of_run_is_the_end_of_the_program() {
    let (_, args) = &launchers()[1];
    let (mut child, _out, pid) = start(args, "count");
    assert_eq!(
        i64::from(pid),
        i64::from(child.id()),
        "run became the program"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert!(
        ended(pid),
        "program {pid} still runs after topoprobe was killed"
    );
}

#[test]
fn kill_9_of_autopin_ends_the_program_unless_it_is_kept() {
    let (_, args) = &launchers()[0];
    let (mut child, _out, pid) = start(args, "count");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    // The kernel kills the program as topoprobe dies: a bounded poll until it is gone
    // (20 s is a failure, not a guess at how long it takes).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ended(pid) && Instant::now() < deadline {
        // A bounded poll: the program is gone once the kernel has ended it.
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        ended(pid),
        "program {pid} still runs after topoprobe was killed"
    );

    // With --keep-child it runs on, and still counts: it answers a SIGINT of ours.
    let mut keep = args.clone();
    keep.push("--keep-child".into());
    let (mut child, mut out, pid) = start(&keep, "count");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert!(!ended(pid), "program {pid} ended with topoprobe");
    kill("INT", i64::from(pid));
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("read");
    assert_eq!(rest.trim(), "sigint 1");
}

/// A pseudo-terminal through `script`: `/bin/sh -c 'set -m; CMD'` runs on the terminal with
/// job control on, as a user's interactive shell runs a command line: each command is a job
/// in a process group of its own that owns the terminal while it runs, so Ctrl-C reaches the
/// job and not the shell. What is written to `script`'s standard input is typed on the
/// terminal. The shell is named, not taken from `$SHELL`: without job control `dash` dies of
/// the Ctrl-C meant for its job where `bash` waits for the job, and the test would measure
/// the shell.
fn on_a_terminal(cmd: &str) -> Option<Child> {
    let ok = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("no `script` here: the terminal test is skipped");
        return None;
    }
    Some(
        Command::new("script")
            .args(["-q", "-e", "-c", &format!("set -m; {cmd}"), "/dev/null"])
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("script starts"),
    )
}

#[test]
fn on_a_terminal_ctrl_c_reaches_the_program_once_and_it_reads_the_terminal() {
    for (name, args) in launchers() {
        let line = format!(
            "{} {} -- {} count; echo \"topoprobe exited $?\"",
            exe(),
            args.join(" "),
            sigcount()
        );
        let Some(mut script) = on_a_terminal(&line) else {
            return;
        };
        let mut out = BufReader::new(script.stdout.take().expect("stdout"));
        let mut seen = String::new();
        // The handshake: Ctrl-C is typed only once the program says its handler is set.
        loop {
            let mut l = String::new();
            if out.read_line(&mut l).expect("read") == 0 {
                panic!("{name}: the program did not start: {seen}");
            }
            seen.push_str(&l);
            if l.contains("ready") {
                break;
            }
        }
        // Ctrl-C typed on the terminal.
        let mut input = script.stdin.take().expect("stdin");
        input.write_all(b"\x03").expect("type");
        input.flush().expect("flush");
        let mut rest = String::new();
        out.read_to_string(&mut rest).expect("read");
        drop(input);
        script.wait().expect("wait");
        assert!(rest.contains("sigint 1"), "{name}: {seen}{rest}");
        assert!(rest.contains("topoprobe exited 11"), "{name}: {seen}{rest}");
    }
    let (_, args) = &launchers()[0];

    // The program owns the terminal while it runs: it reads it (from the background it
    // would be stopped by SIGTTIN instead).
    let line = format!(
        "{} {} -- sh -c 'read x; echo \"got $x\"'; echo \"topoprobe exited $?\"",
        exe(),
        args.join(" ")
    );
    let Some(mut script) = on_a_terminal(&line) else {
        return;
    };
    let mut input = script.stdin.take().expect("stdin");
    input.write_all(b"hello\n").expect("type");
    input.flush().expect("flush");
    let mut all = String::new();
    script
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut all)
        .expect("read");
    drop(input);
    script.wait().expect("wait");
    assert!(all.contains("got hello"), "{all}");
    assert!(all.contains("topoprobe exited 0"), "{all}");
}
