// The names shared by `topoprobe run` and its preload library. This file is `include!`d
// twice: by `sys/src/pin_env.rs` and by `preload/src/lib.rs`, which depends on nothing
// but the standard library (so that `topoprobe-place` can compile it on its own and carry
// it inside the `topoprobe` binary). Constants only.

/// CPUs in placement order (`0,20,1`): the main thread takes the first, the `i`-th created
/// thread the `i+1`-th.
pub const PIN_CPUS_VAR: &str = "TOPOPROBE_PIN_CPUS";
/// Hexadecimal mask of created threads not to pin (bit `i`: the `i`-th thread the program
/// creates), like `likwid-pin -s`.
pub const PIN_SKIP_VAR: &str = "TOPOPROBE_PIN_SKIP";
/// The machine the placement was made for, in words (`host h, 8 contexts: CPUs 0-7`), for
/// the pinning library's message when the placement names CPUs the program may not run on.
pub const PIN_MACHINE_VAR: &str = "TOPOPROBE_PIN_MACHINE";
/// File name of the preload library.
pub const PRELOAD_LIBRARY: &str = "libtopoprobe_preload.so";
