//! The integration tests of this crate, in one test binary (one link instead of one per file).

// Tests write and read their own fixtures with std::fs; the rules of topoprobe_files are
// for the files topoprobe is handed.
#![allow(clippy::disallowed_methods)]

mod bad_input;
mod common;
mod compact_tables;
mod compare;
mod corpus;
mod hints;
mod mct;
mod noisy_pairs;
mod robustness;
mod sim_spec;
mod simulated;
mod single_core_sockets;
mod smt_messages;
mod sparse;
