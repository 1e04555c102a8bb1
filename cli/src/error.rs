//! Errors at the command line: which are usage errors (exit status 2) and which are
//! runtime failures (exit status 1), and how usage errors are printed.

use clap::CommandFactory;
use topoprobe_place::PlaceError;

use crate::args::Cli;

/// A request that can never succeed (exit status 2).
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// The exit status for an error: 2 for an invalid request, 1 otherwise.
pub(crate) fn exit_code(e: &anyhow::Error) -> u8 {
    let usage = e.chain().any(|c| {
        c.downcast_ref::<Usage>().is_some()
            || c.downcast_ref::<PlaceError>()
                .is_some_and(PlaceError::is_usage)
    });
    if usage {
        2
    } else {
        1
    }
}

/// Exits with a usage error (status 2), formatted as clap formats its own.
pub(crate) fn usage_error(message: &str) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}
