//! The program autopin tunes in these tests, and the test's side of it.
//!
//! The program is this test binary started with [`THREADS_VAR`] set: a constructor runs it
//! before the test harness's `main` (which would start threads of its own), so that its
//! threads are its own, in creation order, as autopin sees them. Its threads (the main
//! thread and `THREADS - 1` created ones) do units of work and count each with
//! `topoprobe_tune::heartbeat::beat`, until its standard input closes; a line `phase N`
//! on it declares phase N. It says `ready` once it has beaten, and at the end each thread
//! prints the CPUs it may run on (`thread<i> <list>`).
//!
//! The test drives it from autopin's events ([`Steer`]): autopin's initial wait starts only
//! once the program said it is ready, and the program ends when the test closes its
//! standard input, after the event the test waited for (a round's best, a new round). No
//! step is ordered by how long something takes.

use std::io::{BufRead, BufReader, PipeWriter, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use topoprobe_tune::autopin::{Event, Observer, Program};

/// Set in the environment of the program: how many threads it runs.
const THREADS_VAR: &str = "TOPOPROBE_TEST_BEATER_THREADS";

/// How long the test waits for a line of the program before it fails (a failure message,
/// not a guess at how long the program takes).
const PATIENCE: Duration = Duration::from_secs(120);

// A constructor: in the program (THREADS_VAR set) it runs the program and exits before the
// test harness starts; in the test binary it does nothing.
#[used]
#[link_section = ".init_array"]
static RUN_AS_THE_PROGRAM: extern "C" fn() = run_as_the_program;

extern "C" fn run_as_the_program() {
    if let Some(n) = std::env::var_os(THREADS_VAR) {
        let threads = n.to_str().and_then(|s| s.parse().ok()).unwrap_or(2);
        std::process::exit(program::main(threads));
    }
}

/// The program's side.
mod program {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use topoprobe_tune::heartbeat;

    /// Set when standard input closed: every thread finishes.
    static STOP: AtomicBool = AtomicBool::new(false);

    /// A program nobody tells to stop ends after this long, saying so, with status 99: a
    /// guard against a test that hangs, not a step of any test.
    const GUARD: Duration = Duration::from_secs(300);

    /// One unit of work.
    fn unit() {
        let mut x = 0_u64;
        for j in 0..20_000_u64 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(j));
        }
    }

    /// The CPUs the calling thread may run on.
    fn cpus() -> String {
        std::fs::read_to_string("/proc/thread-self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    }

    /// What standard input says, read without blocking.
    enum Input {
        Nothing,
        Line(String),
        Closed,
    }

    /// Standard input, read as far as it is available.
    #[derive(Default)]
    struct Stdin {
        pending: Vec<u8>,
    }

    impl Stdin {
        fn poll(&mut self) -> Input {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Input::Line(String::from_utf8_lossy(&line).trim().to_string());
            }
            let mut fd = libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; a zero timeout returns at once.
            let ready = unsafe { libc::poll(&mut fd, 1, 0) };
            if ready <= 0 {
                return Input::Nothing;
            }
            let mut buf = [0_u8; 256];
            // SAFETY: reads into a buffer of its length; poll said standard input is
            // readable (data or its end), so this does not block.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            match usize::try_from(n) {
                Ok(0) | Err(_) => Input::Closed,
                Ok(n) => {
                    self.pending.extend_from_slice(&buf[..n]);
                    Input::Nothing
                }
            }
        }
    }

    fn work(i: usize) -> String {
        while !STOP.load(Ordering::Relaxed) {
            unit();
            heartbeat::beat(1);
        }
        format!("thread{i} {}", cpus())
    }

    pub(super) fn main(threads: usize) -> i32 {
        heartbeat::phase(1);
        let workers: Vec<_> = (1..threads.max(1))
            .map(|i| std::thread::spawn(move || work(i)))
            .collect();
        unit();
        heartbeat::beat(1);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
        drop(out);
        let started = Instant::now();
        let mut input = Stdin::default();
        loop {
            unit();
            heartbeat::beat(1);
            match input.poll() {
                Input::Closed => break,
                Input::Line(l) => {
                    if let Some(p) = l.strip_prefix("phase ").and_then(|p| p.parse().ok()) {
                        heartbeat::phase(p);
                    }
                }
                Input::Nothing => {}
            }
            if started.elapsed() > GUARD {
                eprintln!("beater: nobody closed my standard input within {GUARD:?}");
                return 99;
            }
        }
        STOP.store(true, Ordering::Relaxed);
        let mut lines = vec![format!("thread0 {}", cpus())];
        for w in workers {
            lines.push(w.join().unwrap_or_default());
        }
        for l in lines {
            println!("{l}");
        }
        0
    }
}

/// The test's end of a program's pipes: its standard input (closing it ends the program)
/// and the lines of its standard output.
#[derive(Debug)]
pub struct Beater {
    input: Option<PipeWriter>,
    lines: Receiver<String>,
    says_ready: bool,
}

impl Beater {
    /// The program with `threads` threads, ready to give to autopin.
    pub fn launch(threads: usize) -> (Program, Self) {
        let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
        cmd.env(THREADS_VAR, threads.to_string());
        Self::wire(cmd, true)
    }

    /// `sh -c script` with the test's pipes (it says nothing when it is ready).
    pub fn shell(script: &str) -> (Program, Self) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        Self::wire(cmd, false)
    }

    fn wire(mut cmd: Command, says_ready: bool) -> (Program, Self) {
        let (stdin_r, stdin_w) = std::io::pipe().expect("pipe");
        let (stdout_r, stdout_w) = std::io::pipe().expect("pipe");
        cmd.stdin(Stdio::from(stdin_r))
            .stdout(Stdio::from(stdout_w));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout_r).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let me = Self {
            input: Some(stdin_w),
            lines,
            says_ready,
        };
        (Program::Launch(cmd), me)
    }

    /// Sends a line to the program.
    pub fn say(&mut self, line: &str) {
        let input = self.input.as_mut().expect("the program's input is open");
        writeln!(input, "{line}").expect("the program reads its input");
    }

    /// Closes the program's standard input: it finishes.
    pub fn stop(&mut self) {
        self.input = None;
    }

    /// The next line of the program.
    fn next_line(&self, waiting_for: &str) -> Option<String> {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!("the program did not {waiting_for} within {PATIENCE:?}")
            }
        }
    }

    /// Waits for the program's `ready`.
    fn ready(&self) {
        let line = self.next_line("say it is ready");
        assert_eq!(line.as_deref(), Some("ready"), "the program's first line");
    }

    /// The rest of the program's output, once it ended.
    pub fn output(self) -> String {
        let mut out = String::new();
        while let Some(l) = self.next_line("end its output") {
            out.push_str(&l);
            out.push('\n');
        }
        out
    }
}

/// An observer that drives the program from autopin's events: once autopin started it, it
/// waits for the program's `ready` (autopin's initial wait starts after that), then hands
/// each event to `on`. When autopin stops tuning or warns, the program is told to finish
/// (a run that goes wrong ends, and its report says why).
pub struct Steer<'a, F> {
    program: &'a mut Beater,
    on: F,
}

impl<'a, F: FnMut(&Event<'_>, &mut Beater)> Steer<'a, F> {
    pub fn new(program: &'a mut Beater, on: F) -> Self {
        Self { program, on }
    }
}

impl<F: FnMut(&Event<'_>, &mut Beater)> Observer for Steer<'_, F> {
    fn event(&mut self, event: &Event<'_>) {
        if let (Event::Started { launched: true, .. }, true) = (event, self.program.says_ready) {
            self.program.ready();
        }
        (self.on)(event, self.program);
        if matches!(event, Event::Stopped { .. } | Event::Warning(_)) {
            self.program.stop();
        }
    }
}

/// Stops the program at the end of the first round (its best chosen).
pub fn at_the_first_best(event: &Event<'_>, program: &mut Beater) {
    if matches!(event, Event::Best { .. }) {
        program.stop();
    }
}
