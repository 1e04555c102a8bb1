//! The kinds of object a CPU-set expression names (hwloc's object types), their names on
//! the command line and in messages.

use std::fmt;
use std::str::FromStr;

/// A kind of object of a machine, as hwloc names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectType {
    /// The whole machine (`machine`, also `all` and `root` as locations).
    Machine,
    /// A package (socket): `package`, `socket`.
    Package,
    /// A die inside a package (`die`).
    Die,
    /// A NUMA node (`numanode`, `node`).
    NumaNode,
    /// A group of cores between core and package (`group`): a CCX, a cluster, a tile.
    Group,
    /// A level-3 cache (`l3cache`, `l3`).
    L3Cache,
    /// A level-2 cache (`l2cache`, `l2`).
    L2Cache,
    /// A level-1 data cache (`l1cache`, `l1dcache`, `l1`, `l1d`).
    L1Cache,
    /// A core (`core`).
    Core,
    /// A processing unit: a hardware thread (`pu`).
    Pu,
}

/// Every type, from the biggest to the smallest.
pub const ALL_TYPES: [ObjectType; 10] = [
    ObjectType::Machine,
    ObjectType::Package,
    ObjectType::Die,
    ObjectType::NumaNode,
    ObjectType::Group,
    ObjectType::L3Cache,
    ObjectType::L2Cache,
    ObjectType::L1Cache,
    ObjectType::Core,
    ObjectType::Pu,
];

/// The names a type is written with, canonical first; a name may also be shortened to
/// any prefix of two letters or more that names one type (`pack`, `co`), as hwloc allows.
const NAMES: [(&str, ObjectType); 13] = [
    ("machine", ObjectType::Machine),
    ("package", ObjectType::Package),
    ("socket", ObjectType::Package),
    ("die", ObjectType::Die),
    ("numanode", ObjectType::NumaNode),
    ("node", ObjectType::NumaNode),
    ("group", ObjectType::Group),
    ("l3cache", ObjectType::L3Cache),
    ("l2cache", ObjectType::L2Cache),
    ("l1cache", ObjectType::L1Cache),
    ("l1dcache", ObjectType::L1Cache),
    ("core", ObjectType::Core),
    ("pu", ObjectType::Pu),
];

impl ObjectType {
    /// The canonical name (`package`, `numanode`, `l3cache`...).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Machine => "machine",
            Self::Package => "package",
            Self::Die => "die",
            Self::NumaNode => "numanode",
            Self::Group => "group",
            Self::L3Cache => "l3cache",
            Self::L2Cache => "l2cache",
            Self::L1Cache => "l1cache",
            Self::Core => "core",
            Self::Pu => "pu",
        }
    }

    /// The name of `n` objects of this type, for messages (`1 package`, `4 cores`,
    /// `2 L3 caches`).
    #[must_use]
    pub fn count_text(self, n: usize) -> String {
        let (one, many) = match self {
            Self::Machine => ("machine", "machines"),
            Self::Package => ("package", "packages"),
            Self::Die => ("die", "dies"),
            Self::NumaNode => ("NUMA node", "NUMA nodes"),
            Self::Group => ("group", "groups"),
            Self::L3Cache => ("L3 cache", "L3 caches"),
            Self::L2Cache => ("L2 cache", "L2 caches"),
            Self::L1Cache => ("L1 cache", "L1 caches"),
            Self::Core => ("core", "cores"),
            Self::Pu => ("PU", "PUs"),
        };
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    }

    /// The cache level of a cache type.
    #[must_use]
    pub const fn cache_level(self) -> Option<u8> {
        match self {
            Self::L1Cache => Some(1),
            Self::L2Cache => Some(2),
            Self::L3Cache => Some(3),
            _ => None,
        }
    }

    /// The type a name means (case does not matter; a prefix of two letters or more that
    /// names one type is that type), or `None`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "l1" | "l1d" => return Some(Self::L1Cache),
            "l2" => return Some(Self::L2Cache),
            "l3" => return Some(Self::L3Cache),
            _ => {}
        }
        if let Some(&(_, t)) = NAMES.iter().find(|(n, _)| *n == lower) {
            return Some(t);
        }
        if lower.len() < 2 {
            return None;
        }
        let mut found = NAMES
            .iter()
            .filter(|(n, _)| n.starts_with(&lower))
            .map(|&(_, t)| t);
        let first = found.next()?;
        found.all(|t| t == first).then_some(first)
    }

    /// The names the command line takes, for messages.
    #[must_use]
    pub const fn names_text() -> &'static str {
        "machine, package (socket), die, numanode (node), group, l3cache (l3), \
         l2cache (l2), l1cache (l1), core, pu"
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no object type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown object type {0:?} (types: {names})", names = ObjectType::names_text())]
pub struct UnknownType(pub String);

impl FromStr for ObjectType {
    type Err = UnknownType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| UnknownType(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_prefixes() {
        for (name, t) in [
            ("package", ObjectType::Package),
            ("Socket", ObjectType::Package),
            ("pack", ObjectType::Package),
            ("pa", ObjectType::Package),
            ("so", ObjectType::Package),
            ("co", ObjectType::Core),
            ("Core", ObjectType::Core),
            ("PU", ObjectType::Pu),
            ("nu", ObjectType::NumaNode),
            ("NUMANode", ObjectType::NumaNode),
            ("node", ObjectType::NumaNode),
            ("no", ObjectType::NumaNode),
            ("l3", ObjectType::L3Cache),
            ("L3Cache", ObjectType::L3Cache),
            ("l1", ObjectType::L1Cache),
            ("l1d", ObjectType::L1Cache),
            ("L1dcache", ObjectType::L1Cache),
            ("die", ObjectType::Die),
            ("group", ObjectType::Group),
            ("machine", ObjectType::Machine),
        ] {
            assert_eq!(ObjectType::from_name(name), Some(t), "{name}");
        }
        for bad in ["c", "p", "n", "x", "cores", "l4", "l1i", "gpu", "", "all"] {
            assert_eq!(ObjectType::from_name(bad), None, "{bad}");
        }
        let e = "cpu".parse::<ObjectType>().unwrap_err();
        assert!(e.to_string().contains("\"cpu\"") && e.to_string().contains("package"));
    }

    #[test]
    fn counts_read_well() {
        assert_eq!(ObjectType::Package.count_text(2), "2 packages");
        assert_eq!(ObjectType::Core.count_text(1), "1 core");
        assert_eq!(ObjectType::L3Cache.count_text(0), "0 L3 caches");
    }
}
