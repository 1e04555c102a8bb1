//! Running a command: signals sent to this process are passed on to it, and its exit
//! status becomes ours (128 + signal when it was killed).

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};

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

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Signals the kernel raised for the terminal (Ctrl-C) reach the child directly, as it
    // is in our process group; only signals sent by a process (si_code <= 0) are passed on.
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
/// process on to it, and returns its exit code ([`exit_code`]). The command is killed
/// when this process dies first (see [`run_forwarding_with`]).
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
    PENDING.store(0, Ordering::SeqCst);
    let old = install()?;
    let mut child = match cmd.spawn() {
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
    let status = child.wait();
    CHILD.store(0, Ordering::SeqCst);
    restore(&old);
    Ok(exit_code(status?))
}
