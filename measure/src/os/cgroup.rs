//! The cgroup cpuset of the process that made the capture (or of this process): the CPUs
//! and NUMA nodes it may use, as hwloc reads them (`hwloc-gather-topology` saves
//! `proc/self/cgroup`, `proc/self/cpuset`, `proc/mounts` and the cpuset files).
//!
//! Three kinds of hierarchy, found through `proc/mounts`, else at their usual places:
//!
//! - cgroup v2 (`cgroup2`, else `/sys/fs/cgroup`): files `cpuset.cpus.effective` and
//!   `cpuset.mems.effective`; the cgroup is the `0::/path` line of `proc/self/cgroup`,
//!   else `proc/self/cpuset`.
//! - cgroup v1 with the `cpuset` controller (`cgroup` mounted with option `cpuset`, else
//!   `/sys/fs/cgroup/cpuset`): files `cpuset.cpus` and `cpuset.mems` (as hwloc: the
//!   offline CPUs are left out anyway), else `cpuset.effective_cpus` and
//!   `cpuset.effective_mems`; the cgroup is the `N:cpuset:/path` line, else
//!   `proc/self/cpuset`.
//! - the legacy cpuset filesystem (`cpuset` mounts, and v1 mounted with `noprefix`; else
//!   `/dev/cpuset`): files `cpus` and `mems`; the cgroup is `proc/self/cpuset`.
//!
//! The v1 and legacy hierarchies are tried before v2 (the cpuset controller is bound to
//! one of them). A cgroup whose file is missing (v2 without the cpuset controller, or a
//! capture that kept only a parent) takes its nearest parent's. Paths never leave the
//! root: a `..` in a cgroup or mount path is refused with a note.

use std::path::{Component, Path, PathBuf};

use topoprobe_model::parse_cpu_list;
use topoprobe_sys::proc::cgroup::parse_memberships;

use super::files::{clean, excerpt, read_optional, Notes};

/// The kind of a hierarchy that may hold the cpuset controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// cgroup v2.
    V2,
    /// cgroup v1 with `cpuset.`-prefixed files.
    V1,
    /// The legacy cpuset filesystem, or v1 with `noprefix`: files `cpus` and `mems`.
    Legacy,
}

impl Kind {
    /// The files that hold the allowed CPUs, or nodes, most trusted first.
    const fn files(self, mems: bool) -> &'static [&'static str] {
        match (self, mems) {
            (Self::V2, false) => &["cpuset.cpus.effective"],
            (Self::V2, true) => &["cpuset.mems.effective"],
            (Self::V1, false) => &["cpuset.cpus", "cpuset.effective_cpus"],
            (Self::V1, true) => &["cpuset.mems", "cpuset.effective_mems"],
            (Self::Legacy, false) => &["cpus", "effective_cpus"],
            (Self::Legacy, true) => &["mems", "effective_mems"],
        }
    }

    /// Where the hierarchy usually is when `proc/mounts` does not say.
    const fn default_point(self) -> &'static str {
        match self {
            Self::V2 => "/sys/fs/cgroup",
            Self::V1 => "/sys/fs/cgroup/cpuset",
            Self::Legacy => "/dev/cpuset",
        }
    }
}

/// One mounted hierarchy that may hold the cpuset controller.
#[derive(Debug)]
struct Mount {
    point: String,
    kind: Kind,
}

/// The hierarchies of `proc/mounts` content that may hold cpusets
/// (`cgroup2 /sys/fs/cgroup cgroup2 rw 0 0`, `cgroup /sys/fs/cgroup/cpuset cgroup
/// rw,cpuset 0 0`, `none /dev/cpuset cpuset rw 0 0`), in mount order.
fn mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _device = f.next()?;
            let point = f.next()?.to_string();
            let fstype = f.next()?;
            let options: Vec<&str> = f.next().unwrap_or("").split(',').collect();
            let kind = match fstype {
                "cgroup2" => Kind::V2,
                "cpuset" => Kind::Legacy,
                "cgroup" if options.contains(&"cpuset") => {
                    if options.contains(&"noprefix") {
                        Kind::Legacy
                    } else {
                        Kind::V1
                    }
                }
                _ => return None,
            };
            Some(Mount { point, kind })
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

/// The cgroup path of the process in hierarchies of `kind`, from `proc/self/cgroup`
/// content (`cgroup`) and `proc/self/cpuset` content (`cpuset`).
fn cgroup_path(kind: Kind, cgroup: Option<&str>, cpuset: Option<&str>) -> Option<String> {
    let memberships = cgroup.map(parse_memberships).unwrap_or_default();
    let from_cgroup = memberships
        .iter()
        .find(|m| match kind {
            Kind::V2 => m.is_v2(),
            Kind::V1 | Kind::Legacy => m.has_cpuset(),
        })
        .map(|m| m.path.clone());
    from_cgroup.or_else(|| {
        cpuset
            .map(|s| clean(s).to_string())
            .filter(|s| !s.is_empty())
    })
}

/// The CPUs and NUMA nodes the cgroup cpuset allows; each `None` when not found.
#[derive(Debug, Default)]
pub(super) struct Allowed {
    /// Allowed CPUs, ascending.
    pub(super) cpus: Option<Vec<u32>>,
    /// Allowed NUMA nodes, ascending.
    pub(super) mems: Option<Vec<u32>>,
}

/// The first of the `files` in `dir` or its parents up to `top` that exists and is not
/// empty, parsed as a list; `None` when none is found or it is malformed (a note).
fn nearest(top: &Path, rel: &Path, files: &[&str], notes: &mut Notes) -> Option<Vec<u32>> {
    let mut rel = rel.to_path_buf();
    loop {
        for f in files {
            let path = top.join(&rel).join(f);
            let Some(text) = read_optional(&path, notes) else {
                continue;
            };
            if clean(&text).is_empty() {
                continue;
            }
            return match parse_cpu_list(&text) {
                Ok(v) => Some(v),
                Err(e) => {
                    notes.add(format!("{}: {e}; left unknown", path.display()));
                    None
                }
            };
        }
        if !rel.pop() {
            return None;
        }
    }
}

/// The CPUs and nodes the cgroup cpuset under `root` allows.
pub(super) fn read_allowed(root: &Path, notes: &mut Notes) -> Allowed {
    let cgroup = read_optional(&root.join("proc/self/cgroup"), notes);
    let cpuset = read_optional(&root.join("proc/self/cpuset"), notes);
    let mut found = read_optional(&root.join("proc/mounts"), notes)
        .map(|t| mounts(&t))
        .unwrap_or_default();
    for kind in [Kind::V1, Kind::Legacy, Kind::V2] {
        if !found.iter().any(|m| m.kind == kind) {
            found.push(Mount {
                point: kind.default_point().to_string(),
                kind,
            });
        }
    }
    // v1's cpuset controller first: when it is bound to a v1 hierarchy, v2 has none.
    found.sort_by_key(|m| m.kind == Kind::V2);
    for m in &found {
        let Some(path) = cgroup_path(m.kind, cgroup.as_deref(), cpuset.as_deref()) else {
            continue;
        };
        let (Some(top), Some(rel)) = (inside(&m.point), inside(&path)) else {
            notes.add(format!(
                "cgroup path {:?} under mount {:?} leaves the root; cpuset not read",
                excerpt(&path),
                excerpt(&m.point)
            ));
            continue;
        };
        let top = root.join(top);
        if !top.is_dir() {
            continue;
        }
        let cpus = nearest(&top, &rel, m.kind.files(false), notes);
        if cpus.is_some() {
            let mems = nearest(&top, &rel, m.kind.files(true), notes);
            return Allowed { cpus, mems };
        }
    }
    Allowed::default()
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
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n\
             none /dev/cpuset cpuset rw 0 0\n\
             cpuset /dev/cpuset2 cgroup rw,cpuset,noprefix 0 0\n",
        );
        let kinds: Vec<Kind> = m.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![Kind::V1, Kind::V2, Kind::Legacy, Kind::Legacy]);
        assert_eq!(m[1].point, "/sys/fs/cgroup/unified");
    }

    #[test]
    fn cgroup_paths() {
        assert_eq!(
            cgroup_path(Kind::V2, Some("0::/a/b\n"), None).as_deref(),
            Some("/a/b")
        );
        assert_eq!(
            cgroup_path(Kind::V1, Some("0::/a/b\n"), Some("/c\n")).as_deref(),
            Some("/c")
        );
        assert_eq!(cgroup_path(Kind::Legacy, None, None), None);
    }
}
