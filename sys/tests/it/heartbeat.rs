//! A program named a heartbeat page that is not one (`TOPOPROBE_HEARTBEAT` naming an
//! ordinary small file, or a larger one of another kind) turns heartbeats off with a
//! message and leaves the file byte for byte: it is not grown to a page before its magic
//! number is checked.

use std::process::Command;

use topoprobe_sys::heartbeat::{self, HEARTBEAT_VAR, PAGE_BYTES};

const CHILD: &str = "TOPOPROBE_HEARTBEAT_TEST_CHILD";

#[test]
fn a_heartbeat_page_that_is_an_ordinary_file_is_left_byte_for_byte() {
    if std::env::var_os(CHILD).is_some() {
        // In the child: the page named by the variable is opened at the first beat.
        heartbeat::beat(1);
        println!("enabled={}", heartbeat::enabled());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut other_page = vec![0x5a_u8; PAGE_BYTES];
    other_page[..8].copy_from_slice(b"NOTOURS!");
    for (name, content) in [
        ("notes.txt", b"a user's notes\n".to_vec()),
        ("page-sized", other_page),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &content).expect("fixture");
        let out = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "heartbeat::a_heartbeat_page_that_is_an_ordinary_file_is_left_byte_for_byte",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env(HEARTBEAT_VAR, &path)
            .output()
            .expect("child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stdout}{stderr}");
        assert!(stdout.contains("enabled=false"), "{name}: {stdout}");
        assert!(
            stderr.contains("heartbeats off") && stderr.contains(name),
            "{name}: {stderr}"
        );
        assert_eq!(std::fs::read(&path).expect("read"), content, "{name}");
    }
}
