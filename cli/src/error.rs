//! Errors at the command line: which are usage errors (exit status 2) and which are
//! runtime failures (exit status 1), and how usage errors are printed: as clap prints its
//! own, with the usage line of the command that was run.

use std::sync::OnceLock;

use clap::CommandFactory;
use topoprobe_infer::{InferError, LoadError};
use topoprobe_machine::MachineError;
use topoprobe_place::PlaceError;

use crate::args::Cli;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_said_once() {
        let io = std::io::Error::from_raw_os_error(22);
        let e = anyhow::Error::new(io)
            .context(format!(
                "setting the affinity: {}",
                std::io::Error::from_raw_os_error(22)
            ))
            .context("pinning thread 3");
        let m = message(&e);
        assert_eq!(m.matches("os error 22").count(), 1, "{m}");
        assert!(
            m.starts_with("pinning thread 3: setting the affinity"),
            "{m}"
        );
    }
}

/// A request that can never succeed (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Usage(pub(crate) String);

/// The command being run (`["show"]`, `["bench", "sort"]`…), for the usage line of usage
/// errors.
static COMMAND: OnceLock<Vec<String>> = OnceLock::new();

/// Records the command being run (its subcommand path); usage errors then print its usage
/// line.
pub(crate) fn set_command(path: Vec<String>) {
    let _ = COMMAND.set(path);
}

/// Whether an error is a usage error: a [`Usage`], a placement request that cannot be
/// planned, a measuring request this machine cannot satisfy (`--cpus 0-x`, a CPU it lacks,
/// fewer than two CPUs, more threads than a socket has, over any budget), or an inference
/// option out of range (`--sockets 1000` on 8 contexts).
fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<Usage>().is_some()
            || c.downcast_ref::<MachineError>()
                .is_some_and(MachineError::is_usage)
            || c.downcast_ref::<PlaceError>()
                .is_some_and(PlaceError::is_usage)
            || matches!(
                c.downcast_ref::<InferError>(),
                Some(InferError::InvalidOption(_))
            )
            || matches!(
                c.downcast_ref::<LoadError>(),
                Some(LoadError::Infer {
                    source: InferError::InvalidOption(_),
                    ..
                })
            )
    })
}

/// The exit status for an error: 2 for an invalid request, 1 otherwise.
pub(crate) fn exit_code(e: &anyhow::Error) -> u8 {
    if is_usage(e) {
        2
    } else {
        1
    }
}

/// Prints an error (a usage error as clap prints its own, with the command's usage line)
/// and returns its exit status.
pub(crate) fn report(e: &anyhow::Error) -> u8 {
    let code = exit_code(e);
    let message = message(e);
    if code == 2 {
        usage_message(&message).print().ok();
    } else {
        eprintln!("topoprobe: error: {message}");
    }
    code
}

/// The error and its causes joined by `: `, leaving out a cause whose text the message
/// already holds (an I/O error that its context quotes, said once, not twice).
pub(crate) fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// A clap usage error carrying `message`, with the usage line of the command being run.
fn usage_message(message: &str) -> clap::Error {
    let mut cli = Cli::command();
    cli.build();
    let kind = clap::error::ErrorKind::ArgumentConflict;
    // Built from the top, each level's usage line names its parents.
    let mut cmd = cli;
    for name in COMMAND.get().map_or(&[][..], Vec::as_slice) {
        match cmd.find_subcommand(name).cloned() {
            Some(sub) => cmd = sub,
            None => break,
        }
    }
    cmd.error(kind, message)
}
