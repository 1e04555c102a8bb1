//! `topoprobe`: measure a multi-core machine's topology instead of trusting the OS.
//!
//! The binary is a thin layer over the libraries: [`args`] holds every argument,
//! [`error`] the exit codes, [`inputs`] loads the topology a command works on, [`output`]
//! and [`progress`] write results and progress, [`pair_notes`] says which pairs were
//! flagged (noisy, or given up), and each module of [`commands`] runs one command. Exit
//! codes: 0 success, 1 runtime failure, 2 usage error.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

mod args;
mod commands;
mod cpusets;
mod error;
mod inputs;
mod output;
mod pair_notes;
mod planned;
mod progress;

use args::{Cli, Command};

fn main() -> ExitCode {
    // The resident memory of a large inference is what it holds (docs/LIMITS.md).
    topoprobe_sys::memory::return_large_blocks_when_freed();
    // A result being written when Ctrl-C arrives leaves no temporary file behind.
    topoprobe_sys::temps::remove_on_signals();
    let matches = Cli::command().get_matches();
    let mut path = Vec::new();
    let mut level = &matches;
    while let Some((name, sub)) = level.subcommand() {
        path.push(name.to_string());
        level = sub;
    }
    error::set_command(path);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Infer(a) => commands::infer::run(&a),
        Command::Show(a) => commands::show::run(&a),
        Command::Matrix(a) => commands::matrix::run(&a),
        Command::Latency(a) => commands::latency::run(&a),
        Command::Cache(a) => commands::cache::run(&a),
        Command::Mem(a) => commands::mem::run(&a),
        Command::Contention(a) => commands::contention::run(&a),
        Command::Heatmap(a) => commands::heatmap::run(&a),
        Command::Report(a) => commands::report::run(&a),
        Command::Place(a) => commands::place::run(&a),
        Command::Cpus(a) => commands::cpus::run(&a),
        Command::Os(a) => commands::os::run(&a),
        Command::Run(a) => return commands::run::main(&a),
        Command::Power(a) => commands::power::run(&a),
        Command::Autopin(a) => return commands::autopin::main(&a),
        Command::Balance(a) => commands::balance::run(&a),
        Command::Bench(a) => commands::bench::run(&a),
        Command::Completions(a) => commands::packaging::completions(&a),
        Command::Manpages(a) => commands::packaging::manpages(&a),
        Command::FileArguments(_) => commands::packaging::file_arguments(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(error::report(&e)),
    }
}
