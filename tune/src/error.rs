//! Errors of the tuners.

use std::io;

use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::heartbeat::HeartbeatError;
use topoprobe_sys::proc::ProcError;

/// Why tuning could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A request that can never succeed (bad schedule, unknown CPU, no candidate).
    #[error("{0}")]
    Usage(String),
    /// The process belongs to someone else: its affinity may not be changed.
    #[error("process {pid}{}: not permitted to change it ({why}); tune only processes you own, or run as their owner", tid.map(|t| format!(" thread {t}")).unwrap_or_default())]
    NotPermitted {
        /// The process.
        pid: i32,
        /// The thread, if one was named.
        tid: Option<i32>,
        /// What the OS said.
        why: String,
    },
    /// The process does not exist.
    #[error("process {0} does not exist (or has exited)")]
    NoProcess(i32),
    /// A metric cannot be used on this machine or program.
    #[error("metric {metric}: unavailable: {reason}")]
    MetricUnavailable {
        /// The metric.
        metric: String,
        /// Why.
        reason: String,
    },
    /// The program could not be started or waited for.
    #[error("cannot run {program}: {source}")]
    Launch {
        /// The program.
        program: String,
        /// What the OS said.
        source: io::Error,
    },
    /// Pinning failed for another reason.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// A `/proc` file could not be read.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// The heartbeat page could not be used.
    #[error(transparent)]
    Heartbeat(#[from] HeartbeatError),
    /// Another OS failure.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// What the OS said.
        source: io::Error,
    },
}

impl TuneError {
    /// Whether the error is the request's fault (exit status 2 at the command line).
    #[must_use]
    pub const fn is_usage(&self) -> bool {
        matches!(self, Self::Usage(_))
    }
}

/// Maps an affinity failure on thread `tid` of `pid` to [`TuneError::NotPermitted`] when the
/// kernel said `EPERM`.
pub(crate) fn affinity_error(pid: i32, tid: i32, e: AffinityError) -> TuneError {
    match e.os_error().and_then(io::Error::raw_os_error) {
        Some(libc::EPERM) => TuneError::NotPermitted {
            pid,
            tid: (tid != pid).then_some(tid),
            why: "the kernel refused to change its CPU affinity (EPERM)".into(),
        },
        _ => TuneError::Affinity(e),
    }
}

/// Checks that process `pid` is one to change, before anything is changed: it is not
/// PID 1 (init: every process it starts would inherit the change), and it belongs to this
/// user (same real or effective user) — even for root, unless `any_user` says that
/// another user's process is meant.
///
/// # Errors
///
/// [`TuneError::NoProcess`] when it does not exist; [`TuneError::NotPermitted`] for PID 1
/// or, naming the owner, for another user's process.
pub fn check_owner(pid: i32, any_user: bool) -> Result<(), TuneError> {
    if pid == 1 {
        return Err(TuneError::NotPermitted {
            pid,
            tid: None,
            why: "it is init (PID 1): every process it starts would inherit the change".into(),
        });
    }
    let status = match topoprobe_sys::proc::task_status(pid, None) {
        Ok(s) => s,
        Err(ProcError::Gone { .. }) => return Err(TuneError::NoProcess(pid)),
        Err(e) => return Err(e.into()),
    };
    // SAFETY: geteuid and getuid take no arguments and cannot fail.
    let (euid, uid) = unsafe { (libc::geteuid(), libc::getuid()) };
    if status.uid == euid || status.uid == uid || (any_user && euid == 0) {
        Ok(())
    } else {
        let hint = if euid == 0 {
            " (as root, --any-user changes other users' processes too)"
        } else {
            ""
        };
        Err(TuneError::NotPermitted {
            pid,
            tid: None,
            why: format!(
                "it belongs to user {}, you are user {euid}{hint}",
                status.uid
            ),
        })
    }
}
