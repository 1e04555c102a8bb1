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
