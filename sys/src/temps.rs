//! Temporary files removed when a terminating signal arrives: while
//! [`write_atomic`](topoprobe_model::format::write_atomic) writes a result, its temporary
//! file is listed in [`in_progress`]; the
//! handler [`remove_on_signals`] installs unlinks those files, then lets the signal end
//! the process as it would have.

use std::sync::atomic::Ordering;
use std::sync::Once;

use topoprobe_model::format::temps::in_progress;

/// The signals that end a process by default and that a user sends to stop it.
const TERMINATING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn remove_and_die(sig: libc::c_int) {
    for slot in in_progress() {
        let path = slot.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a non-null slot holds a NUL-terminated path that is never freed
            // (`in_progress`'s contract); unlink is async-signal-safe.
            unsafe {
                libc::unlink(path);
            }
        }
    }
    // SAFETY: signal and raise are async-signal-safe; with the default action restored,
    // the signal ends the process as it would have without this handler.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Installs, once per process, a handler of SIGINT, SIGTERM and SIGHUP that removes the
/// temporary files of writes in progress and then ends the process by the same signal
/// (its exit status stays 128 + signal). A signal whose action is not the default (ignored,
/// or handled by the program) is left alone. Code that installs its own handler later
/// replaces this one for as long as it keeps it.
pub fn remove_on_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for sig in TERMINATING {
            // SAFETY: a zeroed sigaction is a valid value to receive the current action;
            // the new action's handler only calls async-signal-safe functions.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut current) != 0
                    || current.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = remove_and_die as *const () as usize;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, std::ptr::null_mut());
            }
        }
    });
}
