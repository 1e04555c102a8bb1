//! The environment through which `topoprobe run` tells the preload library
//! (`libtopoprobe_preload.so`) where to pin a program's threads.

/// CPUs in placement order (`0,20,1`): the main thread takes the first, the `i`-th created
/// thread the `i+1`-th.
pub const PIN_CPUS_VAR: &str = "TOPOPROBE_PIN_CPUS";
/// Hexadecimal mask of created threads not to pin (bit `i`: the `i`-th thread the program
/// creates), like `likwid-pin -s`.
pub const PIN_SKIP_VAR: &str = "TOPOPROBE_PIN_SKIP";
/// File name of the preload library.
pub const PRELOAD_LIBRARY: &str = "libtopoprobe_preload.so";
