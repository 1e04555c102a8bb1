//! One module per command.

pub(crate) mod infer;
pub(crate) mod latency;
pub(crate) mod matrix;
pub(crate) mod measure_machine;
pub(crate) mod show;
