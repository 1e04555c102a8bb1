//! Error texts of the C API carry the operating system's reason.

use std::ffi::{CStr, CString};

fn last_error() -> String {
    // SAFETY: tp_last_error returns a valid NUL-terminated string owned by the library.
    unsafe { CStr::from_ptr(topoprobe::tp_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Row 11: loading an empty path or a missing file says why it failed.
#[test]
fn load_errors_carry_the_os_reason() {
    for path in ["", "/nonexistent/dir/m.json"] {
        let c = CString::new(path).unwrap();
        // SAFETY: a valid NUL-terminated string.
        let t = unsafe { topoprobe::tp_topology_load(c.as_ptr()) };
        assert!(t.is_null());
        let e = last_error();
        assert!(e.contains("No such file or directory"), "{path:?}: {e}");
        assert!(!e.contains(": :"), "{path:?}: {e}");
    }
}

/// A failed call, then one that succeeds: `tp_last_error` is empty again, as documented.
#[test]
fn a_success_clears_the_last_error() {
    let missing = CString::new("/nonexistent/dir/m.json").unwrap();
    // SAFETY: a valid NUL-terminated string.
    let t = unsafe { topoprobe::tp_topology_load(missing.as_ptr()) };
    assert!(t.is_null());
    assert!(!last_error().is_empty());
    let m = std::env::temp_dir().join(format!("tp-errors-{}.csv", std::process::id()));
    std::fs::write(&m, ",50\n50,\n").unwrap();
    let path = CString::new(m.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated string.
    let t = unsafe { topoprobe::tp_topology_load(path.as_ptr()) };
    std::fs::remove_file(&m).ok();
    assert!(!t.is_null(), "{}", last_error());
    assert_eq!(last_error(), "", "a success leaves no error");
    // SAFETY: `t` came from tp_topology_load and is freed once.
    unsafe { topoprobe::tp_topology_free(t) };
}

/// Releasing a lock nobody holds is an error the caller sees, not a null dereference
/// (the MCS lock has no holder's node then); the lock still works afterwards.
#[test]
fn releasing_a_lock_nobody_holds_is_an_error() {
    use topoprobe::locks::{
        tp_lock_acquire, tp_lock_create, tp_lock_free, tp_lock_release, tp_lock_try_acquire,
        TP_BACKOFF_NONE, TP_LOCK_CLH, TP_LOCK_MCS, TP_LOCK_TAS, TP_LOCK_TICKET,
    };
    for kind in [TP_LOCK_MCS, TP_LOCK_TAS, TP_LOCK_TICKET, TP_LOCK_CLH] {
        // SAFETY: a lock kind with no backoff needs no topology.
        let lock = unsafe { tp_lock_create(kind, TP_BACKOFF_NONE, std::ptr::null()) };
        assert!(!lock.is_null(), "{kind}: {}", last_error());
        // SAFETY: a live lock; the second release breaks the contract on purpose.
        unsafe {
            assert_eq!(tp_lock_release(lock), -1, "kind {kind}");
            assert!(last_error().contains("not held"), "{}", last_error());
            assert_eq!(tp_lock_acquire(lock), 0);
            assert_eq!(tp_lock_release(lock), 0);
            assert_eq!(tp_lock_release(lock), -1, "kind {kind}");
            assert_eq!(tp_lock_try_acquire(lock), 1);
            assert_eq!(tp_lock_release(lock), 0);
            tp_lock_free(lock);
        }
    }
}
