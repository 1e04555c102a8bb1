//! How topoprobe opens, reads and replaces files: every file it reads (descriptions,
//! matrices, hwloc XML, capture archives, sysfs, procfs and powercap trees) and every file
//! it writes (`-o`, this machine's description, heartbeat pages, the pinning library's
//! cache) goes through this crate, which applies the same rules to all of them:
//!
//! - **Opening never blocks.** A file is opened with `O_NONBLOCK | O_NOCTTY | O_CLOEXEC`
//!   and its type checked with `fstat` (and with `stat` before opening, as opening some
//!   devices has effects). A reader expects a regular file unless it accepts a stream
//!   ([`Rules::file_or_stream`]); a FIFO, pipe or terminal it accepts waits at most
//!   [`STREAM_WAIT`] (10 s) for its first byte, then fails with a message that says so. A
//!   device, socket or directory where a regular file is expected is refused before any
//!   read ([`open`]).
//! - **Reading is bounded.** Every read has a size limit, checked against the file's size
//!   before anything is allocated and again while reading: at most `limit + 1` bytes are
//!   ever read, so that the files of `/proc` and sysfs whose size reads as 0 or 4096, and
//!   `/dev/zero` where a stream is accepted, are bounded too. The error names the path and
//!   the limit ([`Input`], [`read`]).
//! - **Replacing happens only where the shell's `>` could.** A result is written to a
//!   temporary file in the target's directory and renamed over it ([`replace`]); a
//!   regular file this user may not write (`access(W_OK)`: a user's own mode-0444 file) is
//!   refused with "permission denied" and left as it is, never renamed over. A FIFO,
//!   terminal or device is written in place; a FIFO that nothing reads fails after
//!   [`STREAM_WAIT`] instead of blocking.
//! - **A file of a fixed form is checked before it is changed.** A heartbeat page
//!   ([`open_fixed`]) is opened only when it is a regular file that is empty or has the
//!   page's size and magic number; any other file is left byte for byte.
//!
//! # Why a crate of its own
//!
//! The rules need system calls (`faccessat`, `fcntl`, `ftruncate`), which the topology
//! model (`topoprobe-model`, `#![forbid(unsafe_code)]`, "only reads or writes the files it
//! is given") does not make, and every crate of the workspace needs them, including
//! `topoprobe-model` itself, the lowest of them. A bottom crate with no topoprobe
//! dependency (only `libc`, `tempfile` and `thiserror`) is the one place below all of
//! them. `clippy.toml` refuses `std::fs::read`, `read_to_string`, `write`, `copy`,
//! `File::open`, `File::create` and `OpenOptions::open` everywhere else; this crate is
//! the exception, allowed below.
//!
//! The limits themselves are the callers' (`topoprobe_model::limits` lists them, and
//! `docs/LIMITS.md` for users): a reader passes its limit in [`Rules`].

// This crate is where files are opened: the methods clippy.toml refuses elsewhere are
// the ones these rules are built on.
#![allow(clippy::disallowed_methods)]

mod error;
mod fixed;
mod read;
mod replace;
mod size;
pub mod temps;

pub use error::FileError;
pub use fixed::{open_fixed, Fixed};
pub use read::{kind_of, open, read, read_optional, read_string_lossy, Input, Rules, STREAM_WAIT};
pub use replace::{check_replace, create_parent, may_replace, replace, replace_with};
pub use size::size_text;
