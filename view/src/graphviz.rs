//! Running Graphviz's `dot` to turn the DOT text of [`crate::dot`] into a picture.
//!
//! This is the one place `topoprobe-view` starts a process; every other module is a pure
//! function of its inputs. The program is `$TOPOPROBE_DOT` when set, else `dot` on the
//! `PATH`. Without it, callers show the DOT text instead, with [`NO_GRAPHVIZ`] as the
//! reason.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

use crate::picture::Picture;

/// What to say when Graphviz is missing.
pub const NO_GRAPHVIZ: &str =
    "Graphviz's `dot` was not found (install Graphviz: Debian package `graphviz`)";

/// Why Graphviz did not render a graph; each names the program that was run.
#[derive(Debug, thiserror::Error)]
pub enum GraphvizError {
    /// The program could not be started (the cause is the error's source).
    #[error("starting {}", program.display())]
    Start {
        /// The program.
        program: PathBuf,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The program's standard input could not be opened.
    #[error("no standard input for {}", program.display())]
    NoInput {
        /// The program.
        program: PathBuf,
    },
    /// Waiting for the program or reading its output failed (the cause is the source).
    #[error("running {}", program.display())]
    Run {
        /// The program.
        program: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The thread writing the graph to the program panicked.
    #[error("the thread writing to {} panicked", program.display())]
    WriterPanicked {
        /// The program.
        program: PathBuf,
    },
    /// The graph could not be written to the program (the cause is the error's source).
    #[error("writing the graph to {}", program.display())]
    Write {
        /// The program.
        program: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The program rejected the graph: its exit status and what it wrote on standard error.
    #[error("{} -T{} failed ({status}): {stderr}", program.display(), picture.ext())]
    Failed {
        /// The program.
        program: PathBuf,
        /// The picture format asked for.
        picture: Picture,
        /// Its exit status.
        status: ExitStatus,
        /// Its standard error, trimmed.
        stderr: String,
    },
}

/// The Graphviz program: `$TOPOPROBE_DOT` when set, else `dot` on the `PATH`.
fn program() -> PathBuf {
    std::env::var_os("TOPOPROBE_DOT").map_or_else(|| PathBuf::from("dot"), PathBuf::from)
}

/// Whether Graphviz's `dot` can be run (`dot -V` succeeds).
#[must_use]
pub fn available() -> bool {
    Command::new(program())
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Renders DOT text with Graphviz (`dot -Tsvg` or `dot -Tpng`) and returns the picture.
///
/// # Errors
///
/// Returns [`GraphvizError`] when `dot` cannot be started, written to or waited for, or
/// rejects the graph (its message is included).
pub fn render(dot: &str, picture: Picture) -> Result<Vec<u8>, GraphvizError> {
    let program = program();
    let mut child = match Command::new(&program)
        .arg(format!("-T{}", picture.ext()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(source) => return Err(GraphvizError::Start { program, source }),
    };
    let Some(mut stdin) = child.stdin.take() else {
        return Err(GraphvizError::NoInput { program });
    };
    let text = dot.to_string();
    // Write from another thread so that a large output cannot dead-lock the pipes.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = match child.wait_with_output() {
        Ok(out) => out,
        Err(source) => return Err(GraphvizError::Run { program, source }),
    };
    match writer.join() {
        Err(_) => return Err(GraphvizError::WriterPanicked { program }),
        Ok(Err(source)) => return Err(GraphvizError::Write { program, source }),
        Ok(Ok(())) => {}
    }
    if !out.status.success() {
        return Err(GraphvizError::Failed {
            program,
            picture,
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}
