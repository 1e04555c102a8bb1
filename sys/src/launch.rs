//! Running a command: signals sent to this process are passed on to it, and its exit
//! status becomes ours (128 + signal when it was killed).
//!
//! [`run_forwarding`] runs a command to its end; [`Supervised`] starts one and lets the
//! caller work on it (re-pin its threads, measure it) while it runs, with the same
//! forwarding, and says which signals arrived ([`Supervised::signals`]).
//!
//! The command runs in a process group of its own, so that a signal reaches it exactly
//! once: one sent to our process group (by a process, or by a terminal we own) reaches
//! only us and is passed on to the command's group once. When our standard input is our
//! controlling terminal and our group is its foreground group, the terminal is handed to
//! the command's group while it runs, as a shell does for a job: the command reads the
//! terminal, and Ctrl-C and Ctrl-Z reach it directly (not us). When the command stops
//! (Ctrl-Z), the terminal comes back to us and our own process group stops with the same
//! signal, so that the shell sees the job stopped; when the shell continues us, the
//! terminal goes back to the command's group (if we are in the foreground) and it is
//! continued. Other members of our process group (the rest of a pipeline, such as
//! `| less`) are not in the foreground while the command runs; those a terminal read
//! stopped meanwhile are continued when it ends.

mod terminal;

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use terminal::Terminal;

/// Signals passed on to the child.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The child's pid, which is also its process group (0 before it exists).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the child's pid was known.
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The process that sent [`PENDING`] (0: the kernel, or unknown).
static PENDING_FROM: AtomicI32 = AtomicI32::new(0);
/// Bit `s` is set when forwarded signal `s` arrived (whoever sent it).
static RECEIVED: AtomicU64 = AtomicU64::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if (0..64).contains(&sig) {
        RECEIVED.fetch_or(1 << sig, Ordering::SeqCst);
    }
    let sender = if info.is_null() {
        0
    } else {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t (checked non-null);
        // si_pid is meaningful for signals sent by a process (si_code <= 0).
        unsafe {
            if (*info).si_code <= 0 {
                (*info).si_pid()
            } else {
                0
            }
        }
    };
    let child = CHILD.load(Ordering::SeqCst);
    if child <= 0 {
        PENDING_FROM.store(sender, Ordering::SeqCst);
        PENDING.store(sig, Ordering::SeqCst);
        return;
    }
    if sender == child {
        // A signal the command sent us itself is not sent back to it.
        return;
    }
    // The command is in a process group of its own (its pid): whatever reached us, from a
    // process or from a terminal, did not reach it, and is passed on exactly once. A
    // command that left its group still gets the signal itself.
    // SAFETY: kill is async-signal-safe and only sends a signal.
    unsafe {
        if libc::kill(-child, sig) != 0 {
            libc::kill(child, sig);
        }
    }
}

/// Installs `forward` for the forwarded signals; returns the previous actions.
fn install() -> io::Result<Vec<(libc::c_int, libc::sigaction)>> {
    let mut old = Vec::new();
    for sig in FORWARDED {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler has the
        // SA_SIGINFO signature; `prev` is a valid out-pointer.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = forward as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            let mut prev: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &act, &mut prev) != 0 {
                return Err(io::Error::last_os_error());
            }
            old.push((sig, prev));
        }
    }
    Ok(old)
}

/// Ignores `sig`; returns its previous action.
fn ignore(sig: libc::c_int) -> io::Result<libc::sigaction> {
    // SAFETY: a zeroed sigaction with SIG_IGN is a valid action; `prev` is a valid
    // out-pointer.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut act.sa_mask);
        let mut prev: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &act, &mut prev) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(prev)
    }
}

fn restore(old: &[(libc::c_int, libc::sigaction)]) {
    for (sig, act) in old {
        // SAFETY: `act` is an action the kernel returned for this signal.
        unsafe {
            libc::sigaction(*sig, act, std::ptr::null_mut());
        }
    }
}

/// The exit code a shell would report for a status: the code, or 128 + the signal.
#[must_use]
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Runs `cmd`, passing SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this
/// process on to it once, and returns its exit code ([`exit_code`]). It ends with this
/// process ([`end_with_this_process`]).
///
/// # Errors
///
/// When the command cannot be started or waited for, or the handlers cannot be installed.
pub fn run_forwarding(cmd: &mut Command) -> io::Result<i32> {
    run_forwarding_with(cmd, true)
}

/// [`run_forwarding`], choosing whether the command ends with this process: with
/// `end_with_parent`, the kernel sends it SIGKILL when this thread dies (even by SIGKILL,
/// which cannot be passed on: `PR_SET_PDEATHSIG`), so that no command runs on unwatched
/// with a placement nobody restores. Call it from a thread that lives until the command
/// ends (the kernel watches the thread that started it).
///
/// # Errors
///
/// When the command cannot be started or waited for, or the handlers cannot be installed.
pub fn run_forwarding_with(cmd: &mut Command, end_with_parent: bool) -> io::Result<i32> {
    if end_with_parent {
        end_with_this_process(cmd);
    }
    Supervised::spawn(cmd)?.wait()
}

/// Asks the kernel to kill the command started from `cmd` when the calling thread dies
/// (`PR_SET_PDEATHSIG`), or at once when this process is already gone by the time it
/// starts. The kernel watches the *thread* that starts the command, not the process: a
/// command started from a thread that ends before it is killed then, so start it from a
/// thread that lives as long as the command should (the main thread, or the one that
/// waits for it).
pub fn end_with_this_process(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, raise).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before the request: then end now.
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
}

/// A running child in a process group of its own whose signals are forwarded: SIGTERM,
/// SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 that reach this process (sent by a process
/// to us or to our group, or by a terminal we own) are passed on once to the child's
/// process group. With our controlling terminal on standard input and our group in its
/// foreground, the child's group owns the terminal while it runs (see the module's
/// documentation for Ctrl-Z). The handlers are restored, and the terminal taken back,
/// when it is waited for or dropped. One at a time per process.
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    old: Vec<(libc::c_int, libc::sigaction)>,
    status: Option<i32>,
    /// Our controlling terminal, for job control (`None`: standard input is not it).
    terminal: Option<Terminal>,
}

impl Supervised {
    /// Installs the forwarding handlers and starts `cmd` in a new process group (its own
    /// pid), handing it our terminal when we own it.
    ///
    /// # Errors
    ///
    /// When the handlers cannot be installed or the command cannot be started (the
    /// handlers are restored then).
    pub fn spawn(cmd: &mut Command) -> io::Result<Self> {
        PENDING.store(0, Ordering::SeqCst);
        PENDING_FROM.store(0, Ordering::SeqCst);
        RECEIVED.store(0, Ordering::SeqCst);
        let terminal = Terminal::ours();
        let in_front = terminal.is_some_and(Terminal::ours_in_front);
        cmd.process_group(0);
        if let (Some(t), true) = (terminal, in_front) {
            let fd = t.fd();
            // SAFETY: the closure runs in the child between fork and exec (after it
            // entered its own group) and calls only async-signal-safe functions
            // (getpid, pthread_sigmask, tcsetpgrp).
            unsafe {
                cmd.pre_exec(move || {
                    // Ours too below; whichever comes first, the child never reads the
                    // terminal from the background.
                    let _ = terminal::set_foreground(fd, libc::getpid());
                    Ok(())
                });
            }
        }
        let old = install()?;
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                // The child may have taken the terminal before its exec failed.
                if let (Some(t), true) = (terminal, in_front) {
                    if !t.ours_in_front() {
                        let _ = t.give_to(t.own());
                    }
                }
                restore(&old);
                return Err(e);
            }
        };
        let mut old = old;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        if let (Some(t), true, true) = (terminal, in_front, pid > 0) {
            let _ = t.give_to(pid);
            // From the background, our own writes to the terminal (the live lines) would
            // stop us under `stty tostop`; ignored SIGTTOU lets them through. Set after the
            // child's exec, which would otherwise inherit it; restored with the handlers.
            if let Ok(prev) = ignore(libc::SIGTTOU) {
                old.push((libc::SIGTTOU, prev));
            }
        }
        CHILD.store(pid, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        // Not sent back to the child if it sent it (before we knew its pid).
        if pending != 0 && pid > 0 && PENDING_FROM.load(Ordering::SeqCst) != pid {
            // SAFETY: sends a signal to the process group of the child just started.
            unsafe {
                libc::kill(-pid, pending);
            }
        }
        Ok(Self {
            child,
            old,
            status: None,
            terminal,
        })
    }

    /// The child's process id (also its process group's).
    #[must_use]
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(0)
    }

    /// The forwarded signals that arrived since the child was started (sent by another
    /// process or by a terminal we owned), in increasing order.
    #[must_use]
    pub fn signals(&self) -> Vec<i32> {
        received()
    }

    /// The child's exit code ([`exit_code`]) if it has ended, without waiting. A child
    /// stopped from our terminal (Ctrl-Z) stops us too until the shell continues us (see
    /// the module's documentation).
    ///
    /// # Errors
    ///
    /// When the child cannot be waited for.
    pub fn try_wait(&mut self) -> io::Result<Option<i32>> {
        if self.status.is_none() {
            self.reap(false)?;
        }
        Ok(self.status)
    }

    /// Waits for the child to end and returns its exit code ([`exit_code`]).
    ///
    /// # Errors
    ///
    /// When the child cannot be waited for.
    pub fn wait(mut self) -> io::Result<i32> {
        while self.status.is_none() {
            self.reap(true)?;
        }
        Ok(self.status.unwrap_or(1))
    }

    /// One `waitpid` (blocking or not): records the exit code of an ended child, or
    /// follows a stop from the terminal.
    fn reap(&mut self, block: bool) -> io::Result<()> {
        let pid = self.pid();
        let mut flags = if block { 0 } else { libc::WNOHANG };
        if self.terminal.is_some() {
            flags |= libc::WUNTRACED;
        }
        loop {
            let mut st: libc::c_int = 0;
            // SAFETY: waits for our own child; `st` is a valid out-pointer.
            let r = unsafe { libc::waitpid(pid, &mut st, flags) };
            if r == 0 {
                return Ok(());
            }
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if libc::WIFSTOPPED(st) {
                self.stopped(libc::WSTOPSIG(st));
                return Ok(());
            }
            self.finish(exit_code(ExitStatus::from_raw(st)));
            return Ok(());
        }
    }

    /// The child stopped: when a terminal stop (Ctrl-Z, or a terminal read or write from
    /// the background) stopped it, the terminal comes back to us and our job stops alike;
    /// once continued, the terminal goes back to the child's group if we are in front,
    /// and the child is continued. Other stops (SIGSTOP from someone) are left to whoever
    /// sent them.
    fn stopped(&mut self, sig: libc::c_int) {
        let Some(t) = self.terminal else {
            return;
        };
        if ![libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&sig) {
            return;
        }
        let pid = self.pid();
        t.take_back_from(pid);
        terminal::stop_own_job(sig);
        if t.ours_in_front() {
            let _ = t.give_to(pid);
        }
        // SAFETY: continues the child's process group.
        unsafe {
            libc::kill(-pid, libc::SIGCONT);
        }
    }

    /// Takes the terminal back from the child's group if it has it; a member of our own
    /// group that a terminal read stopped meanwhile (a pager in our pipeline) is
    /// continued.
    fn release_terminal(&self) {
        if let Some(t) = self.terminal {
            let pid = self.pid();
            if t.ours_in_front() {
                return;
            }
            t.take_back_from(pid);
            if t.ours_in_front() {
                // SAFETY: continues our own process group, which is running (we are).
                unsafe {
                    libc::kill(0, libc::SIGCONT);
                }
            }
        }
    }

    /// Records the exit code and gives the signals and the terminal back.
    fn finish(&mut self, code: i32) {
        self.status = Some(code);
        CHILD.store(0, Ordering::SeqCst);
        self.release_terminal();
        restore(&std::mem::take(&mut self.old));
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.status.is_none() {
            CHILD.store(0, Ordering::SeqCst);
            self.release_terminal();
            restore(&std::mem::take(&mut self.old));
        }
    }
}

/// The forwarded signals (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) caught and
/// recorded instead of ending this process, while no child is supervised: a tool that
/// works on another process stops cleanly on Ctrl-C. The handlers are restored on drop.
#[derive(Debug)]
pub struct SignalWatch {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalWatch {
    /// Installs the handlers.
    ///
    /// # Errors
    ///
    /// When a handler cannot be installed.
    pub fn install() -> io::Result<Self> {
        CHILD.store(0, Ordering::SeqCst);
        RECEIVED.store(0, Ordering::SeqCst);
        Ok(Self { old: install()? })
    }

    /// The signals that arrived since [`SignalWatch::install`], in increasing order.
    #[must_use]
    pub fn signals(&self) -> Vec<i32> {
        received()
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        PENDING.store(0, Ordering::SeqCst);
        restore(&self.old);
    }
}

/// The recorded signals, in increasing order.
fn received() -> Vec<i32> {
    let bits = RECEIVED.load(Ordering::SeqCst);
    (1..64).filter(|s| bits & (1 << s) != 0).collect()
}

/// Whether any of `signals` asks a program to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT).
#[must_use]
pub fn asks_to_stop(signals: &[i32]) -> bool {
    signals
        .iter()
        .any(|s| [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT].contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_signals_are_kept() {
        let code = |script: &str| run_forwarding(Command::new("sh").args(["-c", script]));
        assert_eq!(code("exit 3").expect("runs"), 3);
        assert_eq!(code("kill -9 $$").expect("runs"), 128 + 9);
        assert!(run_forwarding(&mut Command::new("/no/such/program")).is_err());
        // The child is supervised while it runs; a signal sent to us reaches it.
        let mut s = Supervised::spawn(Command::new("sleep").arg("30")).expect("spawn");
        assert!(s.pid() > 0);
        assert_eq!(s.try_wait().expect("try_wait"), None);
        // SAFETY: sends SIGUSR1 to this process, whose handler forwards it.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGUSR1);
        }
        assert_eq!(s.wait().expect("wait"), 128 + libc::SIGUSR1);
        let w = SignalWatch::install().expect("watch");
        // SAFETY: sends SIGTERM to this process, whose handler only records it.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
        // The handler may run on another thread a moment later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while w.signals().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(asks_to_stop(&w.signals()), "{:?}", w.signals());
        drop(w);

        // The child leads a process group of its own: a signal sent to ours does not
        // reach it, only what we pass on.
        let s = Supervised::spawn(Command::new("sleep").arg("30")).expect("spawn");
        // SAFETY: getpgid only reads the process group of our child.
        assert_eq!(unsafe { libc::getpgid(s.pid()) }, s.pid());
        // SAFETY: sends SIGTERM to this process, whose handler passes it on.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
        assert_eq!(s.wait().expect("wait"), 128 + libc::SIGTERM);

        // A signal the command sends us is recorded but not sent back to it: the shell
        // would die of SIGUSR1, and exits 3 instead.
        let s = Supervised::spawn(Command::new("sh").args([
            "-c",
            "kill -USR1 $PPID; i=0; while [ $i -lt 50 ]; do i=$((i+1)); sleep 0.01; done; exit 3",
        ]))
        .expect("spawn");
        let signals = {
            let mut s = s;
            let code = loop {
                if let Some(c) = s.try_wait().expect("try_wait") {
                    break c;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            assert_eq!(code, 3);
            received()
        };
        assert!(signals.contains(&libc::SIGUSR1), "{signals:?}");
    }

    #[test]
    fn the_kernel_ends_a_command_when_the_thread_that_started_it_ends() {
        // PR_SET_PDEATHSIG watches the thread that forks, not the process: a command
        // started from a thread that then ends is killed although this process lives.
        let mut child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            end_with_this_process(&mut cmd);
            cmd.spawn().expect("spawn")
        })
        .join()
        .expect("thread");
        let st = child.wait().expect("wait");
        assert_eq!(exit_code(st), 128 + libc::SIGKILL);
    }
}
