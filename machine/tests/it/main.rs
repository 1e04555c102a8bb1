//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod budget_clock;
mod budgets;
mod common;
mod deadlines;
mod os_hints;
mod shared_caches;
