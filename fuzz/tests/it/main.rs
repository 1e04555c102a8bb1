//! The integration tests of this crate, in one test binary (one link instead of one per file).

// Tests write and read their own fixtures with std::fs; the rules of topoprobe_files are
// for the files topoprobe is handed.
#![allow(clippy::disallowed_methods)]

mod csv_streamed;
mod large_descriptions;
mod replay;
mod reproducers;
