//! One module per command.

pub(crate) mod infer;
pub(crate) mod show;
