//! Application heartbeats from C: `tp_heartbeat(n)` counts units of work in shared memory
//! (no system call per call) for `topoprobe autopin`, which sets `TOPOPROBE_HEARTBEAT`
//! in the program's environment; `tp_heartbeat_phase(id)` declares a new phase (autopin
//! restarts its search). Without the variable both do nothing.

use std::ffi::c_int;

/// Counts `n` units of work done by this program (any thread). The first call maps the
/// page named by `TOPOPROBE_HEARTBEAT`; later calls are one atomic add.
#[no_mangle]
pub extern "C" fn tp_heartbeat(n: u64) {
    crate::clear_error();
    topoprobe_tune::heartbeat::beat(n);
}

/// Declares that the program entered phase `id`.
#[no_mangle]
pub extern "C" fn tp_heartbeat_phase(id: u64) {
    crate::clear_error();
    topoprobe_tune::heartbeat::phase(id);
}

/// 1 when heartbeats are published (`TOPOPROBE_HEARTBEAT` names a usable file), else 0.
#[no_mangle]
pub extern "C" fn tp_heartbeat_enabled() -> c_int {
    crate::clear_error();
    c_int::from(topoprobe_tune::heartbeat::enabled())
}
