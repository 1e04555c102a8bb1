//! OpenMP by policy in C: the `OMP_PLACES` of a placement policy, for programs run once
//! per phase (inside one process, regions switch a pool's policy: `tp_pool_set_policy`).

use std::ffi::c_int;

use crate::{deref, recorded, TpTopology};

/// The `OMP_PLACES` value for `threads` threads (0: every context) placed by `policy`
/// (`TP_POLICY_*`): one place per thread in the policy's order, `{3},{7},{4}`; empty for
/// `TP_POLICY_NONE`. For a program run once per phase (OpenMP runtimes read `OMP_PLACES`
/// at start-up; inside one process, switch a pool's policy between regions). NULL on
/// failure; free with `tp_string_free`.
///
/// # Safety
///
/// `topo` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_omp_places(
    topo: *const TpTopology,
    policy: c_int,
    threads: c_int,
) -> *mut std::ffi::c_char {
    crate::clear_error();
    // SAFETY: the caller passes NULL or a live topology.
    let Some(t) = (unsafe { deref(topo, "topology") }) else {
        return std::ptr::null_mut();
    };
    let Some(p) = crate::policy_of(policy) else {
        return std::ptr::null_mut();
    };
    let req = crate::request(p, threads, 0);
    let Some(s) = recorded(topoprobe_parallel::omp::places(&t.0, &req)) else {
        return std::ptr::null_mut();
    };
    std::ffi::CString::new(s).map_or(std::ptr::null_mut(), std::ffi::CString::into_raw)
}
