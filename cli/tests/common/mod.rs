#![allow(dead_code)] // each test file uses a part of the helpers
//! Helpers shared by the tests of the commands that run programs (place, run, autopin,
//! balance): the binary, a scratch directory and a 2-CPU description.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The `topoprobe` binary.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_topoprobe")
}

/// A scratch directory of the tests.
pub fn tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tuning-tests")
}

/// A description of a 2-CPU machine (CPUs 0 and 1, one socket, no SMT).
pub fn two_cpus() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tmp().join(format!("m2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let m = dir.join("m2.csv");
        std::fs::write(&m, ",50\n50,\n").expect("matrix");
        let out = dir.join("m2.json");
        let st = Command::new(exe())
            .args(["infer", "--from-matrix"])
            .arg(&m)
            .args(["--json", "-o"])
            .arg(&out)
            .output()
            .expect("infer");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        out.to_string_lossy().into_owned()
    })
}
