//! Tests of `topoprobe balance` on this machine: two busy processes started with
//! `taskset -c C`, C the busier of CPUs 0 and 1 just before (one is moved to the other CPU
//! at the third look, and nothing moves after that; which CPU is idle does not matter),
//! `--advise` (the same decision, nothing moved), a run with nothing to do (it says why), a process that exits mid-run, one
//! that has its affinity changed under the balancer, one of another user, and bad
//! requests. How much CPU time the move gains is a measurement (the shared machine may
//! be loaded): `scripts/bench/balance-2cpu.sh`.
//!
//! No step waits for the balancer by sleeping. A test that needs the balancer to have
//! looked at its processes gives it idle marker processes too ([`Marker`]): it ends one
//! and waits for the balancer's note that it exited, which comes at the end of a look that
//! began after that ([`Live::look`]). Signals go to the balancer once it has installed
//! its handlers ([`Live::watching`]).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
/// whichever CPU the rest of the machine uses. When the other is busy too, the crowded one
/// still has more work (the two processes on top of the rest); if the balancer then moves
/// nothing, [`free_cpu_was_taken`] says why.
fn crowded_and_free() -> (u32, u32) {
    let a = cpu_times();
    // A measurement window (how busy each CPU is), not a wait for an event: whatever it
    // finds, the tests that use it hold.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let b = cpu_times();
    let (crowded, free) = if load(&a, &b, 1) > load(&a, &b, 0) {
        (1, 0)
    } else {
        (0, 1)
    };
    if load(&a, &b, free) > 0.5 {
        eprintln!(
            "note: CPUs 0 and 1 are both busy (loads {:.2} and {:.2}); the processes go on CPU \
             {crowded}",
            load(&a, &b, 0),
            load(&a, &b, 1)
        );
    }
    (crowded, free)
}

/// When the balancer made no decision: the free CPU must have been busy meanwhile (the rest
/// of the machine took it), else the balancer missed the move. `true`: skip.
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
    eprintln!("skipped: CPU {free} was busy too (busy {l:.2} of the time): no room to move to");
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

/// How long a test waits for the balancer (a line, its handlers) before it fails: a
/// failure message, not a guess at how long the balancer takes.
const PATIENCE: Duration = Duration::from_secs(120);

/// An idle process that ends when the test closes its standard input: given to the
/// balancer, its exit note marks a look ([`Live::look`]).
struct Marker(Child);

impl Marker {
    fn start() -> Self {
        Self(
            Command::new("sh")
                .args(["-c", "read x"])
                .stdin(Stdio::piped())
                .spawn()
                .expect("sh"),
        )
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// Closes its standard input and waits until it has ended.
    fn end(&mut self) {
        drop(self.0.stdin.take());
        self.0.wait().expect("wait");
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The balancer's note that process `pid` exited.
fn exit_note(pid: &str) -> impl Fn(&str) -> bool + '_ {
    move |line| line.starts_with(&format!("balance: process {pid} (")) && line.ends_with(" exited")
}

/// How many exit notes name process `pid`.
fn exit_notes(err: &str, pid: &str) -> usize {
    err.lines().filter(|l| exit_note(pid)(l)).count()
}

/// Whether process `pid` has installed the balancer's signal handlers: SIGQUIT and SIGUSR1
/// among them (the handler every topoprobe command installs at its start, which removes
/// temporary files, catches only SIGINT, SIGTERM and SIGHUP). The balancer installs them
/// once it has checked the processes it was given, just before its first look.
fn watches_signals(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|mask| [2, 3, 10].iter().all(|sig| mask & (1 << (sig - 1)) != 0))
}

/// `topoprobe balance` running in a process group of its own (as a foreground job on a
/// terminal), its standard error read line by line.
struct Live {
    child: Child,
    lines: Receiver<String>,
    /// Its standard error so far.
    err: String,
    out: Option<JoinHandle<Vec<u8>>>,
    /// Markers given to it and not ended yet.
    markers: Vec<Marker>,
    /// Markers ended, with their pids.
    ended: Vec<String>,
}

/// How a [`Live`] balancer ended.
struct Done {
    status: ExitStatus,
    err: String,
    out: Vec<u8>,
    /// How many of its markers it saw running (and counts among the processes it watched
    /// over): a marker ended before the balancer's first look is only noted as exited.
    markers_watched: usize,
}

impl Done {
    /// Its JSON result (`--json -o -`).
    fn report(&self) -> serde_json::Value {
        assert!(self.status.success(), "{}", self.err);
        assert!(!self.err.contains("panicked"), "{}", self.err);
        serde_json::from_slice(&self.out).expect("JSON report")
    }
}

impl Live {
    /// `balance --topology <2 CPUs> args`, with `markers` idle marker processes given by
    /// `--pid` too.
    fn start(args: &[&str], markers: usize) -> Self {
        let markers: Vec<Marker> = (0..markers).map(|_| Marker::start()).collect();
        let mut child = Command::new(exe())
            .args(["balance", "--topology", two_cpus()])
            .args(args)
            .args(markers.iter().flat_map(|m| ["--pid".to_string(), m.pid()]))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("balance starts");
        let (out, lines) = common::stream_output(&mut child);
        Self {
            child,
            lines,
            err: String::new(),
            out: Some(out),
            markers,
            ended: Vec::new(),
        }
    }

    /// Reads standard error until a line satisfies `until` (`what` names it in the
    /// failure); `false` when the balancer ended first.
    fn read_until(&mut self, what: &str, until: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => {
                    self.err.push_str(&line);
                    self.err.push('\n');
                    if until(&line) {
                        return true;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{what}: not within {PATIENCE:?}; so far:\n{}", self.err)
                }
            }
        }
    }

    /// Waits for a line that satisfies `until`.
    fn wait_for(&mut self, what: &str, until: impl Fn(&str) -> bool) {
        assert!(
            self.read_until(what, until),
            "{what}: the balancer ended first:\n{}",
            self.err
        );
    }

    /// Waits until the balancer has installed its signal handlers (so that it has checked
    /// its processes and starts looking at them).
    fn watching(&mut self) {
        let started = Instant::now();
        while !watches_signals(self.child.id()) {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                self.read_until("its end", |_| false);
                panic!("balance ended ({st}) before watching:\n{}", self.err);
            }
            assert!(
                started.elapsed() < PATIENCE,
                "balance did not install its signal handlers within {PATIENCE:?}"
            );
            // A bounded poll: the handlers show in /proc once installed.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ends the next marker and waits for the balancer's note that it exited: a look that
    /// began after this call has ended (with its decisions on standard error before the
    /// note). Returns the marker's pid.
    fn look(&mut self) -> String {
        self.watching();
        assert!(!self.markers.is_empty(), "no marker left for another look");
        let mut m = self.markers.remove(0);
        m.end();
        let pid = m.pid();
        self.wait_for(
            &format!("the note that marker {pid} exited"),
            exit_note(&pid),
        );
        self.ended.push(pid.clone());
        pid
    }

    /// The balancer's decision lines so far.
    fn decisions(&self) -> Vec<&str> {
        self.err
            .lines()
            .filter(|l| l.starts_with("balance: [") && l.contains(" process "))
            .collect()
    }

    /// Sends SIGINT to its process group (Ctrl-C on a terminal) once its handlers are
    /// installed, and waits for its end.
    fn interrupt(mut self) -> Done {
        self.watching();
        let st = Command::new("kill")
            .args(["-INT", "--", &format!("-{}", self.child.id())])
            .status()
            .expect("kill");
        assert!(st.success());
        self.finish()
    }

    /// Waits for its end (when it stops by itself).
    fn finish(mut self) -> Done {
        self.read_until("its end", |_| false);
        let status = self.child.wait().expect("wait");
        let out = self
            .out
            .take()
            .map(|h| h.join().expect("stdout reader"))
            .unwrap_or_default();
        // Each marker ended is noted once, however many looks followed.
        for pid in &self.ended {
            assert_eq!(exit_notes(&self.err, pid), 1, "marker {pid}: {}", self.err);
        }
        let markers: Vec<String> = self
            .ended
            .iter()
            .cloned()
            .chain(self.markers.iter().map(Marker::pid))
            .collect();
        let markers_watched = markers
            .iter()
            .filter(|pid| !self.err.contains(&format!("process {pid} (?) exited")))
            .count();
        Done {
            status,
            err: std::mem::take(&mut self.err),
            out,
            markers_watched,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moves(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["moves"].as_array().cloned().unwrap_or_default()
}

/// Looks the balancer gets to make its first decision on the busy pair (it comes at the
/// third on an otherwise idle machine) before the test stops waiting for one.
const LOOKS_TO_DECIDE: usize = 8;
/// Looks after the first decision in which nothing else may move.
const LOOKS_AFTER: usize = 4;

/// The balancer on the two busy processes (with `extra` arguments, JSON result), looked at
/// until its first decision (at most [`LOOKS_TO_DECIDE`] looks) and then
/// [`LOOKS_AFTER`] more, then stopped (SIGINT).
fn on_pair(a: &Busy, b: &Busy, extra: &[&str]) -> (Done, serde_json::Value) {
    let (pa, pb) = (a.pid(), b.pid());
    let mut args = vec![
        "--pid",
        pa.as_str(),
        "--pid",
        pb.as_str(),
        "--json",
        "-o",
        "-",
    ];
    args.extend(extra);
    let mut live = Live::start(&args, LOOKS_TO_DECIDE + LOOKS_AFTER);
    for _ in 0..LOOKS_TO_DECIDE {
        live.look();
        if !live.decisions().is_empty() {
            for _ in 0..LOOKS_AFTER {
                live.look();
            }
            break;
        }
    }
    let done = live.interrupt();
    let r = done.report();
    (done, r)
}

#[test]
fn one_of_two_processes_on_one_cpu_moves_and_stays() {
    let _serial = one_at_a_time();
    let (crowded, free) = crowded_and_free();
    let (a, b) = (Busy::start(crowded), Busy::start(crowded));
    let before = cpu_times();
    let (o, r) = on_pair(&a, &b, &["--interval", "0.5"]);
    let after = cpu_times();
    let err = &o.err;
    let m = moves(&r);
    if m.is_empty() && free_cpu_was_taken(&before, &after, free, err) {
        return;
    }
    // The first decision: one process from the crowded CPU to the other, from the third
    // look on (the first only reads counters, the move must be called for twice; the
    // engine's tests check the exact hysteresis, another program's load may delay it).
    assert_eq!(m[0]["kind"], "move", "{err}");
    assert_eq!(m[0]["from"], serde_json::json!([crowded]));
    assert_eq!(m[0]["to"], serde_json::json!([free]));
    let at = m[0]["interval"].as_u64().expect("interval");
    assert!(at >= 2, "{err}");
    let moved = m[0]["pid"].to_string();
    assert!(moved == a.pid() || moved == b.pid());
    for k in ["time_s", "tid", "reason"] {
        assert!(!m[0][k].is_null(), "{k}");
    }
    assert!(r["no_moves_because"].is_null(), "{r}");
    // Nothing moves afterwards (a rollback is the only other decision there may be), over
    // the looks that followed.
    assert!(m[1..].iter().all(|x| x["kind"] == "rollback"), "{err}");
    assert!(r["rolled_back"].as_u64().is_some_and(|n| n <= 1));
    assert!(
        r["intervals"]
            .as_u64()
            .is_some_and(|n| n >= at + LOOKS_AFTER as u64),
        "{r}"
    );
    assert_eq!(r["stopped_by"], "signal 2", "{r}");
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
    let (crowded, free) = crowded_and_free();
    let (a, b) = (Busy::start(crowded), Busy::start(crowded));
    let before = cpu_times();
    let (o, r) = on_pair(&a, &b, &["--advise"]);
    let after = cpu_times();
    let err = &o.err;
    let m = moves(&r);
    if m.is_empty() && free_cpu_was_taken(&before, &after, free, err) {
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
    // A program that waits to be killed.
    let mut idle = Command::new("sleep").arg("300").spawn().expect("sleep");
    let pid = idle.id().to_string();
    // Two looks (the second one compares with the first), then Ctrl-C; the two markers
    // are idle too.
    let mut live = Live::start(
        &["--pid", &pid, "--interval", "0.3", "--json", "-o", "-"],
        2,
    );
    live.look();
    live.look();
    let r = live.interrupt().report();
    assert!(moves(&r).is_empty(), "{r}");
    let why = r["no_moves_because"].as_str().expect("a reason");
    assert!(why.contains("no rule found anything to improve"), "{why}");
    for v in r["cpu_s_per_s"].as_array().expect("cpu_s_per_s") {
        assert!(!v.to_string().starts_with('-'), "{r}");
    }
    let mut live = Live::start(&["--pid", &pid, "--interval", "0.3"], 2);
    live.look();
    live.look();
    let o = live.interrupt();
    idle.kill().ok();
    idle.wait().ok();
    let err = &o.err;
    assert!(o.status.success(), "{err}");
    assert!(o.out.is_empty(), "standard output is left alone");
    // The idle process and the markers it saw running.
    let watched = format!("balance: {} processes watched over", 1 + o.markers_watched);
    assert!(
        err.contains(&watched) && err.contains("no decision: no rule found anything to improve"),
        "{err}"
    );
    assert!(!err.contains("-0.0"), "{err}");
}

#[test]
fn exiting_and_self_repinning_processes_are_noted_once() {
    let _serial = one_at_a_time();
    let a = Busy::start(0);
    let mut short = Marker::start();
    let short_pid = short.pid();
    let mut live = Live::start(
        &[
            "--pid",
            &a.pid(),
            "--pid",
            &short_pid,
            "--interval",
            "0.25",
            "--json",
            "-o",
            "-",
        ],
        2,
    );
    // Once the balancer has looked at both processes, one exits and the other has its
    // affinity changed from outside (to both CPUs: a change whether or not the balancer
    // has moved it to CPU 1 by then).
    live.look();
    let st = Command::new("taskset")
        .args(["-p", "-c", "0,1", &a.pid()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset");
    assert!(st.success());
    short.end();
    live.wait_for("the note that the busy process changed its affinity", |l| {
        l.contains("changed its own CPU affinity")
    });
    if exit_notes(&live.err, &short_pid) == 0 {
        live.wait_for(
            "the note that the short process exited",
            exit_note(&short_pid),
        );
    }
    // One more look after both notes: neither is said again.
    live.look();
    let o = live.interrupt();
    let r = o.report();
    let err = &o.err;
    // Seen running (named), then noted once as exited.
    assert_eq!(
        err.matches(&format!("process {short_pid} (sh) exited"))
            .count(),
        1,
        "{err}"
    );
    assert_eq!(exit_notes(err, &short_pid), 1, "{err}");
    assert_eq!(
        err.matches("changed its own CPU affinity").count(),
        1,
        "{err}"
    );
    assert_eq!(r["stopped_by"], "signal 2");
    assert_eq!(a.cpus(), "0-1", "the process's own choice is left alone");
}

#[test]
fn given_processes_that_all_exit_end_the_run() {
    let _serial = one_at_a_time();
    let mut short = Marker::start();
    let pid = short.pid();
    let mut live = Live::start(
        &["--pid", &pid, "--interval", "0.2", "--json", "-o", "-"],
        1,
    );
    // It exits once the balancer has looked at it; the marker has exited already.
    live.look();
    short.end();
    let r = live.finish().report();
    assert_eq!(r["stopped_by"], "every process exited");
    // An interval with no thread left sums to 0, never -0.
    let per_s = r["cpu_s_per_s"].as_array().expect("cpu_s_per_s");
    assert!(per_s.last().is_some_and(|v| v.as_f64() == Some(0.0)), "{r}");
    for v in per_s {
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
    // Another user's process: as root, run the balancer as nobody against root's (a
    // program that waits to be killed).
    let mut victim = Command::new("sleep").arg("300").spawn().expect("sleep");
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
    // A process of nobody's, started by root: it says "ready" once it runs as nobody.
    let Ok(mut theirs) = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        // A program that waits to be killed.
        .args(["sh", "-c", "echo ready; exec sleep 300"])
        .stdout(Stdio::piped())
        .spawn()
    else {
        eprintln!("skipped: setpriv is missing");
        return;
    };
    let mut ready = String::new();
    BufReader::new(theirs.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("read");
    if ready.trim() != "ready" {
        theirs.kill().ok();
        theirs.wait().ok();
        eprintln!("skipped: setpriv could not start a process of nobody's here");
        return;
    }
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
    // It runs until the test closes its standard input.
    let mut other = Command::new("sh")
        .args(["-c", &format!("read x; : {word}")])
        .stdin(Stdio::piped())
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

#[test]
fn ctrl_c_stops_the_balancer_with_its_summary_and_valid_masks() {
    let _serial = one_at_a_time();
    let a = Busy::start(0);
    let b = Busy::start(0);
    let mut live = Live::start(
        &["--interval", "0.2", "--pid", &a.pid(), "--pid", &b.pid()],
        2,
    );
    // Let it look a few times (and perhaps move one), then Ctrl-C its process group.
    live.look();
    live.look();
    let o = live.interrupt();
    let err = &o.err;
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped: signal 2"), "{err}");
    // The busy pair and the markers it saw running.
    let watched = format!("{} processes watched over", 2 + o.markers_watched);
    assert!(err.contains(&watched), "{err}");
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
            // Each runs until the test closes its standard input.
            Command::new("sh")
                .args(["-c", &format!("read x; : {word}")])
                .stdin(Stdio::piped())
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
