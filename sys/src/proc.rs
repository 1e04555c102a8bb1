//! Readers of `/proc` for running processes and their threads (tasks): which threads a
//! process has, their scheduler statistics, CPU time, last CPU, context switches and
//! affinity; in submodules, a process's environment ([`environ`]), its memory per node
//! ([`numa_maps`]) and cgroup cpuset ([`cgroup`]), the interrupts of every CPU
//! ([`interrupts`]) and the busy time of every CPU ([`cpu_stat`]). Every read is bounded ([`MAX_PROC_FILE`]) and a task that has exited is
//! reported as [`ProcError::Gone`], not as a failure of the reader.

use std::path::{Path, PathBuf};

use crate::CpuSet;

pub mod cgroup;
pub mod cpu_stat;
pub mod environ;
pub mod interrupts;
pub mod numa_maps;
pub mod sched;

/// Largest `/proc` file these readers accept, in bytes (the files read here are a few
/// hundred bytes; `status` of a process with many CPUs a few KiB).
pub const MAX_PROC_FILE: usize = 1 << 20;

/// Why a `/proc` file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The process or thread does not exist (any more).
    #[error("process {pid}{} has exited or does not exist", tid.map(|t| format!(" thread {t}")).unwrap_or_default())]
    Gone {
        /// The process.
        pid: i32,
        /// The thread, if one was named.
        tid: Option<i32>,
    },
    /// The file exists but may not be read (another user's process).
    #[error("{}: permission denied (the process belongs to another user)", path.display())]
    Denied {
        /// The file.
        path: PathBuf,
    },
    /// Another read error.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file's content is not what the kernel documents.
    #[error("{}: cannot parse {what}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was expected.
        what: String,
    },
}

/// The directory of a process (`/proc/<pid>`) or of one of its threads
/// (`/proc/<pid>/task/<tid>`).
fn task_dir(pid: i32, tid: Option<i32>) -> PathBuf {
    let p = PathBuf::from(format!("/proc/{pid}"));
    match tid {
        Some(t) => p.join("task").join(t.to_string()),
        None => p,
    }
}

/// The text of a small file of `/proc` or `/sys` (at most [`MAX_PROC_FILE`] bytes, a
/// regular file, opened without blocking; invalid UTF-8 replaced), for the readers of
/// this crate that take "unreadable" for "unknown".
///
/// # Errors
///
/// The error of [`topoprobe_files::read`], naming the path.
pub(crate) fn read_small(path: &Path) -> Result<String, topoprobe_files::FileError> {
    topoprobe_files::read_string_lossy(path, topoprobe_files::Rules::file(MAX_PROC_FILE as u64))
}

/// Reads a `/proc` file of at most [`MAX_PROC_FILE`] bytes as text.
fn read_file(path: &Path, pid: i32, tid: Option<i32>) -> Result<String, ProcError> {
    let bytes = read_bytes(path, pid, tid)?;
    String::from_utf8(bytes).map_err(|_| ProcError::Parse {
        path: path.to_path_buf(),
        what: "UTF-8 text".into(),
    })
}

/// Reads a `/proc` file of at most [`MAX_PROC_FILE`] bytes.
fn read_bytes(path: &Path, pid: i32, tid: Option<i32>) -> Result<Vec<u8>, ProcError> {
    let map = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => ProcError::Gone { pid, tid },
        std::io::ErrorKind::PermissionDenied => ProcError::Denied {
            path: path.to_path_buf(),
        },
        _ if source.raw_os_error() == Some(libc::ESRCH) => ProcError::Gone { pid, tid },
        _ => ProcError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    match topoprobe_files::read(path, topoprobe_files::Rules::file(MAX_PROC_FILE as u64)) {
        Ok(text) => Ok(text),
        Err(topoprobe_files::FileError::TooLarge { .. }) => Err(ProcError::Parse {
            path: path.to_path_buf(),
            what: format!("a file of at most {MAX_PROC_FILE} bytes"),
        }),
        Err(topoprobe_files::FileError::Io { source, .. }) => Err(map(source)),
        Err(e) => Err(map(e.into_io_without_path())),
    }
}

/// Whether process `pid` exists (a zombie counts as existing).
#[must_use]
pub fn exists(pid: i32) -> bool {
    pid > 0 && task_dir(pid, None).exists()
}

/// The thread ids of process `pid`, in increasing order (the main thread's id is `pid`).
///
/// # Errors
///
/// [`ProcError::Gone`] when the process does not exist; [`ProcError::Io`] otherwise.
pub fn threads(pid: i32) -> Result<Vec<i32>, ProcError> {
    let dir = task_dir(pid, None).join("task");
    let entries = std::fs::read_dir(&dir).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ProcError::Gone { pid, tid: None }
        } else {
            ProcError::Io {
                path: dir.clone(),
                source,
            }
        }
    })?;
    let mut tids: Vec<i32> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Scheduler statistics of a task (`schedstat`): time on a CPU, time waiting on a run
/// queue, and time slices run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// Nanoseconds spent running on a CPU.
    pub run_ns: u64,
    /// Nanoseconds spent runnable but waiting for a CPU.
    pub wait_ns: u64,
    /// Time slices run.
    pub timeslices: u64,
}

/// Parses the three numbers of a `schedstat` file.
fn parse_schedstat(text: &str) -> Option<SchedStat> {
    let mut it = text.split_whitespace().map(str::parse::<u64>);
    Some(SchedStat {
        run_ns: it.next()?.ok()?,
        wait_ns: it.next()?.ok()?,
        timeslices: it.next()?.ok()?,
    })
}

/// The scheduler statistics of thread `tid` of process `pid` (`tid` `None`: the whole
/// process, summed by the kernel over its threads only for `run_ns` in `stat`; here the
/// main thread's).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited task; [`ProcError::Parse`] when the kernel has no
/// schedstat support (the file is missing fields).
pub fn schedstat(pid: i32, tid: Option<i32>) -> Result<SchedStat, ProcError> {
    let path = task_dir(pid, tid).join("schedstat");
    let text = read_file(&path, pid, tid)?;
    parse_schedstat(&text).ok_or_else(|| ProcError::Parse {
        path,
        what: "three numbers (run time, wait time, time slices)".into(),
    })
}

/// Fields of a task's `stat` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    /// The command name (`comm`, at most 15 bytes; may hold spaces and parentheses).
    pub name: String,
    /// State letter (`R` running, `S` sleeping, `D` disk wait, `Z` zombie, …).
    pub state: char,
    /// The parent's process id (0 for the kernel's own tasks and the first process).
    pub ppid: i32,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// User-mode CPU time, in clock ticks ([`clock_ticks_per_second`]).
    pub user_ticks: u64,
    /// Kernel-mode CPU time, in clock ticks.
    pub system_ticks: u64,
    /// Number of threads of the process.
    pub threads: u64,
    /// The CPU the task last ran on.
    pub processor: u32,
}

/// Parses a `stat` line: `pid (comm) state ppid …`, where `comm` may itself contain
/// `) ` — the fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(TaskStat {
        name,
        state: rest.first()?.chars().next()?,
        ppid: i32::try_from(field(4)?).ok()?,
        minor_faults: field(10)?,
        major_faults: field(12)?,
        user_ticks: field(14)?,
        system_ticks: field(15)?,
        threads: field(20)?,
        processor: u32::try_from(field(39)?).ok()?,
    })
}

/// The `stat` fields of thread `tid` of process `pid` (`None`: the process, whose CPU
/// times and faults are summed over its threads).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited task; [`ProcError::Parse`] for a malformed line.
pub fn task_stat(pid: i32, tid: Option<i32>) -> Result<TaskStat, ProcError> {
    let path = task_dir(pid, tid).join("stat");
    let text = read_file(&path, pid, tid)?;
    parse_stat(&text).ok_or_else(|| ProcError::Parse {
        path,
        what: "the fields of a stat line".into(),
    })
}

/// Fields of a task's `status` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStatus {
    /// Real user id of the task's owner.
    pub uid: u32,
    /// Voluntary context switches (the task blocked).
    pub voluntary_switches: u64,
    /// Involuntary context switches (the task was preempted).
    pub involuntary_switches: u64,
    /// The CPUs the task may run on (`Cpus_allowed_list`).
    pub cpus_allowed: CpuSet,
}

/// Parses the fields of a `status` file that [`TaskStatus`] holds.
fn parse_status(text: &str) -> Option<TaskStatus> {
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
    };
    Some(TaskStatus {
        uid: value("Uid")?.split_whitespace().next()?.parse().ok()?,
        voluntary_switches: value("voluntary_ctxt_switches")?.parse().ok()?,
        involuntary_switches: value("nonvoluntary_ctxt_switches")?.parse().ok()?,
        cpus_allowed: CpuSet::parse_list(value("Cpus_allowed_list")?).ok()?,
    })
}

/// The `status` fields of thread `tid` of process `pid` (`None`: the main thread).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited task; [`ProcError::Parse`] for a malformed file.
pub fn task_status(pid: i32, tid: Option<i32>) -> Result<TaskStatus, ProcError> {
    let path = task_dir(pid, tid).join("status");
    let text = read_file(&path, pid, tid)?;
    parse_status(&text).ok_or_else(|| ProcError::Parse {
        path,
        what: "Uid, context switches and Cpus_allowed_list".into(),
    })
}

/// Clock ticks per second, the unit of [`TaskStat`]'s CPU times (`sysconf(_SC_CLK_TCK)`,
/// 100 when unknown).
#[must_use]
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (my (odd) prog) R 1 4242 4242 0 -1 4194560 120 0 3 0 57 11 0 0 20 0 3 0 \
                    12345 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let s = parse_stat(line).expect("parses");
        assert_eq!(s.name, "my (odd) prog");
        assert_eq!(s.state, 'R');
        assert_eq!(s.ppid, 1);
        assert_eq!((s.minor_faults, s.major_faults), (120, 3));
        assert_eq!((s.user_ticks, s.system_ticks), (57, 11));
        assert_eq!(s.threads, 3);
        assert_eq!(s.processor, 1);
        assert!(parse_stat("4242 (x) R 1").is_none());
    }

    #[test]
    fn schedstat_and_status_parse() {
        assert_eq!(
            parse_schedstat("1500 250 7\n"),
            Some(SchedStat {
                run_ns: 1500,
                wait_ns: 250,
                timeslices: 7
            })
        );
        assert!(parse_schedstat("1 2").is_none());
        let status = "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nCpus_allowed_list:\t0-1,4\n\
                      voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n";
        let s = parse_status(status).expect("parses");
        assert_eq!(s.uid, 1000);
        assert_eq!(s.cpus_allowed.to_vec(), vec![0, 1, 4]);
        assert_eq!((s.voluntary_switches, s.involuntary_switches), (10, 2));
    }

    #[test]
    fn this_process_is_read_and_a_missing_one_is_gone() {
        let pid = i32::try_from(std::process::id()).expect("pid");
        assert!(exists(pid));
        let tids = threads(pid).expect("threads");
        assert!(tids.contains(&pid));
        let stat = task_stat(pid, Some(pid)).expect("stat");
        assert!(stat.threads >= 1);
        let status = task_status(pid, None).expect("status");
        assert!(!status.cpus_allowed.is_empty());
        // Kernels without schedstat leave the file out: that is a clear error, not a panic.
        match schedstat(pid, Some(pid)) {
            Ok(s) => assert!(s.run_ns > 0),
            Err(e) => assert!(matches!(
                e,
                ProcError::Gone { .. } | ProcError::Parse { .. }
            )),
        }
        let gone = i32::MAX;
        assert!(!exists(gone));
        assert!(matches!(threads(gone), Err(ProcError::Gone { .. })));
        assert!(matches!(task_stat(gone, None), Err(ProcError::Gone { .. })));
        assert!(clock_ticks_per_second() >= 1);
    }
}
