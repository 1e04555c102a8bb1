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
