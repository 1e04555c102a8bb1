//! Errors of the parallel algorithms and their experiments.
//!
//! A sort, a pool or an experiment fails as any work spread over placed threads does: a
//! parameter out of range, a placement that cannot be made, a worker thread that cannot
//! start or panics, a result that is checked and wrong. `topoprobe_sync`'s experiments
//! fail the same ways, so the type is [`topoprobe_place::WorkError`], kept once in the
//! crate both build on; `ParallelError` is its name here.

/// Why a sort, a pool or an experiment could not be set up or run
/// ([`topoprobe_place::WorkError`]).
pub use topoprobe_place::WorkError as ParallelError;
