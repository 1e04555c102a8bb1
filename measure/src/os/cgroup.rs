//! The cgroup cpuset of the process that made the capture (or of this process): the CPUs
//! it may run on, as hwloc reads them (`hwloc-gather-topology` saves `proc/self/cgroup`,
//! `proc/self/cpuset`, `proc/mounts` and the cpuset files of `sys/fs/cgroup`).
//!
//! cgroup v1: the hierarchy with the `cpuset` controller, mounted where `proc/mounts` says
//! (else `/sys/fs/cgroup/cpuset`), file `cpuset.effective_cpus` (else `cpuset.cpus`).
//! cgroup v2: the unified hierarchy (`0::/path`), mounted where `proc/mounts` says (else
//! `/sys/fs/cgroup`), file `cpuset.cpus.effective`. A cgroup whose file is missing (v2
//! without the cpuset controller, or a capture that kept only a parent) takes its
//! nearest parent's. Paths never leave the root: a `..` in a cgroup or mount path is
//! refused with a note.

use std::path::{Component, Path, PathBuf};

use topoprobe_model::parse_cpu_list;
use topoprobe_sys::proc::cgroup::{parse_memberships, Membership};

use super::files::{clean, excerpt, read_optional, Notes};

/// One mounted cgroup hierarchy: where, and whether it is v2 or a v1 one with cpuset.
struct Mount {
    point: String,
    v2: bool,
    cpuset: bool,
}

/// The cgroup mounts of `proc/mounts` content (`cgroup2 /sys/fs/cgroup cgroup2 rw 0 0`,
/// `cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0`).
fn mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _device = f.next()?;
            let point = f.next()?.to_string();
            let fstype = f.next()?;
            let options = f.next().unwrap_or("");
            match fstype {
                "cgroup2" => Some(Mount {
                    point,
                    v2: true,
                    cpuset: false,
                }),
                "cgroup" => Some(Mount {
                    point,
                    v2: false,
                    cpuset: options.split(',').any(|o| o == "cpuset"),
                }),
                _ => None,
            }
        })
        .collect()
}

/// `path` (absolute or relative) as a path relative to the root, or `None` when it has a
/// `..` or another component that could leave the root.
fn inside(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in Path::new(path).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The cpuset files to try for one membership, most specific first: its cgroup's, then
/// each parent's up to the hierarchy's root.
fn candidates(m: &Membership, mounts: &[Mount], root: &Path, notes: &mut Notes) -> Vec<PathBuf> {
    let (mount, default, files): (Option<&Mount>, &str, &[&str]) = if m.has_cpuset() {
        (
            mounts.iter().find(|x| x.cpuset),
            "/sys/fs/cgroup/cpuset",
            &["cpuset.effective_cpus", "cpuset.cpus"],
        )
    } else if m.is_v2() {
        (
            mounts.iter().find(|x| x.v2),
            "/sys/fs/cgroup",
            &["cpuset.cpus.effective"],
        )
    } else {
        return Vec::new();
    };
    let point = mount.map_or(default, |x| x.point.as_str());
    let (Some(dir), Some(mut rel)) = (inside(point), inside(&m.path)) else {
        notes.add(format!(
            "cgroup path {:?} under mount {:?} leaves the root; cpuset not read",
            excerpt(&m.path),
            excerpt(point)
        ));
        return Vec::new();
    };
    let dir = root.join(dir);
    let mut out = Vec::new();
    loop {
        for f in files {
            out.push(dir.join(&rel).join(f));
        }
        if !rel.pop() {
            break;
        }
    }
    out
}

/// The CPUs the cgroup cpuset under `root` allows, ascending; `None` when no cpuset file
/// is found (no `proc/self/cgroup`, no cpuset controller).
pub(super) fn read_cpuset(root: &Path, notes: &mut Notes) -> Option<Vec<u32>> {
    let memberships = match read_optional(&root.join("proc/self/cgroup"), notes) {
        Some(text) => parse_memberships(&text),
        // Without it, the legacy `proc/self/cpuset` names the v1 cpuset cgroup.
        None => {
            let path = read_optional(&root.join("proc/self/cpuset"), notes)?;
            vec![Membership {
                controllers: vec!["cpuset".into()],
                path: clean(&path).to_string(),
            }]
        }
    };
    let mounts = read_optional(&root.join("proc/mounts"), notes)
        .map(|t| mounts(&t))
        .unwrap_or_default();
    // v1's cpuset controller first: when it is bound to a v1 hierarchy, v2 has none.
    let mut ordered: Vec<&Membership> = memberships.iter().filter(|m| m.has_cpuset()).collect();
    ordered.extend(memberships.iter().filter(|m| m.is_v2()));
    for m in ordered {
        for path in candidates(m, &mounts, root, notes) {
            let Some(text) = read_optional(&path, notes) else {
                continue;
            };
            if clean(&text).is_empty() {
                continue;
            }
            match parse_cpu_list(&text) {
                Ok(cpus) => return Some(cpus),
                Err(e) => {
                    notes.add(format!("{}: {e}; cpuset unknown", path.display()));
                    return None;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside() {
        assert_eq!(inside("/a/b"), Some(PathBuf::from("a/b")));
        assert_eq!(inside("/"), Some(PathBuf::new()));
        assert_eq!(inside("/a/../../etc"), None);
    }

    #[test]
    fn cgroup_mounts() {
        let m = mounts(
            "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
             cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n\
             cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
        );
        assert_eq!(m.len(), 3);
        assert!(!m[0].cpuset && m[1].cpuset && m[2].v2);
        assert_eq!(m[2].point, "/sys/fs/cgroup/unified");
    }
}
