//! `/proc/<pid>/task/<tid>/sched` (kernels with scheduler debugging): how often a thread
//! moved between CPUs.

use super::{read_file, task_dir, ProcError};

/// Parses `se.nr_migrations : N`.
fn parse_migrations(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "se.nr_migrations").then(|| v.trim().parse().ok())?
    })
}

/// How many times thread `tid` of process `pid` moved to another CPU (`None` when the
/// kernel does not say: no `sched` file, or no such line).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited thread; [`ProcError::Denied`] for another user's.
pub fn migrations(pid: i32, tid: i32) -> Result<Option<u64>, ProcError> {
    let path = task_dir(pid, Some(tid)).join("sched");
    match read_file(&path, pid, Some(tid)) {
        Ok(text) => Ok(parse_migrations(&text)),
        Err(ProcError::Gone { .. })
            if super::exists(pid) && path.parent().is_some_and(std::path::Path::exists) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_read() {
        assert_eq!(
            parse_migrations("x : 1\nse.nr_migrations   :   42\n"),
            Some(42)
        );
        assert_eq!(parse_migrations("x : 1\n"), None);
        let pid = i32::try_from(std::process::id()).expect("pid");
        assert!(migrations(pid, pid).is_ok());
        assert!(matches!(
            migrations(i32::MAX, i32::MAX),
            Err(ProcError::Gone { .. })
        ));
    }
}
