//! infer
