//! Running Graphviz's `dot` to turn the DOT text of [`crate::dot`] into a picture.
//!
//! This is the one place `topoprobe-view` starts a process; every other module is a pure
//! function of its inputs. The program is `$TOPOPROBE_DOT` when set, else `dot` on the
//! `PATH`. Without it, callers show the DOT text instead, with [`NO_GRAPHVIZ`] as the
//! reason; a program that is there but fails or hangs is an error that says so
//! ([`check`]). Rendering is stopped after a timeout ([`RENDER_TIMEOUT`], or
//! `$TOPOPROBE_DOT_TIMEOUT` seconds).

use std::io::{ErrorKind, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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
    /// The program failed (rejected the graph, or `-V`): its exit status and what it wrote
    /// on standard error.
    #[error("{} {flag} failed ({status}): {stderr}", program.display())]
    Failed {
        /// The program.
        program: PathBuf,
        /// What it was asked (`-Tsvg`, `-V`).
        flag: String,
        /// Its exit status.
        status: ExitStatus,
        /// Its standard error, trimmed (at most 2000 characters).
        stderr: String,
    },
    /// The program did not finish in time; it was stopped, with the processes it started.
    #[error(
        "{} {flag} did not finish within {seconds} s and was stopped (TOPOPROBE_DOT_TIMEOUT \
         sets the time for rendering)",
        program.display()
    )]
    TimedOut {
        /// The program.
        program: PathBuf,
        /// What it was asked (`-Tsvg`, `-V`).
        flag: String,
        /// The time it had.
        seconds: f64,
    },
}

/// The Graphviz program: `$TOPOPROBE_DOT` when set, else `dot` on the `PATH`.
fn program() -> PathBuf {
    std::env::var_os("TOPOPROBE_DOT").map_or_else(|| PathBuf::from("dot"), PathBuf::from)
}

/// How long `dot -V` may take: a renderer that does not answer by then is taken for one
/// that hangs.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long rendering one graph may take by default (`$TOPOPROBE_DOT_TIMEOUT`, in
/// seconds, changes it): the graphs of a 4096-context machine render in seconds.
pub const RENDER_TIMEOUT: Duration = Duration::from_secs(60);

/// The rendering timeout: `$TOPOPROBE_DOT_TIMEOUT` seconds when it is a positive number,
/// else [`RENDER_TIMEOUT`].
fn render_timeout() -> Duration {
    std::env::var("TOPOPROBE_DOT_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6)
        .map_or(RENDER_TIMEOUT, Duration::from_secs_f64)
}

/// Whether Graphviz's `dot` can be run (`dot -V` succeeds); see [`check`] for why not.
#[must_use]
pub fn available() -> bool {
    matches!(check(), Ok(true))
}

/// Whether Graphviz's `dot` (or `$TOPOPROBE_DOT`) can be run: `Ok(true)` when `dot -V`
/// succeeds, `Ok(false)` when there is no such program (callers show the DOT text
/// instead, with [`NO_GRAPHVIZ`]).
///
/// # Errors
///
/// A program that starts but fails `-V` ([`GraphvizError::Failed`], with its exit status
/// and standard error), cannot be started for another reason than being missing
/// ([`GraphvizError::Start`]: not executable...), or does not answer within 10 s
/// ([`GraphvizError::TimedOut`]): said as such, not as Graphviz missing.
pub fn check() -> Result<bool, GraphvizError> {
    let program = program();
    let mut cmd = Command::new(&program);
    cmd.arg("-V");
    match run(&program, cmd, None, PROBE_TIMEOUT, "-V") {
        Ok(_) => Ok(true),
        Err(GraphvizError::Start { source, .. }) if source.kind() == ErrorKind::NotFound => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Renders DOT text with Graphviz (`dot -Tsvg` or `dot -Tpng`) and returns the picture.
/// A renderer that has not finished within the timeout (60 s, or
/// `$TOPOPROBE_DOT_TIMEOUT` seconds) is stopped, with every process it started.
///
/// # Errors
///
/// Returns [`GraphvizError`] when `dot` cannot be started, written to or waited for,
/// rejects the graph (its message is included), or runs past the timeout.
pub fn render(dot: &str, picture: Picture) -> Result<Vec<u8>, GraphvizError> {
    let program = program();
    let flag = format!("-T{}", picture.ext());
    let mut cmd = Command::new(&program);
    cmd.arg(&flag);
    run(
        &program,
        cmd,
        Some(dot.to_string()),
        render_timeout(),
        &flag,
    )
}

/// Runs `cmd` (`program` with `flag`), `input` on its standard input, for its standard
/// output; stopped (its whole process group) after `timeout`.
fn run(
    program: &Path,
    mut cmd: Command,
    input: Option<String>,
    timeout: Duration,
    flag: &str,
) -> Result<Vec<u8>, GraphvizError> {
    let program = program.to_path_buf();
    // A group of its own, so that a renderer that hangs is stopped with the processes it
    // started (a shell script's children hold the pipes open).
    let mut child = match cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(source) => return Err(GraphvizError::Start { program, source }),
    };
    let writer = match (input, child.stdin.take()) {
        (Some(text), Some(mut stdin)) => {
            // Written from another thread so that a large output cannot dead-lock the pipes.
            Some(std::thread::spawn(move || stdin.write_all(text.as_bytes())))
        }
        (Some(_), None) => return Err(GraphvizError::NoInput { program }),
        (None, _) => None,
    };
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                // At most 1 GiB of picture: a renderer gone wild is cut there.
                p.by_ref().take(1 << 30).read_to_end(&mut bytes)?;
            }
            Ok::<_, std::io::Error>(bytes)
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_millis(1);
    // A bounded poll of the child (no thread can wait for a child with a timeout).
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                stop_group(&mut child);
                return Err(GraphvizError::TimedOut {
                    program,
                    flag: flag.to_string(),
                    seconds: timeout.as_secs_f64(),
                });
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(50));
            }
            Err(source) => {
                stop_group(&mut child);
                return Err(GraphvizError::Run { program, source });
            }
        }
    };
    if let Some(w) = writer {
        match w.join() {
            Err(_) => return Err(GraphvizError::WriterPanicked { program }),
            // A renderer that failed may close its input early: its status says why.
            Ok(Err(source)) if status.success() => {
                return Err(GraphvizError::Write { program, source })
            }
            Ok(_) => {}
        }
    }
    let joined = |h: std::thread::JoinHandle<std::io::Result<Vec<u8>>>| match h.join() {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::other("the reading thread panicked")),
    };
    let err_text = joined(stderr).unwrap_or_default();
    let out = joined(stdout).map_err(|source| GraphvizError::Run {
        program: program.clone(),
        source,
    })?;
    if !status.success() {
        let text = String::from_utf8_lossy(&err_text);
        let trimmed = text.trim();
        let stderr = match trimmed.char_indices().nth(2000) {
            Some((at, _)) => format!("{}…", &trimmed[..at]),
            None => trimmed.to_string(),
        };
        return Err(GraphvizError::Failed {
            program,
            flag: flag.to_string(),
            status,
            stderr,
        });
    }
    Ok(out)
}

/// Kills the process group of `child` (made by `process_group(0)`) and reaps the child.
fn stop_group(child: &mut std::process::Child) {
    // This crate makes no system call of its own: kill(1) stops the group (its id is the
    // child's pid); the child itself is killed directly too, should kill(1) be missing.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}
