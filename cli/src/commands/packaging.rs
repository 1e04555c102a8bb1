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
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    write_pages(&cmd, dir)
        .with_context(|| format!("writing the man pages into {}", dir.display()))?;
    eprintln!("topoprobe: wrote the man pages into {}", dir.display());
    Ok(())
}

/// Writes the page of `cmd` and of each of its commands that is not hidden into `dir`,
/// each replaced by the rules of every output (`topoprobe_files::replace`), as clap's
/// generator names them (`topoprobe-run.1`).
fn write_pages(cmd: &clap::Command, dir: &std::path::Path) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render(&mut page).context("rendering a man page")?;
    topoprobe_files::replace(&dir.join(man.get_filename()), &page)?;
    Ok(())
}

/// Prints every argument of every command that takes a file or folder, one JSON object a
/// line: the command's words (`["bench", "locks"]`), the argument's id, its flag (`-o` /
/// `--output`, or none for a positional one), its value hint, whether it is written
/// (`output`: `-o` and `manpages DIR`) and the long flags of the command (for a caller
/// that builds a command line). An argument takes a path when its values are `PathBuf`s
/// or its hint names a file or folder.
pub(crate) fn file_arguments() -> Result<()> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut lines = String::new();
    each_command(&cmd, &mut Vec::new(), &mut lines);
    output::write_stdout(lines.as_bytes())
}

/// One argument that takes a file or folder, as [`file_arguments`] prints it.
#[derive(serde::Serialize)]
struct FileArgument<'a> {
    /// The command's words.
    command: &'a [String],
    /// The argument's id.
    arg: &'a str,
    /// Its flag, long if it has one (none for a positional argument).
    flag: Option<String>,
    /// Its value hint, as clap names it.
    hint: String,
    /// Whether topoprobe writes it.
    output: bool,
    /// The long flags of the command.
    flags: &'a [String],
}

/// [`file_arguments`] for `cmd`, whose words are `path`, and its commands.
fn each_command(cmd: &clap::Command, path: &mut Vec<String>, lines: &mut String) {
    use clap::ValueHint;
    let flags: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    for arg in cmd.get_arguments() {
        let hint = arg.get_value_hint();
        let path_value =
            arg.get_value_parser().type_id() == std::any::TypeId::of::<std::path::PathBuf>();
        let file_hint = matches!(
            hint,
            ValueHint::FilePath
                | ValueHint::DirPath
                | ValueHint::AnyPath
                | ValueHint::ExecutablePath
        );
        if !(path_value || file_hint) || !arg.get_action().takes_values() {
            continue;
        }
        let id = arg.get_id().as_str();
        let flag = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .or_else(|| arg.get_short().map(|s| format!("-{s}")));
        let output = id == "output" || (path.last().map(String::as_str) == Some("manpages"));
        let line = FileArgument {
            command: path,
            arg: id,
            flag,
            hint: format!("{hint:?}"),
            output,
            flags: &flags,
        };
        lines.push_str(&serde_json::to_string(&line).unwrap_or_default());
        lines.push('\n');
    }
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        each_command(sub, path, lines);
        path.pop();
    }
}
