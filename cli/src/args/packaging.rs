//! Arguments of the commands that install topoprobe's documentation into a system: shell
//! completions and man pages, both generated from these very definitions.

use std::path::PathBuf;

use clap::Args;

/// `topoprobe completions`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
    /// Write to FILE (atomically; its directory must exist) instead of standard output;
    /// `-` is standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// `topoprobe file-arguments` (hidden): every argument of every command that takes a
/// file or folder, for the tests that feed each one hostile files and for packagers.
#[derive(Debug, Clone, Args)]
pub(crate) struct FileArgumentsArgs {}

/// `topoprobe manpages`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ManpagesArgs {
    /// The directory to write `topoprobe.1` and one page per command into (made when
    /// missing).
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
}
