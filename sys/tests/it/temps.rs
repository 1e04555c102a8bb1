//! A terminating signal that arrives while a result is written removes the temporary file
//! (`temps::remove_on_signals`), and the process still ends by that signal.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use topoprobe_model::format::write_atomic_with;

const CHILD: &str = "TOPOPROBE_TEMPS_TEST_TARGET";

/// This test's name as the test harness knows it (`temps::…`, without the binary's name),
/// for `--exact`.
fn this_test() -> String {
    let module = module_path!();
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{module}::a_signal_during_a_write_removes_the_temporary_file")
}

/// In the child: half-writes the target named by `CHILD`, says "ready", and waits to be
/// signalled.
fn child(target: &str) {
    // The child starts from the default actions whatever the test runner inherited (a
    // runner started in the background by a shell ignores SIGINT, and
    // `remove_on_signals` rightly leaves an ignored signal alone).
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restores the default action of a signal; no handler is involved.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    topoprobe_sys::temps::remove_on_signals();
    let _ = write_atomic_with(std::path::Path::new(target), |w| {
        w.write_all(b"the first half of a result")?;
        w.flush()?;
        println!("ready");
        std::io::stdout().flush()?;
        // A program that waits to be killed: the parent signals it once it said "ready".
        std::thread::sleep(Duration::from_secs(300));
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
        if ignored(sig) {
            // As under `nohup`: the child inherits the ignored signal, which a handler
            // respects (the signal never ends it).
            eprintln!("skipped {name}: this process ignores the signal");
            continue;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join(format!("{name}.json"));
        let mut c = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", &this_test(), "--nocapture", "--test-threads=1"])
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

/// Whether this process ignores `sig` (`SIG_IGN`, inherited by its children).
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-value; a null new action only reads the
    // current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}
