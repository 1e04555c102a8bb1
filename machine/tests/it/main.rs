//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod common;
mod budget_clock;
mod budgets;
mod deadlines;
mod os_hints;
mod shared_caches;
