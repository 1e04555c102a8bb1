//! Running a command: signals sent to this process are passed on to it, and its exit
//! status becomes ours (128 + signal when it was killed).
//!
//! [`run_forwarding`] runs a command to its end; [`Supervised`] starts one and lets the
//! caller work on it (re-pin its threads, measure it) while it runs, with the same
//! forwarding, and says which signals arrived ([`Supervised::signals`]).

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Signals passed on to the child.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The child's pid (0 before it exists).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the child existed.
static PENDING: AtomicI32 = AtomicI32::new(0);
/// Bit `s` is set when forwarded signal `s` arrived (whoever sent it).
static RECEIVED: AtomicU64 = AtomicU64::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Signals the kernel raised for the terminal (Ctrl-C) reach the child directly, as it
    // is in our process group; only signals sent by a process (si_code <= 0) are passed on.
    if (0..64).contains(&sig) {
        RECEIVED.fetch_or(1 << sig, Ordering::SeqCst);
    }
    let code = if info.is_null() {
        0
    } else {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t (checked non-null).
        unsafe { (*info).si_code }
    };
    if code > 0 {
        return;
    }
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: kill is async-signal-safe and only sends a signal.
        unsafe {
            libc::kill(child, sig);
        }
    } else {
        PENDING.store(sig, Ordering::SeqCst);
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
/// process on to it, and returns its exit code ([`exit_code`]).
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
/// (`PR_SET_PDEATHSIG`), or at once when this process is already gone by the time it starts.
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

/// A running child whose signals are forwarded: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
/// and SIGUSR2 sent to this process by another process are passed on to it (a terminal's
/// Ctrl-C reaches it directly, as it shares our process group). The handlers are
/// restored when it is waited for or dropped. One at a time per process.
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    old: Vec<(libc::c_int, libc::sigaction)>,
    status: Option<i32>,
}

impl Supervised {
    /// Installs the forwarding handlers and starts `cmd`.
    ///
    /// # Errors
    ///
    /// When the handlers cannot be installed or the command cannot be started (the
    /// handlers are restored then).
    pub fn spawn(cmd: &mut Command) -> io::Result<Self> {
        PENDING.store(0, Ordering::SeqCst);
        RECEIVED.store(0, Ordering::SeqCst);
        let old = install()?;
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                restore(&old);
                return Err(e);
            }
        };
        let pid = i32::try_from(child.id()).unwrap_or(0);
        CHILD.store(pid, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 && pid > 0 {
            // SAFETY: sends a signal to the child just started.
            unsafe {
                libc::kill(pid, pending);
            }
        }
        Ok(Self {
            child,
            old,
            status: None,
        })
    }

    /// The child's process id.
    #[must_use]
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(0)
    }

    /// The forwarded signals that arrived since the child was started (sent by another
    /// process or by the terminal), in increasing order.
    #[must_use]
    pub fn signals(&self) -> Vec<i32> {
        received()
    }

    /// The child's exit code ([`exit_code`]) if it has ended, without waiting.
    ///
    /// # Errors
    ///
    /// When the child cannot be waited for.
    pub fn try_wait(&mut self) -> io::Result<Option<i32>> {
        if self.status.is_none() {
            if let Some(st) = self.child.try_wait()? {
                self.finish(exit_code(st));
            }
        }
        Ok(self.status)
    }

    /// Waits for the child to end and returns its exit code ([`exit_code`]).
    ///
    /// # Errors
    ///
    /// When the child cannot be waited for.
    pub fn wait(mut self) -> io::Result<i32> {
        if let Some(code) = self.status {
            return Ok(code);
        }
        let st = self.child.wait()?;
        let code = exit_code(st);
        self.finish(code);
        Ok(code)
    }

    /// Records the exit code and gives the signals back.
    fn finish(&mut self, code: i32) {
        self.status = Some(code);
        CHILD.store(0, Ordering::SeqCst);
        restore(&std::mem::take(&mut self.old));
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.status.is_none() {
            CHILD.store(0, Ordering::SeqCst);
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
    }
}
