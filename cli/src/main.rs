//! `topoprobe`: measure a multi-core machine's topology instead of trusting the OS.
//!
//! The binary is a thin layer over the `topoprobe-model` and `topoprobe-infer` libraries.
//! Exit codes: 0 success, 1 runtime failure, 2 usage error.

use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod live;
mod output;
mod progress;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Infer(a) => commands::infer::run(&a),
        Command::Show(a) => commands::show::run(&a),
        Command::Matrix(a) => commands::matrix::run(&a),
        Command::Latency(a) => commands::latency::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("topoprobe: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
