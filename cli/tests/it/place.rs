//! Tests of `topoprobe place` and `topoprobe run`: the reference orders on the Ivy libmctop
//! file, the exports accepted by taskset, numactl, likwid-pin and an OpenMP program, `run`
//! pinning every thread of a C, a Rust and an OpenMP program to its planned context, exit
//! statuses, SIGTERM forwarding, and invalid requests (exit code 2).
//!
//! This machine may have as few as 2 CPUs: the programs run on a 2-CPU description (CPUs
//! 0 and 1, made with `topoprobe infer --from-matrix` from a 2x2 matrix).

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;

use common::{exe, preload, run_preloaded as topoprobe, tmp, two_cpus};

fn ivy() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lpdxeon2680.mct")
        .to_string_lossy()
        .into_owned()
}

fn ok(args: &[&str]) -> (String, String) {
    let o = topoprobe(args);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "topoprobe {args:?}: {err}");
    (out, err)
}

fn fails(args: &[&str], code: i32) -> String {
    let o = topoprobe(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "topoprobe {args:?}: {err}");
    assert!(o.stdout.is_empty());
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Compiles a test program with gcc (extra flags) or rustc.
fn build(src: &str, flags: &[&str]) -> String {
    let srcp = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/progs")
        .join(src);
    std::fs::create_dir_all(tmp()).expect("tmp dir");
    // One file per build: tests run in parallel and may build the same program.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = tmp().join(format!("{}-{n}", src.replace('.', "_")));
    let st = if src.ends_with(".rs") {
        Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("-O")
            .arg("-o")
            .arg(&out)
            .arg(&srcp)
            .status()
    } else {
        Command::new("gcc")
            .arg("-O1")
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(&srcp)
            .arg("-pthread")
            .status()
    }
    .expect("compiler runs");
    assert!(st.success(), "cannot build {src}");
    out.to_string_lossy().into_owned()
}

/// `who CPUs` lines, sorted.
fn lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .lines()
        .filter(|l| l.starts_with("main") || l.starts_with("thread"))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn ivy_reference_orders_and_summary() {
    let ivy = ivy();
    let (out, err) = ok(&[
        "place",
        "--policy",
        "CON_HWC",
        "-n",
        "12",
        "--topology",
        &ivy,
    ]);
    assert_eq!(out, "0,20,1,21,2,22,3,23,4,24,5,25\n");
    assert!(
        err.contains("# # Cores             : 6")
            && err.contains("Max latency          : 112 cycles"),
        "{err}"
    );
    for (p, want) in [
        ("con_core_hwc", "0,1,2,3,4,5,6,7,8,9,20,21"),
        ("con-core", "0,1,2,3,4,5,6,7,8,9,10,11"),
        ("balance_core", "0,1,2,3,4,5,10,11,12,13,14,15"),
        ("rr_hwc", "0,10,20,30,1,11,21,31,2,12,22,32"),
        ("rr_core", "0,10,1,11,2,12,3,13,4,14,5,15"),
    ] {
        let (out, _) = ok(&["place", "--policy", p, "-n", "12", "-q", "--topology", &ivy]);
        assert_eq!(out.trim(), want, "{p}");
    }
    let (json, _) = ok(&[
        "place",
        "--policy",
        "rr_scale",
        "--format",
        "json",
        "-q",
        "--topology",
        &ivy,
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        v["contexts"],
        serde_json::json!([0, 10, 1, 11, 2, 12, 3, 13])
    );
    assert_eq!(v["slots"][1]["socket"], 1);
    assert!(v["summary"]["power"]["total_w"].as_f64().is_some());
}

#[test]
fn invalid_requests_exit_2() {
    let ivy = ivy();
    let m2 = two_cpus();
    for (args, want) in [
        (
            vec!["place", "--policy", "compact", "--topology", &ivy],
            "unknown placement policy",
        ),
        (
            vec![
                "place",
                "--policy",
                "con_hwc",
                "-n",
                "41",
                "--topology",
                &ivy,
            ],
            "41 threads asked for, but only 40",
        ),
        (
            vec!["place", "--policy", "power", "--topology", m2],
            "POWER needs a power section",
        ),
        (
            vec!["place", "--policy", "rr_scale", "--topology", m2],
            "RR_SCALE needs the local read bandwidth",
        ),
        (
            vec![
                "place",
                "--policy",
                "con_hwc",
                "--cpus",
                "0,5",
                "--topology",
                m2,
            ],
            "CPU 5 is not a hardware context",
        ),
        (
            vec![
                "place",
                "--policy",
                "con_hwc",
                "--cpus",
                "zero",
                "--topology",
                m2,
            ],
            "--cpus",
        ),
        (
            vec![
                "place",
                "--policy",
                "con_hwc",
                "--kind",
                "e",
                "--topology",
                m2,
            ],
            "one kind of core",
        ),
        (
            vec![
                "run",
                "--policy",
                "rr_core",
                "-n",
                "3",
                "--topology",
                m2,
                "--",
                "true",
            ],
            "3 threads asked for",
        ),
        (
            vec![
                "run",
                "--policy",
                "rr_core",
                "--skip",
                "xyz",
                "--topology",
                m2,
                "--",
                "true",
            ],
            "--skip",
        ),
    ] {
        let err = fails(&args, 2);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn missing_description_says_to_infer() {
    let o = Command::new(exe())
        .args(["place", "--policy", "con_hwc"])
        .env("TOPOPROBE_FILE", tmp().join("no-such-description.json"))
        .output()
        .expect("runs");
    // It places from the operating system's view, and says how to measure.
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`topoprobe infer` measures it"), "{err}");
}

/// `topoprobe place` with a policy, thread count and export format on topology `topo`.
fn export(policy: &str, threads: &str, format: &str, topo: &str) -> (String, String) {
    ok(&[
        "place",
        "--policy",
        policy,
        "-n",
        threads,
        "-q",
        "--format",
        format,
        "--topology",
        topo,
    ])
}

/// Runs a shell command line (an exported command prefix and what it runs); it must
/// succeed. Returns its standard output.
fn shell(line: &str) -> String {
    let st = Command::new("sh").arg("-c").arg(line).output().expect("sh");
    assert!(
        st.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    String::from_utf8_lossy(&st.stdout).into_owned()
}

#[test]
fn exports_are_accepted_by_the_tools() {
    let m2 = two_cpus();
    let (taskset, _) = export("rr_core", "2", "taskset", m2);
    assert_eq!(taskset.trim(), "taskset -c 0-1");
    let st = shell(&format!(
        "{} grep Cpus_allowed_list /proc/self/status",
        taskset.trim()
    ));
    assert!(st.trim().ends_with("0-1"));

    let (numactl, _) = export("con_hwc", "1", "numactl", m2);
    assert_eq!(numactl.trim(), "numactl --physcpubind=0");
    let st = shell(&format!(
        "{} grep Cpus_allowed_list /proc/self/status",
        numactl.trim()
    ));
    assert!(st.trim().ends_with(":\t0"), "{}", st);

    let (likwid, _) = export("rr_core", "2", "likwid", m2);
    assert_eq!(likwid.trim(), "likwid-pin -c 0,1");
    let prog = build("affinity.c", &[]);
    let st = shell(&format!("{} -q {prog}", likwid.trim()));
    // likwid-pin pins the created thread to the second CPU; the main thread (which it
    // leaves on the whole list on some versions) starts on the first.
    let got = lines(&st);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0] == "main 0" || got[0] == "main 0-1", "{got:?}");
    assert_eq!(got[1], "thread1 1");

    // OpenMP reads the places: thread i on the i-th CPU of the placement.
    let (omp, _) = export("rr_core", "2", "omp", m2);
    let omp_prog = build("omp_affinity.c", &["-fopenmp"]);
    let mut cmd = Command::new(&omp_prog);
    for l in omp.lines() {
        let (k, v) = l.split_once('=').expect("NAME=value");
        cmd.env(k, v);
    }
    let out = cmd.output().expect("OpenMP program");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("places 2 threads 2"), "{text}");
    assert_eq!(lines(&text), vec!["thread0 0", "thread1 1"]);
}

#[test]
fn run_pins_every_thread_to_its_planned_context() {
    let m2 = two_cpus();
    let (planned, _) = ok(&[
        "place",
        "--policy",
        "rr_core",
        "-n",
        "2",
        "-q",
        "--topology",
        m2,
    ]);
    assert_eq!(planned.trim(), "0,1");
    for (prog, flags) in [
        ("affinity.c", vec![]),
        ("affinity.rs", vec![]),
        ("omp_affinity.c", vec!["-fopenmp"]),
    ] {
        let bin = build(prog, &flags);
        let (out, _) = ok(&[
            "run",
            "--policy",
            "rr_core",
            "-n",
            "2",
            "--topology",
            m2,
            "--",
            &bin,
        ]);
        let want = if prog.starts_with("omp") {
            vec!["thread0 0", "thread1 1"]
        } else {
            vec!["main 0", "thread1 1"]
        };
        assert_eq!(lines(&out), want, "{prog}: {out}");
    }
    // --skip 0x1: the first created thread is not pinned (it may use the placement's CPUs).
    let bin = build("affinity.c", &[]);
    let (out, _) = ok(&[
        "run",
        "--policy",
        "rr_core",
        "-n",
        "2",
        "--skip",
        "0x1",
        "--mem",
        "none",
        "--topology",
        m2,
        "--",
        &bin,
    ]);
    assert_eq!(lines(&out), vec!["main 0", "thread1 0-1"]);
    // The OpenMP environment is consistent with the placement.
    let (env, _) = ok(&[
        "run",
        "--policy",
        "rr_core",
        "-n",
        "2",
        "--topology",
        m2,
        "--",
        "env",
    ]);
    for want in [
        "OMP_NUM_THREADS=2",
        "OMP_PLACES={0},{1}",
        "OMP_PROC_BIND=close",
        "TOPOPROBE_PIN_CPUS=0,1",
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing");
    }
}

#[test]
fn run_exits_as_the_command_did() {
    let m2 = two_cpus();
    let base = [
        "run",
        "--policy",
        "con_hwc",
        "-n",
        "1",
        "--topology",
        m2,
        "--",
    ];
    let code = |cmd: &[&str]| topoprobe(&[&base[..], cmd].concat()).status.code();
    assert_eq!(code(&["true"]), Some(0));
    assert_eq!(code(&["sh", "-c", "exit 7"]), Some(7));
    // topoprobe becomes the program (exec): a signal ends it as it ends the program, and
    // the shell reports 128 + 9.
    let killed = topoprobe(&[&base[..], &["sh", "-c", "kill -9 $$"]].concat()).status;
    assert_eq!(killed.signal(), Some(9), "{killed:?}");
    // With a report, topoprobe stays the parent and exits 128 + signal itself.
    let reported = topoprobe(
        &[
            &base[..3],
            &["--json", "-o", "/dev/null"],
            &base[3..],
            &["sh", "-c", "kill -9 $$"],
        ]
        .concat(),
    );
    assert_eq!(reported.status.code(), Some(128 + 9));
    // A program that cannot be started: 127 (not found) or 126 (not executable), as
    // shells and `env` say.
    let err = fails(&[&base[..], &["/no/such/program"]].concat(), 127);
    assert!(err.contains("/no/such/program"), "{err}");
    let err = fails(&[&base[..], &["/etc/passwd"]].concat(), 126);
    assert!(err.contains("/etc/passwd"), "{err}");
}

/// `run` becomes the program: its process id is topoprobe's, and its parent is
/// topoprobe's parent.
#[test]
fn run_execs_the_program() {
    let m2 = two_cpus();
    let child = Command::new(exe())
        .args([
            "run",
            "--policy",
            "con_hwc",
            "-n",
            "1",
            "--topology",
            m2,
            "--",
        ])
        .args(["sh", "-c", "echo $$"])
        .env("TOPOPROBE_PRELOAD", preload())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pid.to_string());
}

/// An unknown option of `run` is a usage error, never taken for the program.
#[test]
fn run_refuses_unknown_options() {
    let m2 = two_cpus();
    for args in [
        vec![
            "run",
            "--policy",
            "rr_core",
            "--verbos",
            "--topology",
            m2,
            "--",
            "true",
        ],
        vec![
            "run",
            "--policy",
            "rr_core",
            "--topology",
            m2,
            "--frobnicate",
            "true",
        ],
        vec!["run", "--policy", "rr_core", "-x", "--", "true"],
    ] {
        let err = fails(&args, 2);
        assert!(err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(!err.contains("cannot run"), "{args:?}: {err}");
    }
    // After `--`, or from the first word that is not an option, everything is the
    // program's.
    let (out, _) = ok(&[
        "run",
        "--policy",
        "none",
        "--topology",
        m2,
        "echo",
        "-n",
        "--x",
    ]);
    assert_eq!(out, "--x");
}

/// `run --pin 1,0`: the main thread on CPU 1, the first created thread on CPU 0 (a set
/// would give 0 then 1); `place --pin` prints the exports that keep that order.
#[test]
fn run_pin_keeps_the_order() {
    let m2 = two_cpus();
    let bin = build("affinity.c", &[]);
    let (out, _) = ok(&["run", "--pin", "1,0", "--topology", m2, "--", &bin]);
    assert_eq!(lines(&out), vec!["main 1", "thread1 0"], "{out}");
    for (format, want) in [
        ("list", "1,0"),
        ("likwid", "likwid-pin -c 1,0"),
        ("gomp", "GOMP_CPU_AFFINITY=1,0"),
        (
            "kmp",
            "KMP_AFFINITY=granularity=fine,explicit,proclist=[1,0]",
        ),
        ("mpich", "-bind-to user:1,0"),
        ("intel-mpi", "I_MPI_PIN_PROCESSOR_LIST=1,0"),
        ("slurm", "--cpu-bind=map_cpu:1,0"),
    ] {
        let (out, _) = ok(&[
            "place",
            "--pin",
            "1,0",
            "--topology",
            m2,
            "--format",
            format,
        ]);
        assert_eq!(out.trim(), want, "--format {format}");
    }
    // A set named by the topology keeps the order it names its CPUs in.
    let (out, _) = ok(&["place", "--pin", "S0:1@S0:0", "--topology", m2]);
    assert_eq!(out.trim(), "1,0");
    let (omp, _) = ok(&["place", "--pin", "1,0", "--topology", m2, "--format", "omp"]);
    assert!(omp.lines().any(|l| l == "OMP_PLACES={1},{0}"), "{omp}");
    // The forms that bind the process to a set say that the order is lost.
    let (out, err) = ok(&[
        "place",
        "--pin",
        "1,0",
        "--topology",
        m2,
        "--format",
        "taskset",
    ]);
    assert_eq!(out.trim(), "taskset -c 0-1");
    assert!(err.contains("order"), "{err}");
    // A CPU the topology lacks, and --pin with --policy, are usage errors.
    let err = fails(&["place", "--pin", "1,7", "--topology", m2], 2);
    assert!(err.contains("CPU 7"), "{err}");
    fails(
        &[
            "place",
            "--pin",
            "1,0",
            "--policy",
            "rr_core",
            "--topology",
            m2,
        ],
        2,
    );
    fails(&["place", "--pin", "3-1", "--topology", m2], 2);
}

#[test]
fn run_forwards_sigterm() {
    let m2 = two_cpus();
    let mut child = Command::new(exe())
        .args([
            "run",
            "--policy",
            "con_hwc",
            "-n",
            "1",
            "--topology",
            m2,
            "--",
            "sh",
            "-c",
            // A program that waits to be killed (it says so once it runs).
            "echo started; exec sleep 60",
        ])
        .env("TOPOPROBE_PRELOAD", preload())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "started");
    let st = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(st.success());
    let status = child.wait().expect("wait");
    // topoprobe became the program: SIGTERM ended it directly (the shell's 143).
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}

/// The Open MPI rankfile runs under `mpirun` and every rank lands on the CPU it names;
/// the Slurm and Intel MPI forms carry the same CPUs in the same order.
#[test]
fn the_rankfile_places_the_ranks_of_mpirun() {
    let m2 = two_cpus();
    let mpirun_found = Command::new("mpirun").arg("--version").output().is_ok();
    if !mpirun_found {
        assert!(
            std::env::var_os("CI").is_none(),
            "mpirun is missing under CI: scripts/setup.sh --with-mpi"
        );
        eprintln!("skipped: mpirun not found (scripts/setup.sh --with-mpi)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (cpus, want) in [("1", vec!["1"]), ("0-1", vec!["0", "1"])] {
        let threads = want.len().to_string();
        let (rankfile, _) = ok(&[
            "place",
            "--policy",
            "con_hwc",
            "-n",
            &threads,
            "--cpus",
            cpus,
            "-q",
            "--format",
            "rankfile",
            "--topology",
            m2,
        ]);
        let file = dir.path().join("ranks");
        std::fs::write(&file, &rankfile).expect("rankfile");
        let out = Command::new("mpirun")
            .args([
                "--mca",
                "rmaps_rank_file_physical",
                "1",
                "--use-hwthread-cpus",
            ])
            .arg("--rankfile")
            .arg(&file)
            .args(["-np", &threads, "sh", "-c"])
            .arg("echo $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{rankfile}\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut got: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(r, c)| (r.to_string(), c.trim().to_string()))
            .collect();
        got.sort();
        let expect: Vec<(String, String)> = want
            .iter()
            .enumerate()
            .map(|(r, c)| (r.to_string(), (*c).to_string()))
            .collect();
        assert_eq!(got, expect, "{rankfile}");
        let (slurm, _) = ok(&[
            "place",
            "--policy",
            "con_hwc",
            "-n",
            &threads,
            "--cpus",
            cpus,
            "-q",
            "--format",
            "slurm",
            "--topology",
            m2,
        ]);
        assert_eq!(
            slurm.trim(),
            format!("--cpu-bind=map_cpu:{}", want.join(","))
        );
        let (intel, _) = ok(&[
            "place",
            "--policy",
            "con_hwc",
            "-n",
            &threads,
            "--cpus",
            cpus,
            "-q",
            "--format",
            "intel-mpi",
            "--topology",
            m2,
        ]);
        assert_eq!(
            intel.trim(),
            format!("I_MPI_PIN_PROCESSOR_LIST={}", want.join(","))
        );
    }
}

/// `hwloc-bind` takes the exported locations.
#[test]
fn the_hwloc_export_binds_with_hwloc_bind() {
    if Command::new("hwloc-bind")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "hwloc-bind is missing under CI"
        );
        eprintln!("skipped: hwloc-bind not found");
        return;
    }
    let (hwloc, _) = ok(&[
        "place",
        "--policy",
        "con_hwc",
        "-n",
        "1",
        "--cpus",
        "1",
        "-q",
        "--format",
        "hwloc",
        "--topology",
        two_cpus(),
    ]);
    assert_eq!(hwloc.trim(), "hwloc-bind --physical pu:1");
    let st = shell(&format!(
        "{} -- grep Cpus_allowed_list /proc/self/status",
        hwloc.trim()
    ));
    assert!(st.trim().ends_with(":\t1"), "{st}");
}
