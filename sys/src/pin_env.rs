//! The environment through which `topoprobe run` tells the preload library
//! (`libtopoprobe_preload.so`) where to pin a program's threads.
//!
//! The names are kept in one file (`pin_env_names.rs`) that the preload library includes
//! too, so that both sides always agree without the library depending on this crate.

include!("pin_env_names.rs");
