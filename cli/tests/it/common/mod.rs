#![allow(dead_code)] // each test file uses a part of the helpers
//! Helpers shared by every test of the `topoprobe` binary: the binary, its fixtures, running
//! it, a scratch directory and a 2-CPU description.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::process::Output;
use std::sync::OnceLock;

/// The `topoprobe` binary.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_topoprobe")
}

/// A fixture of `tests/data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

/// A path as a command-line argument.
pub fn arg(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// The binary with this machine's description redirected into `dir` (where the tests
/// keep it, or have none).
pub fn bin_in(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(exe());
    c.env("TOPOPROBE_FILE", dir.join("machine.json"))
        .env_remove("XDG_DATA_HOME");
    c
}

/// (exit status, standard output, standard error) of a finished run; -1 when a signal
/// ended it.
pub fn outcome(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs topoprobe with this machine's description redirected into `dir` (see [`bin_in`]):
/// (exit status, standard output, standard error).
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = bin_in(dir).args(args).output().expect("running topoprobe");
    outcome(&out)
}

/// Runs topoprobe: (exit status, standard output, standard error).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(exe())
        .args(args)
        .output()
        .expect("running topoprobe");
    outcome(&out)
}

/// Runs topoprobe, asserts exit 0 and an empty standard error, and returns standard
/// output.
pub fn run_ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "topoprobe {args:?} failed: {err}");
    assert_eq!(err, "", "topoprobe {args:?} wrote to standard error");
    out
}

/// Runs topoprobe, asserts the exit status, and returns standard error.
pub fn run_fail(args: &[&str], code: i32) -> String {
    let (got, out, err) = run(args);
    assert_eq!(
        got, code,
        "topoprobe {args:?}: stdout {out:?} stderr {err:?}"
    );
    err
}

/// A scratch directory of the tests.
pub fn tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tuning-tests")
}

/// The latency matrix of a 2-CPU machine (CPUs 0 and 1, one socket), written as `m2.csv`
/// in `dir`; its path.
pub fn two_cpu_matrix(dir: &Path) -> PathBuf {
    let m = dir.join("m2.csv");
    std::fs::write(&m, ",50\n50,\n").expect("matrix");
    m
}

/// A description of a 2-CPU machine (CPUs 0 and 1, one socket, no SMT).
pub fn two_cpus() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tmp().join(format!("m2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let m = two_cpu_matrix(&dir);
        let out = dir.join("m2.json");
        let st = Command::new(exe())
            .args(["infer", "--from-matrix"])
            .arg(&m)
            .args(["--json", "-o"])
            .arg(&out)
            .output()
            .expect("infer");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        out.to_string_lossy().into_owned()
    })
}

/// The preload library: next to the binary when the workspace was built, otherwise built
/// here into a directory of its own (the build directory is locked by cargo test).
pub fn preload() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(exe()).parent().expect("bin dir");
        let next = dir.join("libtopoprobe_preload.so");
        if next.is_file() {
            return next;
        }
        let target = tmp().join("preload-target");
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let st = Command::new(cargo)
            .args(["build", "--offline", "-q", "-p", "topoprobe-preload"])
            .arg("--target-dir")
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build of the preload library");
        assert!(st.success());
        target.join("debug").join("libtopoprobe_preload.so")
    })
}

/// Runs topoprobe with the preload library of [`preload`] (`TOPOPROBE_PRELOAD`).
pub fn run_preloaded<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(exe())
        .args(args)
        .env("TOPOPROBE_PRELOAD", preload())
        .output()
        .expect("topoprobe runs")
}

/// Reads a running child's output without blocking it: its standard output whole (the
/// thread's result, once the child closes it) and its standard error line by line, as the
/// lines come (for a test that waits for a line before its next step).
pub fn stream_output(
    child: &mut std::process::Child,
) -> (
    std::thread::JoinHandle<Vec<u8>>,
    std::sync::mpsc::Receiver<String>,
) {
    use std::io::{BufRead, Read};
    let mut stdout = child.stdout.take().expect("stdout");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let (tx, lines) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (out, lines)
}
