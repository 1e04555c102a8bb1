//! The sysfs captures of `measure/tests/data/sysfs`, unpacked for a test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder of the captures.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../measure/tests/data/sysfs")
}

/// Every capture in the folder (each `<name>.tar.bz2` with its
/// `<name>.debian-hwloc2.9.console`), sorted.
pub fn captures() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data_dir())
        .expect("the sysfs captures")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".tar.bz2")
                .map(str::to_string)
        })
        .collect();
    v.sort();
    v
}

/// Unpacks capture `name` into a new temporary folder; returns the folder (kept while it
/// lives) and the capture's root inside it.
pub fn unpack(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new("tar")
        .arg("xjf")
        .arg(data_dir().join(format!("{name}.tar.bz2")))
        .arg("-C")
        .arg(dir.path())
        .output()
        .expect("tar (with bzip2) runs");
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = dir.path().join(name);
    (dir, root)
}
