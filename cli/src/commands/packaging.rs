//! `topoprobe completions` and `topoprobe manpages`: shell completions and man pages
//! generated from the command-line definition (clap's own generators), so that they
//! never fall out of step with it. `scripts/install.sh` installs both.

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManpagesArgs};
use crate::output;

/// Writes the completion script of a shell to standard output or `-o FILE`.
///
/// # Errors
///
/// When the output cannot be written.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<()> {
    output::check_target(args.output.as_deref(), &[])?;
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "topoprobe", &mut script);
    output::write_to(args.output.as_deref(), &script)
}

/// Writes `topoprobe.1` and a page per command (`topoprobe-run.1`, `topoprobe-bench-locks.1`,
/// …; not for hidden commands) into a directory, made when missing.
///
/// # Errors
///
/// When the directory cannot be made or a page cannot be written.
pub(crate) fn manpages(args: &ManpagesArgs) -> Result<()> {
    let dir = &args.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing the man pages into {}", dir.display()))?;
    eprintln!("topoprobe: wrote the man pages into {}", dir.display());
    Ok(())
}
