//! Tests of `topoprobe balance` on this machine: two busy processes started with
//! `taskset -c C`, C the busier of CPUs 0 and 1 just before (one is moved to the other CPU
//! at the third look, and nothing moves after that; which CPU is idle does not matter),
//! `--advise` (the same decision, nothing moved), a run with nothing to do (it says why), a process that exits mid-run, one
//! that has its affinity changed under the balancer, one of another user, and bad
//! requests. How much CPU time the move gains is a measurement (the shared machine may
//! be loaded): `scripts/bench/balance-2cpu.sh`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

use crate::common;

use common::{exe, two_cpus};

/// The tests run one at a time: each judges the load of both CPUs, which the busy
/// processes of another test would change.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Busy and total time of CPUs 0 and 1 so far, from `/proc/stat`.
fn cpu_times() -> [(u64, u64); 2] {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let mut out = [(0, 0); 2];
    for (i, name) in ["cpu0 ", "cpu1 "].iter().enumerate() {
        let v: Vec<u64> = stat
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .expect("a CPU line")
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        let total: u64 = v.iter().take(8).sum();
        out[i] = (total - idle, total);
    }
    out
}

/// The share of time CPU `cpu` was busy between two readings of [`cpu_times`].
fn load(a: &[(u64, u64); 2], b: &[(u64, u64); 2], cpu: u32) -> f64 {
    let i = cpu as usize;
    let total = (b[i].1 - a[i].1).max(1) as f64;
    (b[i].0 - a[i].0) as f64 / total
}

/// `(crowded, free)`: the busier of CPUs 0 and 1 over a short look, and the other. The
/// busy processes are crowded on the busier one, so that the other is the better place
/// whichever CPU the rest of the machine uses. `None` when the other is busy too (more
/// than half of the time): then no CPU has room, and the balancer rightly moves nothing.
fn crowded_and_free() -> Option<(u32, u32)> {
    let a = cpu_times();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let b = cpu_times();
    let (crowded, free) = if load(&a, &b, 1) > load(&a, &b, 0) {
        (1, 0)
    } else {
        (0, 1)
    };
    if load(&a, &b, free) > 0.5 {
        eprintln!(
            "skipped: CPUs 0 and 1 are both busy (loads {:.2} and {:.2}): no CPU has room to \
             move a process to",
            load(&a, &b, 0),
            load(&a, &b, 1)
        );
        return None;
    }
    Some((crowded, free))
}

/// When the balancer made no decision: the free CPU must have become busy meanwhile (the
/// rest of the machine took it), else the balancer missed the move. `true`: skip.
fn free_cpu_was_taken(
    before: &[(u64, u64); 2],
    after: &[(u64, u64); 2],
    free: u32,
    err: &str,
) -> bool {
    let l = load(before, after, free);
    assert!(
        l > 0.5,
        "no decision although CPU {free} had room (busy {l:.2} of the time): {err}"
    );
    eprintln!("skipped: CPU {free} became busy too (busy {l:.2} of the time): no room to move to");
    true
}

/// A busy shell loop pinned to one CPU, killed on drop.
struct Busy(Child);

impl Busy {
    fn start(cpu: u32) -> Self {
        Self(
            Command::new("taskset")
                .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
                .spawn()
                .expect("taskset"),
        )
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    fn cpus(&self) -> String {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.0.id())).expect("status");
        s.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `balance` with `args`, its result as JSON on standard output (`-o -`).
fn balance(args: &[&str]) -> (Output, serde_json::Value) {
    let m2 = two_cpus();
    let o = Command::new(exe())
        .args(["balance", "--topology", m2, "--json", "-o", "-"])
        .args(args)
        .output()
        .expect("balance runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_slice(&o.stdout).expect("JSON report");
    (o, v)
}

/// `balance` on the two busy processes, with `extra` arguments.
fn on_pair(a: &Busy, b: &Busy, extra: &[&str]) -> (Output, serde_json::Value) {
    let (pa, pb) = (a.pid(), b.pid());
    let mut args = vec!["--pid", pa.as_str(), "--pid", pb.as_str()];
    args.extend(extra);
    balance(&args)
}

fn moves(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["moves"].as_array().cloned().unwrap_or_default()
}

#[test]
fn one_of_two_processes_on_one_cpu_moves_and_stays() {
    let _serial = one_at_a_time();
    let Some((crowded, free)) = crowded_and_free() else {
        return;
    };
    let (a, b) = (Busy::start(crowded), Busy::start(crowded));
    let before = cpu_times();
    let (o, r) = on_pair(&a, &b, &["--duration", "5", "--interval", "0.5"]);
    let after = cpu_times();
    let err = String::from_utf8_lossy(&o.stderr);
    let m = moves(&r);
    if m.is_empty() && free_cpu_was_taken(&before, &after, free, &err) {
        return;
    }
    // The first decision: one process from the crowded CPU to the other, from the third
    // look on (the first only reads counters, the move must be called for twice; the
    // engine's tests check the exact hysteresis, another program's load may delay it).
    assert_eq!(m[0]["kind"], "move", "{err}");
    assert_eq!(m[0]["from"], serde_json::json!([crowded]));
    assert_eq!(m[0]["to"], serde_json::json!([free]));
    assert!(m[0]["interval"].as_u64().is_some_and(|i| i >= 2), "{err}");
    let moved = m[0]["pid"].to_string();
    assert!(moved == a.pid() || moved == b.pid());
    for k in ["time_s", "tid", "reason"] {
        assert!(!m[0][k].is_null(), "{k}");
    }
    assert!(r["no_moves_because"].is_null(), "{r}");
    // Nothing moves afterwards (a rollback is the only other decision there may be).
    assert!(m[1..].iter().all(|x| x["kind"] == "rollback"), "{err}");
    assert!(r["rolled_back"].as_u64().is_some_and(|n| n <= 1));
    assert!(r["intervals"].as_u64().is_some_and(|n| n >= 8), "{r}");
    let (pa, pb) = (a.cpus(), b.cpus());
    if r["rolled_back"] == 0 {
        let mut both = [pa, pb];
        both.sort();
        assert_eq!(both, ["0".to_string(), "1".to_string()]);
    }
    assert!(
        err.contains(&format!("CPUs {crowded} -> {free}")) && err.contains("contention"),
        "{err}"
    );
}

#[test]
fn advise_reports_the_same_decision_and_moves_nothing() {
    let _serial = one_at_a_time();
    let Some((crowded, free)) = crowded_and_free() else {
        return;
    };
    let (a, b) = (Busy::start(crowded), Busy::start(crowded));
    let before = cpu_times();
    let (o, r) = on_pair(&a, &b, &["--duration", "3", "--advise"]);
    let after = cpu_times();
    let err = String::from_utf8_lossy(&o.stderr);
    let m = moves(&r);
    if m.is_empty() && free_cpu_was_taken(&before, &after, free, &err) {
        return;
    }
    assert_eq!(m.len(), 1, "{err}");
    assert_eq!(m[0]["kind"], "advice");
    assert_eq!(
        (m[0]["from"].clone(), m[0]["to"].clone()),
        (serde_json::json!([crowded]), serde_json::json!([free]))
    );
    assert!(m[0]["interval"].as_u64().is_some_and(|i| i >= 2), "{err}");
    assert_eq!(r["advise"], true);
    let c = crowded.to_string();
    assert_eq!((a.cpus(), b.cpus()), (c.clone(), c));
    assert!(err.contains("advise process"), "{err}");
}

/// A lone sleeping process gives the balancer nothing to do: it says why, and its text
/// result (on standard error by default) has no `-0`.
#[test]
fn an_idle_run_says_why_nothing_moved() {
    let _serial = one_at_a_time();
    let mut idle = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = idle.id().to_string();
    let (_, r) = balance(&["--pid", &pid, "--duration", "1.2", "--interval", "0.3"]);
    assert!(moves(&r).is_empty(), "{r}");
    let why = r["no_moves_because"].as_str().expect("a reason");
    assert!(why.contains("no rule found anything to improve"), "{why}");
    for v in r["cpu_s_per_s"].as_array().expect("cpu_s_per_s") {
        assert!(!v.to_string().starts_with('-'), "{r}");
    }
    let o = Command::new(exe())
        .args(["balance", "--topology", two_cpus(), "--pid", &pid])
        .args(["--duration", "0.7", "--interval", "0.3"])
        .output()
        .expect("balance runs");
    idle.kill().ok();
    idle.wait().ok();
    assert!(o.status.success());
    assert!(o.stdout.is_empty(), "standard output is left alone");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("balance: 1 process watched over")
            && err.contains("no decision: no rule found anything to improve"),
        "{err}"
    );
    assert!(!err.contains("-0.0"), "{err}");
}

#[test]
fn exiting_and_self_repinning_processes_are_noted_once() {
    let _serial = one_at_a_time();
    let a = Busy::start(0);
    let short = Command::new("sleep").arg("1").spawn().expect("sleep");
    let short_pid = short.id().to_string();
    let pid = a.pid();
    // Change the busy process's affinity from outside while the balancer watches it (to
    // both CPUs: a change whether or not the balancer has moved it to CPU 1 by then).
    let repin = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1300));
        Command::new("taskset")
            .args(["-p", "-c", "0,1", &pid])
            .stdout(Stdio::null())
            .status()
            .expect("taskset");
    });
    let (o, r) = balance(&[
        "--pid",
        &a.pid(),
        "--pid",
        &short_pid,
        "--duration",
        "3",
        "--interval",
        "0.25",
    ]);
    repin.join().expect("thread");
    let mut short = short;
    short.wait().ok();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("exited").count(), 1, "{err}");
    assert_eq!(
        err.matches("changed its own CPU affinity").count(),
        1,
        "{err}"
    );
    assert_eq!(r["stopped_by"], "duration");
    assert_eq!(a.cpus(), "0-1", "the process's own choice is left alone");
}

#[test]
fn given_processes_that_all_exit_end_the_run() {
    let _serial = one_at_a_time();
    let mut short = Command::new("sleep").arg("0.6").spawn().expect("sleep");
    let (_, r) = balance(&["--pid", &short.id().to_string(), "--interval", "0.2"]);
    short.wait().ok();
    assert_eq!(r["stopped_by"], "every process exited");
    // An interval with no thread left sums to 0, never -0.
    for v in r["cpu_s_per_s"].as_array().expect("cpu_s_per_s") {
        assert!(!v.to_string().starts_with('-'), "{r}");
    }
}

#[test]
fn bad_requests_and_other_users_processes_are_clear() {
    let m2 = two_cpus();
    let run = |args: &[&str]| {
        Command::new(exe())
            .args(["balance", "--topology", m2])
            .args(args)
            .output()
            .expect("runs")
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pid, --name or --cgroup"));
    let o = run(&["--name", "("]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--pid", "2147483647"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("process 2147483647 does not exist"));
    let o = run(&["--cgroup", "/nonexistent", "--duration", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cgroup"));
    // Another user's process: as root, run the balancer as nobody against root's.
    let mut victim = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = victim.id().to_string();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
        .args([
            "balance",
            "--topology",
            m2,
            "--pid",
            &pid,
            "--duration",
            "1",
        ])
        .output();
    victim.kill().ok();
    victim.wait().ok();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if let (true, Ok(o)) = (root, o) {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if !err.contains("setpriv:") {
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(
                err.contains(&format!("process {pid}"))
                    && err.contains("not permitted")
                    && err.contains("belongs to user 0"),
                "{err}"
            );
        }
    }
}

/// Even as root, balance changes only its user's processes unless --any-user says
/// otherwise, and never PID 1.
#[test]
fn root_balances_only_its_own_processes_and_never_init() {
    let m2 = two_cpus();
    let run = |args: &[&str]| {
        Command::new(exe())
            .args(["balance", "--topology", m2, "--duration", "0.5"])
            .args(args)
            .output()
            .expect("balance")
    };
    let o = run(&["--pid", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("process 1") && err.contains("init"), "{err}");
    let o = run(&["--pid", "1", "--any-user"]);
    assert_eq!(o.status.code(), Some(1), "PID 1 even with --any-user");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        eprintln!("skipped: another user's process needs root to start here");
        return;
    }
    // A process of nobody's, started by root.
    let Ok(mut theirs) = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "30",
        ])
        .spawn()
    else {
        eprintln!("skipped: setpriv is missing");
        return;
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pid = theirs.id().to_string();
    let refused = run(&["--pid", &pid]);
    let allowed = run(&["--pid", &pid, "--any-user"]);
    theirs.kill().ok();
    theirs.wait().ok();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains("belongs to user 65534") && err.contains("--any-user"),
        "{err}"
    );
    let err = String::from_utf8_lossy(&allowed.stderr);
    assert_eq!(allowed.status.code(), Some(0), "{err}");
}

/// A word no other process's command line holds.
fn token(what: &str) -> String {
    format!("tp26{what}{}", std::process::id())
}

#[test]
fn a_pattern_never_matches_the_balancer_or_its_ancestors() {
    let _serial = one_at_a_time();
    // The pattern is on the command lines of the calling shell and of `timeout` too; only
    // the other shell that holds it is balanced.
    let word = token("anc");
    let mut other = Command::new("sh")
        .args(["-c", &format!("sleep 30; : {word}")])
        .spawn()
        .expect("sh");
    let line = format!(
        "{} balance --topology {} --name {word} --duration 0.7 --interval 0.3 --json -o -",
        exe(),
        two_cpus()
    );
    let o = Command::new("timeout")
        .args(["60", "sh", "-c", &line])
        .output()
        .expect("timeout runs");
    other.kill().ok();
    other.wait().ok();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let pids: Vec<u64> = r["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect();
    assert_eq!(pids, vec![u64::from(other.id())], "{r}");
}

/// Whether process `pid` catches SIGINT (its handler is installed).
fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

#[test]
fn ctrl_c_stops_the_balancer_with_its_summary_and_valid_masks() {
    let _serial = one_at_a_time();
    let a = Busy::start(0);
    let b = Busy::start(0);
    let mut child = Command::new(exe())
        .args(["balance", "--topology", two_cpus(), "--interval", "0.2"])
        .args(["--pid", &a.pid(), "--pid", &b.pid()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("balance starts");
    while !catches_sigint(child.id()) {
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "balance ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Let it look a few times (and perhaps move one), then Ctrl-C its process group.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let st = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill");
    assert!(st.success());
    let o = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped: signal 2"), "{err}");
    assert!(err.contains("2 processes watched over"), "{err}");
    // Both processes run on CPUs of this machine (where the balancer left them).
    for p in [&a, &b] {
        let cpus = p.cpus();
        assert!(cpus == "0" || cpus == "1" || cpus == "0-1", "{cpus}");
    }
}

#[test]
fn other_users_processes_found_by_a_pattern_are_noted_once() {
    // As root, the balancer runs as nobody against three shells of root's whose command
    // lines hold the pattern: one note names them, however many intervals pass.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return;
    }
    let word = token("other");
    let mut victims: Vec<Child> = (0..3)
        .map(|_| {
            Command::new("sh")
                .args(["-c", &format!("sleep 30; : {word}")])
                .spawn()
                .expect("sh")
        })
        .collect();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
        .args(["balance", "--topology", two_cpus(), "--name", &word])
        .args(["--duration", "1", "--interval", "0.2"])
        .output();
    for v in &mut victims {
        v.kill().ok();
        v.wait().ok();
    }
    let Ok(o) = o else { return };
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if err.contains("setpriv:") {
        return; // setpriv itself is not permitted in this container
    }
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("skipping").count(), 1, "{err}");
    assert!(err.contains("skipping processes"), "{err}");
    for v in &victims {
        assert!(err.contains(&v.id().to_string()), "{err}");
    }
    assert!(err.contains("0 processes watched"), "{err}");
}
