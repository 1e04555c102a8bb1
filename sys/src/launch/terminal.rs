//! The controlling terminal of a supervised child, handled as a shell handles a job's:
//! while the child runs in the foreground its process group owns the terminal (it reads
//! it, and the terminal's Ctrl-C and Ctrl-Z reach it directly); when it stops or ends the
//! terminal comes back to ours.
//!
//! Changing a terminal's foreground group from a background group raises `SIGTTOU`; it
//! is blocked in the calling thread around each change, as shells do.

use std::io;
use std::os::unix::io::RawFd;

/// Our controlling terminal (on standard input) and our own process group.
#[derive(Debug, Clone, Copy)]
pub(super) struct Terminal {
    fd: RawFd,
    own: libc::pid_t,
}

impl Terminal {
    /// Standard input when it is this process's controlling terminal (a terminal that is
    /// not ours answers `tcgetpgrp` with `ENOTTY`).
    pub(super) fn ours() -> Option<Self> {
        let fd = libc::STDIN_FILENO;
        // SAFETY: isatty, tcgetpgrp and getpgrp only read the state of a descriptor or of
        // this process.
        let (tty, fg, own) = unsafe { (libc::isatty(fd), libc::tcgetpgrp(fd), libc::getpgrp()) };
        (tty == 1 && fg > 0).then_some(Self { fd, own })
    }

    /// The descriptor of the terminal.
    pub(super) const fn fd(self) -> RawFd {
        self.fd
    }

    /// Our own process group.
    pub(super) const fn own(self) -> libc::pid_t {
        self.own
    }

    /// The terminal's foreground process group now (`-1` when it cannot be read).
    fn foreground(self) -> libc::pid_t {
        // SAFETY: tcgetpgrp only reads the terminal's state.
        unsafe { libc::tcgetpgrp(self.fd) }
    }

    /// Whether our process group is the terminal's foreground group (the shell runs us
    /// as its foreground job).
    pub(super) fn ours_in_front(self) -> bool {
        self.foreground() == self.own
    }

    /// Makes process group `pgrp` the terminal's foreground group.
    pub(super) fn give_to(self, pgrp: libc::pid_t) -> io::Result<()> {
        set_foreground(self.fd, pgrp)
    }

    /// Takes the terminal back for our process group if group `pgrp` owns it.
    pub(super) fn take_back_from(self, pgrp: libc::pid_t) {
        if self.foreground() == pgrp {
            let _ = set_foreground(self.fd, self.own);
        }
    }
}

/// `tcsetpgrp(fd, pgrp)` with `SIGTTOU` blocked in the calling thread around the call.
/// Async-signal-safe: the child calls it between fork and exec.
pub(super) fn set_foreground(fd: RawFd, pgrp: libc::pid_t) -> io::Result<()> {
    // SAFETY: the sets are initialised by sigemptyset before use; pthread_sigmask and
    // tcsetpgrp only change this thread's mask and the terminal's foreground group.
    unsafe {
        let mut block: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut block);
        libc::sigemptyset(&mut old);
        libc::sigaddset(&mut block, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &block, &mut old);
        let r = libc::tcsetpgrp(fd, pgrp);
        let e = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if r == 0 {
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// Stops our own job with `sig` (`SIGTSTP`, `SIGTTIN` or `SIGTTOU`) as the terminal
/// would have stopped it had the child not owned it: the signal goes to our process
/// group, so that the shell sees the job stopped. Returns once we are continued, or at
/// once when the kernel discards the stop (a process group with no parent in another
/// group of the session, "orphaned", is not stopped by these signals).
pub(super) fn stop_own_job(sig: libc::c_int) {
    // SAFETY: kill(0, sig) signals our own process group; getpid and gettid only read
    // ids.
    unsafe {
        libc::kill(0, sig);
        // The kernel hands a group-directed signal to the main thread; another thread
        // stops at its next system call once the main thread has taken the stop.
        if libc::gettid() != libc::getpid() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
