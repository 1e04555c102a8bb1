//! A terminating signal that arrives while a result is written removes the temporary file
//! (`temps::remove_on_signals`), and the process still ends by that signal.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use topoprobe_model::format::write_atomic_with;

const CHILD: &str = "TOPOPROBE_TEMPS_TEST_TARGET";

/// In the child: half-writes the target named by `CHILD`, says "ready", and waits to be
/// signalled.
fn child(target: &str) {
    topoprobe_sys::temps::remove_on_signals();
    let _ = write_atomic_with(std::path::Path::new(target), |w| {
        w.write_all(b"the first half of a result")?;
        w.flush()?;
        println!("ready");
        std::io::stdout().flush()?;
        std::thread::sleep(Duration::from_secs(30));
        Ok(())
    });
}

#[test]
fn a_signal_during_a_write_removes_the_temporary_file() {
    if let Ok(target) = std::env::var(CHILD) {
        child(&target);
        return;
    }
    for (sig, name) in [
        (libc::SIGINT, "int"),
        (libc::SIGTERM, "term"),
        (libc::SIGHUP, "hup"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join(format!("{name}.json"));
        let mut c = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "temps::a_signal_during_a_write_removes_the_temporary_file",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &target)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let out = BufReader::new(c.stdout.take().expect("stdout"));
        let mut ready = false;
        for line in out.lines() {
            if line.expect("read").trim_end().ends_with("ready") {
                ready = true;
                break;
            }
        }
        assert!(ready, "{name}: the child never got to its write");
        let temps = || -> Vec<String> {
            std::fs::read_dir(dir.path())
                .expect("dir")
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(temps().len(), 1, "{name}: one temporary file while writing");
        // SAFETY: sends a signal to the child just started.
        assert_eq!(unsafe { libc::kill(c.id() as libc::pid_t, sig) }, 0);
        let status = c.wait().expect("wait");
        assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
        assert!(temps().is_empty(), "{name}: left behind {:?}", temps());
    }
}
