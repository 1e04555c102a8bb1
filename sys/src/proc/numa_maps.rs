//! `/proc/<pid>/numa_maps`: on which memory nodes a process's pages are.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};

use super::{task_dir, ProcError};

/// Most bytes of `numa_maps` read (a line per mapping; large processes have thousands).
pub const MAX_NUMA_MAPS: u64 = 64 << 20;
/// Longest line accepted, in bytes.
const MAX_LINE: usize = 64 << 10;

/// Resident memory of a process per node, in bytes (`node → bytes`).
pub type NodeMemory = BTreeMap<u32, u64>;

/// Adds the `N<node>=<pages>` fields of one mapping line to `out`.
fn add_line(line: &str, out: &mut NodeMemory) {
    let page_kb = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("kernelpagesize_kB=")?.parse::<u64>().ok())
        .unwrap_or(4);
    for f in line.split_whitespace() {
        let Some((node, pages)) = f.strip_prefix('N').and_then(|r| r.split_once('=')) else {
            continue;
        };
        if let (Ok(node), Ok(pages)) = (node.parse::<u32>(), pages.parse::<u64>()) {
            let e = out.entry(node).or_insert(0);
            *e = e.saturating_add(pages.saturating_mul(page_kb).saturating_mul(1024));
        }
    }
}

/// Resident memory of process `pid` per memory node, from `numa_maps` (empty on a
/// kernel without NUMA support, where the file is missing or has no node fields).
///
/// # Errors
///
/// [`ProcError::Gone`] for an exited process; [`ProcError::Denied`] for another user's;
/// [`ProcError::Parse`] when the file exceeds [`MAX_NUMA_MAPS`] or a line is too long.
pub fn node_memory(pid: i32) -> Result<NodeMemory, ProcError> {
    let path = task_dir(pid, None).join("numa_maps");
    let file = match topoprobe_files::open(&path, topoprobe_files::Rules::file(MAX_NUMA_MAPS)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if super::exists(pid) {
                Ok(NodeMemory::new())
            } else {
                Err(ProcError::Gone { pid, tid: None })
            };
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(ProcError::Denied { path });
        }
        Err(e) => {
            return Err(ProcError::Io {
                path,
                source: e.into_io_without_path(),
            })
        }
    };
    let mut reader = BufReader::new(file.take(MAX_NUMA_MAPS + 1));
    let mut out = NodeMemory::new();
    let mut line = String::new();
    let mut total = 0_u64;
    loop {
        line.clear();
        let n = match reader
            .by_ref()
            .take(MAX_LINE as u64 + 1)
            .read_line(&mut line)
        {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return Err(ProcError::Gone { pid, tid: None })
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(ProcError::Denied { path })
            }
            Err(source) => return Err(ProcError::Io { path, source }),
        };
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_NUMA_MAPS || (n > MAX_LINE && !line.ends_with('\n')) {
            return Err(ProcError::Parse {
                path,
                what: format!("at most {MAX_NUMA_MAPS} bytes in lines of at most {MAX_LINE} bytes"),
            });
        }
        add_line(&line, &mut out);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_summed_per_node_in_bytes() {
        let mut m = NodeMemory::new();
        add_line(
            "7f00 default file=/lib/x.so mapped=3 N0=2 N1=1 kernelpagesize_kB=4",
            &mut m,
        );
        add_line(
            "7f10 default anon=1 dirty=1 N1=1 kernelpagesize_kB=2048",
            &mut m,
        );
        add_line("7f20 default", &mut m);
        assert_eq!(m.get(&0), Some(&8192));
        assert_eq!(m.get(&1), Some(&(4096 + 2048 * 1024)));
        let pid = i32::try_from(std::process::id()).expect("pid");
        let own = node_memory(pid).expect("own numa_maps");
        assert!(own.values().all(|&b| b > 0));
        assert!(matches!(node_memory(i32::MAX), Err(ProcError::Gone { .. })));
    }
}
