//! Every file topoprobe opens or writes, tried as a hostile user would (issue "nothing
//! hangs, nothing is clobbered, nothing is read without bound"): opening never blocks
//! (FIFOs, `os --root`, `--powercap-root`), reading is bounded (`/dev/zero`, files over
//! their limit), writing changes nothing it should not (`-o` over a read-only file, into
//! a FIFO nothing reads), and a description of another machine is never used silently.
//!
//! [`every_file_argument_of_every_command_refuses_hostile_files_in_time`] finds the
//! arguments from the command line's own definition (`topoprobe file-arguments`), not
//! from a list kept here. Every run has a 15 s watchdog and, where GNU time is
//! installed, a peak resident memory under 64 MiB; nothing orders events by sleeping,
//! and no test asserts on wall time.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{data, exe};

/// The most a run may take: the 10 s that topoprobe waits for a FIFO, and room.
const WATCHDOG: Duration = Duration::from_secs(15);

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(st.success(), "mkfifo {}", p.display());
}

/// A two-context matrix: a topology of this machine's first two CPUs.
fn two(dir: &Path) -> PathBuf {
    let p = dir.join("two.csv");
    std::fs::write(&p, ",10\n10,\n").unwrap();
    p
}

/// What a run of topoprobe gave.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` (standard input closed) and waits at most [`WATCHDOG`] for it: a run that
/// takes longer is killed and fails the test with `what`.
fn within(mut cmd: Command, what: &str) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running topoprobe");
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut v);
            }
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + WATCHDOG;
    // A bounded poll of the child: the watchdog is a failure timeout, not a measure.
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for topoprobe") {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: still running after {} s (killed)",
                WATCHDOG.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// topoprobe with `args`, this machine's description redirected to `dir` (none there).
fn topoprobe(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    c.args(args);
    environment(&mut c, dir);
    c
}

/// The environment of every run here: this machine's description redirected to `dir`
/// (none there), no renderer or heartbeat page of the caller's.
fn environment(c: &mut Command, dir: &Path) {
    c.env("TOPOPROBE_FILE", dir.join("machine.json"))
        .env_remove("XDG_DATA_HOME")
        .env_remove("TOPOPROBE_DOT")
        .env_remove("TOPOPROBE_HEARTBEAT");
}

/// GNU time, to read a run's peak resident memory (`None` where it is not installed).
fn gnu_time() -> Option<&'static str> {
    let t = "/usr/bin/time";
    Command::new(t)
        .args(["-f", "%M", "true"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| t)
}

/// The most resident memory a run given a small hostile input may take.
const MAX_RSS_KIB: u64 = 64 << 10;

/// The line GNU time adds to standard error, before the peak in KiB.
const RSS_TAG: &str = "topoprobe-peak-rss-kib ";

/// Takes GNU time's lines out of `stderr`: the peak resident memory, in KiB, if given.
fn take_rss(stderr: &mut String) -> Option<u64> {
    let mut peak = None;
    let kept: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            if let Some(v) = l.strip_prefix(RSS_TAG) {
                peak = v.trim().parse().ok();
                false
            } else {
                !l.starts_with("Command exited with non-zero status")
                    && !l.starts_with("Command terminated by signal")
            }
        })
        .collect();
    let rest = kept.join("\n");
    *stderr = rest;
    peak
}

/// A fingerprint of everything under `dir` (type, mode, size and content of each
/// entry, the targets of links), but `skip` and what lies below it.
fn fingerprint(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(at: &Path, skip: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(at) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p == skip {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let t = m.file_type();
            let what = if t.is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if t.is_file() && m.len() > 16 << 20 {
                // A sparse file over a limit: its size and times, not its gigabytes.
                format!(
                    "file {} {:o} {} {}",
                    m.len(),
                    m.mode(),
                    m.mtime(),
                    m.mtime_nsec()
                )
            } else if t.is_file() {
                let bytes = std::fs::read(&p).unwrap_or_default();
                let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                format!("file {} {:o} {hash:x}", m.len(), m.mode())
            } else if t.is_dir() {
                walk(&p, skip, out);
                format!("dir {:o}", m.mode())
            } else {
                format!("{:?} {:o}", t, m.mode())
            };
            out.insert(p, what);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, skip, &mut out);
    out
}

/// Whether this process runs as root (who may write any file, as `>` may).
fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------
// Class 1: opening never blocks.

#[test]
fn os_root_naming_a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.tar");
    mkfifo(&fifo);
    let r = within(
        topoprobe(dir.path(), &["os", "--root", s(&fifo)]),
        "os --root FIFO",
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(s(&fifo)) && r.stderr.contains("a FIFO"),
        "{r:?}"
    );
}

/// A powercap tree of package 0 whose counters stand still.
fn powercap_tree(root: &Path) {
    let zone = root.join("intel-rapl:0");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    std::fs::write(zone.join("energy_uj"), "123456\n").unwrap();
    std::fs::write(zone.join("max_energy_range_uj"), "262143328850\n").unwrap();
}

#[test]
fn powercap_files_that_are_fifos_devices_or_huge_are_refused_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    for (i, kind) in ["fifo", "dev-zero", "sparse"].into_iter().enumerate() {
        let tree = dir.path().join(format!("powercap{i}"));
        powercap_tree(&tree);
        let energy = tree.join("intel-rapl:0/energy_uj");
        std::fs::remove_file(&energy).unwrap();
        match kind {
            "fifo" => mkfifo(&energy),
            // A device where powercap has a small file: read until memory ran out before.
            "dev-zero" => std::os::unix::fs::symlink("/dev/zero", &energy).unwrap(),
            _ => std::fs::File::create(&energy)
                .unwrap()
                .set_len(2 << 30)
                .unwrap(),
        }
        let before = fingerprint(dir.path(), Path::new(""));
        let r = within(
            topoprobe(
                dir.path(),
                &[
                    "power",
                    "--topology",
                    s(&m),
                    "--duration",
                    "0.1",
                    "--powercap-root",
                    s(&tree),
                ],
            ),
            kind,
        );
        assert_eq!(r.code, 1, "{kind}: {r:?}");
        assert!(
            r.stderr.contains("intel-rapl:0/energy_uj")
                || r.stdout.contains("intel-rapl:0/energy_uj"),
            "{kind}: {r:?}"
        );
        assert_eq!(before, fingerprint(dir.path(), Path::new("")), "{kind}");
    }
}

// ---------------------------------------------------------------------------------------
// Class 3: writing never changes what it should not.

/// `-o` over a read-only (0444) file of the user: replaced only where the shell's `>`
/// could write it. Root may (and `>` does): the file is replaced, its mode kept. An
/// unprivileged user may not: refused, the file byte for byte as it was. As root, the
/// second half runs as user `nobody` through `setpriv` when it is installed.
#[test]
fn output_over_a_read_only_file_is_replaced_only_where_the_shell_could() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let out = dir.path().join("kept.txt");
    std::fs::write(&out, "the user's own text\n").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o444)).unwrap();
    let r = within(
        topoprobe(dir.path(), &["show", "--topology", s(&m), "-o", s(&out)]),
        "show -o read-only",
    );
    let now = std::fs::read_to_string(&out).unwrap();
    if is_root() {
        assert_eq!(r.code, 0, "root may write any file, as `>` may: {r:?}");
        assert!(now.contains("hardware contexts"), "{now}");
    } else {
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stderr.contains("permission denied") && r.stderr.contains(s(&out)),
            "{r:?}"
        );
        assert_eq!(now, "the user's own text\n");
    }
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o444
    );
    if !is_root() {
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: no setpriv to try the read-only file as an unprivileged user");
        return;
    }
    // As `nobody` (65534), in a folder of its own, readable on the way down.
    let mut mode = std::fs::metadata(dir.path()).unwrap().permissions();
    mode.set_mode(0o755);
    std::fs::set_permissions(dir.path(), mode).unwrap();
    let theirs = dir.path().join("nobody");
    std::fs::create_dir(&theirs).unwrap();
    let input = two(&theirs);
    let out = theirs.join("kept.txt");
    std::fs::write(&out, "nobody's own text\n").unwrap();
    for p in [&theirs, &input, &out] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o444)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
        .args(["show", "--topology", s(&input), "-o", s(&out)])
        .env("TOPOPROBE_FILE", theirs.join("machine.json"));
    let r = within(cmd, "show -o read-only as nobody");
    if r.stderr.contains("setpriv:") {
        eprintln!("skipped: setpriv may not change user here: {}", r.stderr);
        return;
    }
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("permission denied") && r.stderr.contains(s(&out)),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "nobody's own text\n"
    );
    let names: Vec<String> = std::fs::read_dir(&theirs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

/// `-o FIFO` that nothing reads: an error naming it after the 10 s wait, not a hang.
#[test]
fn output_into_a_fifo_nothing_reads_fails_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    let r = within(
        topoprobe(dir.path(), &["show", "--topology", s(&m), "-o", s(&fifo)]),
        "show -o FIFO",
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(s(&fifo)) && r.stderr.contains("nothing read"),
        "{r:?}"
    );
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

// ---------------------------------------------------------------------------------------
// Class 5: a description of another machine is never used silently.

/// A description of a 256-context machine (two EPYC 7742), in `dir`.
fn big_description(dir: &Path) -> PathBuf {
    let json = dir.join("epyc.json");
    let r = within(
        topoprobe(
            dir,
            &[
                "infer",
                "--from-matrix",
                s(&data("nv-2x-epyc-7742.csv")),
                "--json",
                "-o",
                s(&json),
            ],
        ),
        "infer",
    );
    assert_eq!(r.code, 0, "{r:?}");
    json
}

#[test]
fn a_description_of_another_machine_is_never_used_silently() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim().is_empty() || online.contains("255") {
        eprintln!("skipped: this machine has CPU 255 online ({online:?})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = big_description(dir.path());
    // Saved as this machine's: not used; the OS's view is, with a note naming it.
    let mut c = topoprobe(dir.path(), &["place", "--policy", "rr_core", "-n", "1"]);
    c.env("TOPOPROBE_FILE", &json);
    let r = within(c, "place with another machine's TOPOPROBE_FILE");
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("is of another machine (256 contexts: CPUs 0-255)"),
        "{r:?}"
    );
    // Planning elsewhere with --topology keeps working, with a note.
    for args in [
        vec![
            "place",
            "--policy",
            "rr_core",
            "-n",
            "4",
            "--topology",
            s(&json),
        ],
        vec!["cpus", "--topology", s(&json), "core:0-1"],
    ] {
        let r = within(topoprobe(dir.path(), &args), args[0]);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("note:") && r.stderr.contains("another machine"),
            "{args:?}: {r:?}"
        );
    }
    // Acting on this machine's CPUs from it is refused, naming the machine: `run` on
    // CPUs this one lacks (on CPUs it has, with a warning), `autopin` and `balance`.
    let marker = dir.path().join("started");
    let r = within(
        topoprobe(
            dir.path(),
            &[
                "run",
                "--policy",
                "rr_core",
                "-n",
                "1",
                "--topology",
                s(&json),
                "--",
                "true",
            ],
        ),
        "run on CPU 0",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("warning:") && r.stderr.contains("another machine (256"),
        "{r:?}"
    );
    for args in [
        vec![
            "run",
            "--policy",
            "rr_core",
            "-n",
            "4",
            "--topology",
            s(&json),
            "--",
            "touch",
            s(&marker),
        ],
        vec![
            "autopin",
            "--topology",
            s(&json),
            "--schedule",
            "0",
            "--",
            "touch",
            s(&marker),
        ],
        vec![
            "balance",
            "--topology",
            s(&json),
            "--name",
            "^no-such-program$",
            "--duration",
            "0.1",
        ],
    ] {
        let r = within(topoprobe(dir.path(), &args), args[0]);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(
            r.stderr
                .contains("another machine (256 contexts: CPUs 0-255)"),
            "{args:?}: {r:?}"
        );
    }
    assert!(!marker.exists(), "nothing was started");
}

// ---------------------------------------------------------------------------------------
// The smaller things.

#[test]
fn a_huge_cpu_expression_is_echoed_elided() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let expr = format!("{}zz", "0-1,".repeat(15_000));
    for args in [
        vec![
            "place",
            "--policy",
            "rr_core",
            "--topology",
            s(&m),
            "--cpus",
            &expr,
        ],
        vec!["place", "--topology", s(&m), "--pin", &expr],
        vec!["cpus", "--topology", s(&m), &expr],
    ] {
        let r = within(topoprobe(dir.path(), &args), args[0]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.len() < 2000,
            "{} bytes: {}",
            r.stderr.len(),
            r.stderr
        );
        assert!(r.stderr.contains("more characters)"), "{}", r.stderr);
    }
}

#[test]
fn place_pin_with_a_thread_count_says_what_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let r = within(
        topoprobe(
            dir.path(),
            &["place", "--topology", s(&m), "--pin", "0,1", "-n", "5"],
        ),
        "place --pin -n 5",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("-n 5 with --pin's 2 CPUs") && r.stderr.contains("threads 3 to 5"),
        "{r:?}"
    );
    let r = within(
        topoprobe(
            dir.path(),
            &["place", "--topology", s(&m), "--pin", "0,1", "-n", "1"],
        ),
        "place --pin -n 1",
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("only the first 1 CPU"), "{r:?}");
}

#[test]
fn a_renderer_that_fails_or_hangs_is_said_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let failing = dir.path().join("failing-dot");
    std::fs::write(
        &failing,
        "#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n",
    )
    .unwrap();
    let hanging = dir.path().join("hanging-dot");
    // Answers -V, then never finishes (a child of the script holds the pipes).
    std::fs::write(
        &hanging,
        "#!/bin/sh\n[ \"$1\" = -V ] && exit 0\nsleep 1000\necho never\n",
    )
    .unwrap();
    for p in [&failing, &hanging] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let svg = dir.path().join("g.svg");
    let mut c = topoprobe(
        dir.path(),
        &["show", "--topology", s(&m), "--svg", "-o", s(&svg)],
    );
    c.env("TOPOPROBE_DOT", &failing);
    let r = within(c, "failing renderer");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("failing-dot -V failed") && r.stderr.contains("cannot open display"),
        "{r:?}"
    );
    assert!(!r.stderr.contains("not found"), "{r:?}");
    let mut c = topoprobe(
        dir.path(),
        &["show", "--topology", s(&m), "--svg", "-o", s(&svg)],
    );
    c.env("TOPOPROBE_DOT", &hanging)
        .env("TOPOPROBE_DOT_TIMEOUT", "1");
    let r = within(c, "hanging renderer");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("did not finish within 1 s"), "{r:?}");
    assert!(!svg.exists());
}

#[test]
fn max_memory_reaches_one_exbibyte() {
    let dir = tempfile::tempdir().unwrap();
    let m = two(dir.path());
    let r = within(
        topoprobe(
            dir.path(),
            &["cache", "--plan", "--topology", s(&m), "--max-memory", "1E"],
        ),
        "--max-memory 1E",
    );
    assert_eq!(r.code, 0, "{r:?}");
    let r = within(
        topoprobe(
            dir.path(),
            &["cache", "--plan", "--topology", s(&m), "--max-memory", "2E"],
        ),
        "--max-memory 2E",
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("1 EiB"), "{r:?}");
}

// ---------------------------------------------------------------------------------------
// Every file argument of every command.

/// One argument taking a file or folder, as `topoprobe file-arguments` lists it.
#[derive(Debug, Clone)]
struct FileArgument {
    command: Vec<String>,
    arg: String,
    flag: Option<String>,
    output: bool,
    flags: Vec<String>,
}

fn file_arguments() -> Vec<FileArgument> {
    let out = Command::new(exe())
        .arg("file-arguments")
        .output()
        .expect("topoprobe file-arguments");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let strings = |k: &str| -> Vec<String> {
                v[k].as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            FileArgument {
                command: strings("command"),
                arg: v["arg"].as_str().unwrap_or_default().to_string(),
                flag: v["flag"].as_str().map(String::from),
                output: v["output"].as_bool().unwrap_or(false),
                flags: strings("flags"),
            }
        })
        .collect()
}

/// What a command needs besides the argument tried, so that it reaches that argument and
/// does not measure this machine: its required arguments, a small topology of this
/// machine, `--plan` where an output is tried.
fn fillers(a: &FileArgument, two: &Path) -> (Vec<String>, Vec<String>) {
    let has = |f: &str| a.flags.iter().any(|x| x == f);
    let mut before: Vec<String> = Vec::new();
    let input_of_its_own = matches!(a.arg.as_str(), "from_matrix" | "from_mct");
    if a.arg != "topology" && !input_of_its_own {
        if has("--topology") {
            before.extend(["--topology".into(), s(two).into()]);
        } else if has("--from-matrix") {
            before.extend(["--from-matrix".into(), s(two).into()]);
        }
    }
    let from_matrix = before.iter().any(|x| x == "--from-matrix");
    if a.output && has("--plan") && !from_matrix {
        before.push("--plan".into());
    }
    let words = |w: &[&str]| w.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
    let mut after = Vec::new();
    match a.command.join(" ").as_str() {
        "latency" => after = words(&["0", "1"]),
        "cpus" => after = words(&["0"]),
        "place" => before.extend(words(&["--policy", "rr_core"])),
        "run" => {
            before.extend(words(&["--policy", "none"]));
            after = words(&["--", "true"]);
        }
        "autopin" => {
            before.extend(words(&[
                "--schedule",
                "0",
                "--initial-wait",
                "0",
                "--warmup",
                "0",
                "--measure",
                "0.1",
            ]));
            after = words(&["--", "true"]);
        }
        "balance" => before.extend(words(&["--name", "^no-such-program$", "--duration", "0.1"])),
        "power" => before.extend(words(&["--duration", "0.1"])),
        "completions" => after = words(&["bash"]),
        "bench locks" | "bench false-sharing" => {
            before.extend(words(&[
                "--duration",
                "0.01",
                "--runs",
                "1",
                "--threads",
                "1",
            ]));
        }
        "bench line-ops" => before.extend(words(&["--rounds", "1"])),
        "bench sort" | "bench reduce" => {
            before.extend(words(&["--size", "1K", "--runs", "1", "--threads", "1"]));
        }
        _ => {}
    }
    (before, after)
}

/// The hostile files: (name, made in `dir`, the path given).
fn hostile(dir: &Path, kind: &str) -> PathBuf {
    match kind {
        "fifo" => {
            let p = dir.join("fifo");
            mkfifo(&p);
            p
        }
        "dev-zero" => PathBuf::from("/dev/zero"),
        "link-loop" => {
            let a = dir.join("loop-a");
            std::os::unix::fs::symlink("loop-b", &a).unwrap();
            std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
            a
        }
        "folder" => {
            let p = dir.join("folder");
            std::fs::create_dir(&p).unwrap();
            p
        }
        "over-limit" => {
            // Sparse, over every limit of docs/LIMITS.md (the 4 GiB of a capture archive).
            let p = dir.join("huge");
            std::fs::File::create(&p)
                .unwrap()
                .set_len((4 << 30) + 1)
                .unwrap();
            p
        }
        "read-only" => {
            let p = dir.join("read-only");
            std::fs::write(&p, "keep\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
            p
        }
        other => panic!("{other}"),
    }
}

/// Runs one argument with one hostile file and checks the rules; `Err` says what broke.
fn try_one(a: &FileArgument, kind: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let two = two(dir.path());
    let bad = hostile(dir.path(), kind);
    let (before, after) = fillers(a, &two);
    let mut args: Vec<String> = a.command.clone();
    args.extend(before);
    if let Some(f) = &a.flag {
        args.push(f.clone());
    }
    args.push(s(&bad).to_string());
    args.extend(after);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let shown = format!("topoprobe {} ({kind})", refs.join(" "));
    let skip = if a.output {
        bad.clone()
    } else {
        PathBuf::new()
    };
    let was = fingerprint(dir.path(), &skip);
    let cmd = match gnu_time() {
        Some(time) => {
            let mut c = Command::new(time);
            c.args(["-f", &format!("{RSS_TAG}%M"), exe()]).args(&refs);
            environment(&mut c, dir.path());
            c
        }
        None => topoprobe(dir.path(), &refs),
    };
    let mut r = within(cmd, &shown);
    let peak = take_rss(&mut r.stderr);
    let now = fingerprint(dir.path(), &skip);
    if let Some(kib) = peak.filter(|&k| k > MAX_RSS_KIB) {
        return Err(format!(
            "{shown}: peak resident memory {kib} KiB, over {MAX_RSS_KIB} KiB"
        ));
    }
    if was != now {
        let changed: Vec<&PathBuf> = now
            .iter()
            .filter(|(p, v)| was.get(*p) != Some(*v))
            .map(|(p, _)| p)
            .chain(was.keys().filter(|p| !now.contains_key(*p)))
            .collect();
        return Err(format!("{shown}: changed {changed:?}"));
    }
    let named = r.stderr.contains(s(&bad));
    let ok = match (r.code, a.output, kind) {
        (1 | 2, _, _) => named,
        // Written in place, as `>` would: a device, root's write over a read-only file, or
        // a folder given to `manpages`.
        (0, true, "dev-zero" | "read-only" | "folder") => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{shown}: exit {}, the path {}named\n{}",
            r.code,
            if named { "" } else { "not " },
            r.stderr.chars().take(600).collect::<String>()
        ))
    }
}

#[test]
fn every_file_argument_of_every_command_refuses_hostile_files_in_time() {
    if gnu_time().is_none() {
        eprintln!("no GNU time (/usr/bin/time): the peak resident memory is not checked");
    }
    let arguments = file_arguments();
    assert!(arguments.len() > 20, "{arguments:?}");
    for must in [
        ("os", "root"),
        ("power", "powercap_root"),
        ("show", "topology"),
    ] {
        assert!(
            arguments
                .iter()
                .any(|a| a.command.join(" ") == must.0 && a.arg == must.1),
            "{must:?} is listed"
        );
    }
    let mut cases = Vec::new();
    for a in &arguments {
        let kinds: &[&str] = if a.output {
            &["fifo", "dev-zero", "link-loop", "folder", "read-only"]
        } else {
            &["fifo", "dev-zero", "link-loop", "folder", "over-limit"]
        };
        for k in kinds {
            cases.push((a.clone(), *k));
        }
    }
    // The FIFO cases wait (asleep) up to 10 s each: first, over many threads.
    cases.sort_by_key(|(_, k)| *k != "fifo");
    let queue = Mutex::new(cases.into_iter());
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..16 {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap().next();
                let Some((a, kind)) = next else { break };
                if let Err(e) = try_one(&a, kind) {
                    failures.lock().unwrap().push(e);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
