//! The integration tests of this crate, in one test binary (one link instead of one per file).

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
