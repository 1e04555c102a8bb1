//! Reading the XML that `lstopo --of xml` (hwloc 2, or 1.x) writes, as the operating
//! system's view of that machine: its PUs, cores, packages, dies, caches and NUMA nodes
//! become an [`OsView`], and [`read_topology`] makes of it a description of the structure
//! alone ([`OsView::structure`]: no latency), with the caches and their sharing as the
//! OS gives them.
//!
//! A PU's core is the `Core` object above it (a PU with none is a core of its own), its
//! package the `Package` (or 1.x `Socket`) above it, its die the `Die` above it, its node
//! the `NUMANode` whose CPU set holds it. Distances, memory attributes, PCI and OS devices
//! are not read.
//!
//! The file is read whole, within the file limit; before parsing, its elements (`<`) and
//! attributes (`=`) are counted against [`MAX_XML_ELEMENTS`] and [`MAX_XML_ATTRIBUTES`],
//! and each element's attributes against [`MAX_XML_ELEMENT_ATTRIBUTES`] (the parser's
//! check of an element's attributes grows with the square of their count);
//! after parsing, its nesting against [`MAX_XML_DEPTH`], and its PUs and nodes against
//! [`MAX_CONTEXTS`] and [`MAX_NODES`]. A CPU set keeps only the file's PUs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use roxmltree::{Document, Node, ParsingOptions};

use crate::limits::{
    MAX_CONTEXTS, MAX_NODES, MAX_XML_ATTRIBUTES, MAX_XML_DEPTH, MAX_XML_ELEMENTS,
    MAX_XML_ELEMENT_ATTRIBUTES,
};
use crate::os_view::{CacheType, OsCache, OsCpu, OsNode, OsView};
use crate::sections::{CacheLevel, CacheSection, SharingOutcome, SharingTest};
use crate::{ContextId, ModelError, Origin, Topology};

struct Reader<'a, 'input> {
    doc: &'a Document<'input>,
    path: &'a Path,
}

impl<'input> Reader<'_, 'input> {
    fn line(&self, n: Node<'_, 'input>) -> usize {
        self.doc.text_pos_at(n.range().start).row as usize
    }

    fn err(&self, n: Node<'_, 'input>, message: impl Into<String>) -> ModelError {
        ModelError::parse(self.path, self.line(n), message)
    }

    /// An unsigned attribute, when present.
    fn number<T: std::str::FromStr>(
        &self,
        n: Node<'_, 'input>,
        name: &str,
    ) -> Result<Option<T>, ModelError> {
        n.attribute(name)
            .map(|v| {
                v.trim().parse::<T>().map_err(|_| {
                    self.err(
                        n,
                        format!(
                            "<object type=\"{}\">: attribute {name}=\"{}\" is not a whole \
                             number in range",
                            n.attribute("type").unwrap_or("?"),
                            v.chars().take(40).collect::<String>()
                        ),
                    )
                })
            })
            .transpose()
    }

    /// The CPUs of an object's `cpuset` (hwloc's bitmap syntax, `0x00000003,0xffffffff`)
    /// that are PUs of the file, ascending: the others are not kept, so that what is
    /// allocated never exceeds the PUs.
    fn cpuset(&self, n: Node<'_, 'input>, pus: &BTreeSet<u32>) -> Result<Vec<u32>, ModelError> {
        let kind = n.attribute("type").unwrap_or("?");
        let Some(text) = n.attribute("cpuset") else {
            return Err(self.err(n, format!("<object type=\"{kind}\"> has no cpuset")));
        };
        let shown: String = text.chars().take(60).collect();
        if text.contains("f...f") {
            return Err(self.err(
                n,
                format!("<object type=\"{kind}\">: cpuset {shown} is infinite"),
            ));
        }
        let mut cpus = Vec::new();
        for (i, word) in text.rsplit(',').enumerate() {
            let digits = word.trim();
            let digits = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
                .unwrap_or(digits);
            let bits = (1..=8)
                .contains(&digits.len())
                .then(|| u32::from_str_radix(digits, 16).ok())
                .flatten()
                .ok_or_else(|| {
                    self.err(
                        n,
                        format!(
                            "<object type=\"{kind}\">: cpuset {shown}: `{}` is not a word of \
                             up to 8 hexadecimal digits",
                            word.chars().take(20).collect::<String>()
                        ),
                    )
                })?;
            if bits == 0 {
                continue;
            }
            let base = u32::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(32))
                .filter(|&b| b <= crate::os_view::MAX_CPU)
                .ok_or_else(|| {
                    self.err(
                        n,
                        format!(
                            "<object type=\"{kind}\">: cpuset {shown} names CPUs above the \
                             largest CPU number, {}",
                            crate::os_view::MAX_CPU
                        ),
                    )
                })?;
            cpus.extend(
                (0..32)
                    .filter(|b| bits & (1 << b) != 0)
                    .map(|b| base + b)
                    .filter(|c| pus.contains(c)),
            );
        }
        Ok(cpus)
    }

    fn os_index(&self, n: Node<'_, 'input>) -> Result<Option<u32>, ModelError> {
        self.number::<u32>(n, "os_index")
    }
}

/// The level and type of a cache object, or `None` for another object.
fn cache_of(n: Node<'_, '_>) -> Option<(u8, CacheType)> {
    let t = n.attribute("type")?;
    let kind_attr = match n.attribute("cache_type") {
        Some("1") => CacheType::Data,
        Some("2") => CacheType::Instruction,
        _ => CacheType::Unified,
    };
    if t == "Cache" {
        // hwloc 1.x: the level is the `depth` attribute.
        let level = n.attribute("depth")?.parse().ok()?;
        return Some((level, kind_attr));
    }
    let rest = t.strip_prefix('L')?;
    let (digits, suffix) = rest.split_at(rest.find(|c: char| !c.is_ascii_digit())?);
    let level: u8 = digits.parse().ok()?;
    match suffix {
        "Cache" => Some((level, kind_attr)),
        "iCache" => Some((level, CacheType::Instruction)),
        _ => None,
    }
}

/// The nearest object of type `kind` above `n` (or `n` itself).
fn above<'a, 'input>(n: Node<'a, 'input>, kinds: &[&str]) -> Option<Node<'a, 'input>> {
    n.ancestors().find(|a| {
        a.has_tag_name("object") && a.attribute("type").is_some_and(|t| kinds.contains(&t))
    })
}

/// Where a scan of XML text is: what the next bytes belong to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Character data between tags.
    Text,
    /// Inside a tag, counting its attributes.
    Tag,
    /// Inside an attribute value of a tag, quoted by the byte given.
    Value(u8),
    /// Inside `<!-- ... -->`, `<? ... ?>` or `<![CDATA[ ... ]]>`, until its end.
    Until(&'static [u8]),
    /// Inside `<!DOCTYPE ...>` (its internal subset, `[...]`, when the flag is set).
    Declaration(bool),
}

/// Checks, in one pass before parsing, that no element has more than
/// [`MAX_XML_ELEMENT_ATTRIBUTES`] attributes (an `=` outside quoted values, inside a tag):
/// the parser checks each attribute of an element against the earlier ones, in time that
/// grows with the square of their count.
fn check_element_attributes(text: &str, path: &Path) -> Result<(), ModelError> {
    let bytes = text.as_bytes();
    let mut state = Scan::Text;
    let mut line = 1_usize;
    let mut tag_line = 1_usize;
    let mut attributes = 0_usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'\n' {
            line += 1;
        }
        match state {
            Scan::Text if b == b'<' => {
                let rest = &bytes[i..];
                state = if rest.starts_with(b"<!--") {
                    Scan::Until(b"-->")
                } else if rest.starts_with(b"<![CDATA[") {
                    Scan::Until(b"]]>")
                } else if rest.starts_with(b"<?") {
                    Scan::Until(b"?>")
                } else if rest.starts_with(b"<!") {
                    Scan::Declaration(false)
                } else {
                    attributes = 0;
                    tag_line = line;
                    Scan::Tag
                };
            }
            Scan::Text => {}
            Scan::Tag => match b {
                b'"' | b'\'' => state = Scan::Value(b),
                b'>' => state = Scan::Text,
                b'=' => {
                    attributes += 1;
                    if attributes > MAX_XML_ELEMENT_ATTRIBUTES {
                        return Err(ModelError::parse(
                            path,
                            tag_line,
                            format!(
                                "an element with more than {MAX_XML_ELEMENT_ATTRIBUTES} \
                                 attributes (the limit of docs/LIMITS.md; an hwloc object has \
                                 about 20)"
                            ),
                        ));
                    }
                }
                _ => {}
            },
            Scan::Value(q) if b == q => state = Scan::Tag,
            Scan::Value(_) => {}
            Scan::Until(end) => {
                if bytes[i..].starts_with(end) {
                    // The end's last byte is looked at no more (its first was this one).
                    i += end.len() - 1;
                    state = Scan::Text;
                }
            }
            Scan::Declaration(false) => match b {
                b'[' => state = Scan::Declaration(true),
                b'>' => state = Scan::Text,
                _ => {}
            },
            Scan::Declaration(true) if b == b']' => state = Scan::Declaration(false),
            Scan::Declaration(true) => {}
        }
        i += 1;
    }
    Ok(())
}

/// Counts what the parser would allocate for, before parsing.
fn check_counts(text: &str, path: &Path) -> Result<(), ModelError> {
    let elements = text.bytes().filter(|&b| b == b'<').count();
    if elements > MAX_XML_ELEMENTS as usize {
        return Err(ModelError::parse(
            path,
            0,
            format!(
                "the XML file has {elements} elements or more, above the limit of \
                 {MAX_XML_ELEMENTS}"
            ),
        ));
    }
    let attributes = text.bytes().filter(|&b| b == b'=').count();
    if attributes > MAX_XML_ATTRIBUTES {
        return Err(ModelError::parse(
            path,
            0,
            format!(
                "the XML file has {attributes} attributes or more, above the limit of \
                 {MAX_XML_ATTRIBUTES}"
            ),
        ));
    }
    check_element_attributes(text, path)
}

/// Reads an hwloc XML topology as the operating system's view of its machine.
///
/// # Errors
///
/// [`ModelError::Parse`] naming the file and line: text that is not well-formed XML, a
/// root element other than `<topology>`, an object without a readable `cpuset` or
/// `os_index`, a PU listed twice, no PU at all, or more elements, attributes, PUs or
/// nodes than the limits allow.
pub fn read_os_view(text: &str, path: &Path) -> Result<OsView, ModelError> {
    check_counts(text, path)?;
    let options = ParsingOptions {
        allow_dtd: true,
        nodes_limit: 2 * MAX_XML_ELEMENTS,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text.trim_start_matches('\u{feff}'), options).map_err(
        |e| {
            ModelError::parse(
                path,
                e.pos().row as usize,
                format!("not well-formed XML: {e}"),
            )
        },
    )?;
    let r = Reader { doc: &doc, path };
    let root = doc.root_element();
    if !root.has_tag_name("topology") {
        return Err(r.err(
            root,
            format!(
                "not an hwloc topology: the root element is <{}>, not <topology> \
                 (write one with `lstopo-no-graphics --of xml`)",
                root.tag_name().name()
            ),
        ));
    }
    // Depths in document order (a parent comes before its children): the nesting is
    // bounded before any walk up the tree.
    let mut depth = vec![0u32; doc.descendants().count() + 1];
    for n in root.descendants() {
        let d = n.parent().map_or(0, |p| depth[p.id().get_usize()] + 1);
        if d > MAX_XML_DEPTH {
            return Err(r.err(
                n,
                format!("elements nest deeper than the limit of {MAX_XML_DEPTH}"),
            ));
        }
        depth[n.id().get_usize()] = d;
    }
    let objects: Vec<Node<'_, '_>> = root
        .descendants()
        .filter(|n| n.has_tag_name("object"))
        .collect();
    // PUs and their core, package and die.
    let mut pus: BTreeMap<u32, (Node<'_, '_>, usize, i64, Option<i64>)> = BTreeMap::new();
    let mut packages: BTreeMap<usize, i64> = BTreeMap::new();
    for n in &objects {
        if n.attribute("type") != Some("PU") {
            continue;
        }
        let Some(id) = r.os_index(*n)? else {
            return Err(r.err(*n, "<object type=\"PU\"> has no os_index"));
        };
        if id > crate::os_view::MAX_CPU {
            return Err(r.err(
                *n,
                format!(
                    "PU P#{id} is above the largest CPU number, {}",
                    crate::os_view::MAX_CPU
                ),
            ));
        }
        let core = above(*n, &["Core"]).unwrap_or(*n).id().get_usize();
        let package = match above(*n, &["Package", "Socket"]) {
            Some(p) => match r.os_index(p)? {
                Some(i) => i64::from(i),
                None => {
                    let next = i64::try_from(packages.len()).unwrap_or(i64::MAX);
                    *packages.entry(p.id().get_usize()).or_insert(next)
                }
            },
            None => 0,
        };
        let die = match above(*n, &["Die"]) {
            Some(d) => Some(i64::from(r.os_index(d)?.unwrap_or(0))),
            None => None,
        };
        if pus.insert(id, (*n, core, package, die)).is_some() {
            return Err(r.err(*n, format!("PU P#{id} is listed twice")));
        }
        if pus.len() > MAX_CONTEXTS {
            return Err(r.err(
                *n,
                format!("more PUs than the limit of {MAX_CONTEXTS} hardware contexts"),
            ));
        }
    }
    if pus.is_empty() {
        return Err(ModelError::parse(path, 0, "the topology has no PU object"));
    }
    let known: BTreeSet<u32> = pus.keys().copied().collect();
    // NUMA nodes.
    let mut nodes: BTreeMap<u32, OsNode> = BTreeMap::new();
    for n in objects
        .iter()
        .filter(|n| n.attribute("type") == Some("NUMANode"))
    {
        let id = r
            .os_index(*n)?
            .unwrap_or(u32::try_from(nodes.len()).unwrap_or(0));
        if nodes.len() >= MAX_NODES {
            return Err(r.err(*n, format!("more NUMA nodes than the limit of {MAX_NODES}")));
        }
        let node = OsNode {
            id,
            cpus: r.cpuset(*n, &known)?,
            distances: Vec::new(),
            memory_bytes: r.number::<u64>(*n, "local_memory")?,
        };
        nodes.insert(id, node);
    }
    let mut by_core: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    let mut by_package: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for (&id, &(_, core, package, _)) in &pus {
        by_core.entry(core).or_default().push(id);
        by_package.entry(package).or_default().push(id);
    }
    let cpus = pus
        .iter()
        .map(|(&id, &(_, core, package, die))| OsCpu {
            id,
            package,
            die,
            core: i64::try_from(core).unwrap_or(i64::MAX),
            cluster: None,
            thread_siblings: by_core[&core].clone(),
            core_siblings: by_package[&package].clone(),
            node: nodes
                .values()
                .find(|n| n.cpus.binary_search(&id).is_ok())
                .map(|n| n.id),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        })
        .collect();
    // Caches.
    let mut caches = Vec::new();
    for n in &objects {
        let Some((level, kind)) = cache_of(*n) else {
            continue;
        };
        caches.push(OsCache {
            level,
            kind,
            size_bytes: r.number::<u64>(*n, "cache_size")?.filter(|&s| s > 0),
            line_size: r.number::<u32>(*n, "cache_linesize")?.filter(|&s| s > 0),
            ways: n
                .attribute("cache_associativity")
                .and_then(|w| w.parse::<u32>().ok())
                .filter(|&w| w > 0),
            cpus: r.cpuset(*n, &known)?,
        });
    }
    caches.sort_by(|a, b| (a.level, a.kind, &a.cpus).cmp(&(b.level, b.kind, &b.cpus)));
    caches.dedup();
    let info = |name: &str| -> Option<String> {
        root.descendants()
            .find(|n| n.has_tag_name("info") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_string)
    };
    Ok(OsView {
        cpus,
        offline: Vec::new(),
        nodes: (!nodes.is_empty()).then(|| nodes.into_values().collect()),
        caches,
        cpu_model: info("CPUModel"),
        kernel: info("OSRelease"),
        hostname: info("HostName"),
        notes: Vec::new(),
        ..OsView::default()
    })
}

/// The cache section of a structure made from `os`: one level per level and type, with
/// the OS's size and line size, and the OS's sharing as `shared_by` (recorded as the
/// OS's, not measured).
#[must_use]
pub fn os_cache_section(topo: &Topology, os: &OsView) -> Option<CacheSection> {
    let index: BTreeMap<u32, ContextId> = topo
        .contexts()
        .iter()
        .enumerate()
        .map(|(i, c)| (c.os_id, ContextId(i)))
        .collect();
    let mut levels: BTreeMap<(u8, CacheType), CacheLevel> = BTreeMap::new();
    for c in &os.caches {
        let shared: Vec<ContextId> = c
            .cpus
            .iter()
            .filter_map(|x| index.get(x).copied())
            .collect();
        if shared.is_empty() {
            continue;
        }
        let level = levels
            .entry((c.level, c.kind))
            .or_insert_with(|| CacheLevel {
                os_size_kib: c.size_bytes.map(|b| b / 1024),
                line_bytes: c.line_size,
                ways: c.ways,
                sharing: Some(SharingTest {
                    outcome: SharingOutcome::Unavailable,
                    source: Some(Origin::Os),
                    array_kib: None,
                    alone_ns: None,
                    double_ns: None,
                    pairs: Vec::new(),
                    reason: Some("the operating system's sharing, not measured".into()),
                }),
                ..CacheLevel::new(u32::from(c.level), Some(c.kind))
            });
        level.shared_by.push(shared);
    }
    (!levels.is_empty()).then(|| CacheSection {
        levels: levels.into_values().collect(),
        tlb: Vec::new(),
    })
}

/// Reads an hwloc XML topology as a description of the OS's structure (no latency), with
/// its caches; the provenance's `hwloc_xml` parameter names the file.
///
/// # Errors
///
/// As [`read_os_view`]; [`ModelError::Parse`] when the structure is inconsistent.
pub fn read_topology(text: &str, path: &Path) -> Result<Topology, ModelError> {
    let os = read_os_view(text, path)?;
    let mut topo = os
        .structure()
        .map_err(|e| ModelError::parse(path, 0, format!("the topology it describes: {e}")))?;
    topo.set_caches(os_cache_section(&topo, &os));
    topo.provenance_mut()
        .parameters
        .insert("hwloc_xml".into(), path.display().to_string());
    Ok(topo)
}

/// Gives the cache levels of `topo` whose sharing is unknown (no `shared_by`) the OS's
/// sharing of the same level and type, recorded as the OS's; a topology without a cache
/// section gets the OS's ([`os_cache_section`]). For exporting this machine's
/// description, whose OS is `os`. Returns the number of levels given a sharing.
pub fn add_os_sharing(topo: &mut Topology, os: &OsView) -> usize {
    let Some(from_os) = os_cache_section(topo, os) else {
        return 0;
    };
    let Some(mut section) = topo.caches().cloned() else {
        let n = from_os.levels.len();
        topo.set_caches(Some(from_os));
        return n;
    };
    let mut given = 0;
    for level in section.levels.iter_mut().filter(|l| l.shared_by.is_empty()) {
        let same = from_os.levels.iter().find(|o| {
            o.level == level.level
                && (o.kind == level.kind
                    || (level.kind.is_none() && o.kind.is_some_and(CacheType::holds_data)))
        });
        if let Some(o) = same {
            level.shared_by.clone_from(&o.shared_by);
            level.sharing.clone_from(&o.sharing);
            given += 1;
        }
    }
    topo.set_caches(Some(section));
    given
}
