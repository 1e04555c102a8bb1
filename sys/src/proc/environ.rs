//! `/proc/<pid>/environ` and `cmdline`: the environment and arguments a process was
//! started with.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use super::{read_bytes, task_dir, ProcError};

/// The value of variable `name` in the environment process `pid` was started with
/// (`None` when it was not set). Changes the process made later are not seen.
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited process; [`ProcError::Denied`] for another user's.
pub fn environ_var(pid: i32, name: &str) -> Result<Option<OsString>, ProcError> {
    let path = task_dir(pid, None).join("environ");
    let bytes = read_bytes(&path, pid, None)?;
    Ok(find_var(&bytes, name))
}

/// The command line of process `pid` (empty for a kernel thread).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited process.
pub fn cmdline(pid: i32) -> Result<Vec<OsString>, ProcError> {
    let path = task_dir(pid, None).join("cmdline");
    let bytes = read_bytes(&path, pid, None)?;
    Ok(bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect())
}

/// Finds `name=value` among NUL-separated entries.
fn find_var(environ: &[u8], name: &str) -> Option<OsString> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let rest = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(OsString::from_vec(rest.to_vec()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_found_by_exact_name() {
        let env = b"A=1\0TOPO=x\0TOPOPROBE_HEARTBEAT=/dev/shm/hb\0";
        assert_eq!(
            find_var(env, "TOPOPROBE_HEARTBEAT"),
            Some(OsString::from("/dev/shm/hb"))
        );
        assert_eq!(find_var(env, "TOP"), None);
        assert_eq!(find_var(env, "A"), Some(OsString::from("1")));
        let pid = i32::try_from(std::process::id()).expect("pid");
        assert!(environ_var(pid, "NO_SUCH_VARIABLE_HERE_42")
            .expect("reads")
            .is_none());
    }
}
