//! Control groups of processes: the cpuset that bounds where a process may run, and the
//! processes of a cgroup directory.

use std::path::{Path, PathBuf};

use super::{read_file, task_dir, ProcError};
use crate::CpuSet;

/// Where cgroup file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// One entry of `/proc/<pid>/cgroup`: the controllers of a hierarchy, and the process's
/// cgroup in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The controllers of the hierarchy (`cpuset`, `cpu`...; `name=systemd` for a named
    /// one); empty for the cgroup v2 hierarchy (`0::/path`).
    pub controllers: Vec<String>,
    /// The cgroup's path in the hierarchy (`/user.slice/session-2.scope`).
    pub path: String,
}

impl Membership {
    /// Whether this is the cgroup v2 (unified) hierarchy: hierarchy 0, no controller list.
    #[must_use]
    pub fn is_v2(&self) -> bool {
        self.controllers.is_empty()
    }

    /// Whether this cgroup v1 hierarchy has the `cpuset` controller.
    #[must_use]
    pub fn has_cpuset(&self) -> bool {
        self.controllers.iter().any(|c| c == "cpuset")
    }
}

/// Parses `/proc/<pid>/cgroup` (`0::/path` for cgroup v2, `3:cpuset:/path` for v1);
/// malformed lines are skipped.
#[must_use]
pub fn parse_memberships(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect(),
                path: path.to_string(),
            })
        })
        .collect()
}

/// The cpuset files to try for a process, most specific first: its own cgroup's, then
/// each parent's up to the root (a v2 cgroup without the cpuset controller has no file).
fn cpuset_candidates(root: &Path, memberships: &[Membership]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for m in memberships {
        let (dir, file) = if m.has_cpuset() {
            (root.join("cpuset"), "cpuset.effective_cpus")
        } else if m.is_v2() {
            (
                if root.join("unified").is_dir() {
                    root.join("unified")
                } else {
                    root.to_path_buf()
                },
                "cpuset.cpus.effective",
            )
        } else {
            continue;
        };
        let mut rel = PathBuf::from(m.path.trim_start_matches('/'));
        loop {
            out.push(dir.join(&rel).join(file));
            if !rel.pop() {
                break;
            }
        }
    }
    out
}

/// The CPUs the cgroup cpuset of process `pid` allows (`None` when no cpuset controller
/// bounds it: every online CPU is allowed).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited process; [`ProcError::Parse`] when a cpuset file is
/// malformed.
pub fn cpuset(pid: i32) -> Result<Option<CpuSet>, ProcError> {
    let text = read_file(&task_dir(pid, None).join("cgroup"), pid, None)?;
    for path in cpuset_candidates(Path::new(CGROUP_ROOT), &parse_memberships(&text)) {
        let Ok(list) = super::read_small(&path) else {
            continue;
        };
        let list = list.trim();
        if list.is_empty() {
            continue;
        }
        return CpuSet::parse_list(list)
            .map(Some)
            .map_err(|e| ProcError::Parse {
                path,
                what: format!("a CPU list ({e})"),
            });
    }
    Ok(None)
}

/// The processes of the cgroup directory `dir` (its `cgroup.procs`), in increasing order.
///
/// # Errors
///
/// [`ProcError::Io`] when the file cannot be read (the directory is not a cgroup);
/// [`ProcError::Parse`] when a line is not a process id.
pub fn cgroup_processes(dir: &Path) -> Result<Vec<i32>, ProcError> {
    let path = dir.join("cgroup.procs");
    let text = read_file(&path, 0, None).map_err(|e| match e {
        ProcError::Gone { .. } => ProcError::Io {
            path: path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file (is the directory a cgroup?)",
            ),
        },
        other => other,
    })?;
    let mut pids = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse::<i32>().map_err(|_| ProcError::Parse {
                path: path.clone(),
                what: format!("a process id, found {l:?}"),
            })
        })
        .collect::<Result<Vec<i32>, ProcError>>()?;
    pids.sort_unstable();
    Ok(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memberships_lead_to_cpuset_files() {
        let v1 = "4:memory:/a\n3:cpuset:/jobs/x\n0::/\n";
        let m = parse_memberships(v1);
        assert_eq!(m.len(), 3);
        let c = cpuset_candidates(Path::new("/nonexistent-root"), &m);
        assert_eq!(
            c[0],
            Path::new("/nonexistent-root/cpuset/jobs/x/cpuset.effective_cpus")
        );
        assert_eq!(
            c[1],
            Path::new("/nonexistent-root/cpuset/jobs/cpuset.effective_cpus")
        );
        assert!(c
            .iter()
            .any(|p| p == Path::new("/nonexistent-root/cpuset.cpus.effective")));
        let pid = i32::try_from(std::process::id()).expect("pid");
        if let Some(set) = cpuset(pid).expect("reads") {
            assert!(!set.is_empty());
        }
        assert!(matches!(cpuset(i32::MAX), Err(ProcError::Gone { .. })));
        let e = cgroup_processes(Path::new("/nonexistent-root")).unwrap_err();
        assert!(e.to_string().contains("cgroup"), "{e}");
    }
}
