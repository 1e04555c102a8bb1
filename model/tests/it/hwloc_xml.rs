//! The hwloc XML export's cache objects and memory attributes, and the reader of the XML
//! lstopo writes (without hwloc: the CLI's tests run hwloc's tools on the output).

use std::path::Path;

use roxmltree::{Document, Node, ParsingOptions};
use topoprobe_model::format::hwloc_xml::{self, read};
use topoprobe_model::{
    Access, CacheLevel, CacheSection, CacheType, ContextId, Evidence, LatencyMatrix, LatencyUnit,
    MatrixInitiator, Member, MemoryBandwidth, MemoryDetail, MemoryLatency, MemorySection,
    ModelError, NodeId, NodeMatrix, SocketId, Threads, Topology, TopologyBuilder,
};

/// Two sockets, each with two groups of two single-context cores: contexts 0-3 and 4-7.
fn two_sockets() -> Topology {
    let mut b = TopologyBuilder::new((0..8).collect(), LatencyUnit::Ns);
    for s in 0..2 {
        let mut groups = Vec::new();
        for g in 0..2 {
            let base = s * 4 + g * 2;
            let c0 = b.core(vec![ContextId(base)]);
            let c1 = b.core(vec![ContextId(base + 1)]);
            groups.push(Member::Group(
                b.group(vec![Member::Core(c0), Member::Core(c1)], Evidence::Given),
            ));
        }
        b.socket(groups);
    }
    let lat = LatencyMatrix::from_fn(8, |i, j| Some(if i / 4 == j / 4 { 40.0 } else { 120.0 }));
    b.latencies(lat.clone(), lat);
    b.build().expect("a valid topology")
}

fn level(n: u32, kind: CacheType, kib: u64) -> CacheLevel {
    CacheLevel {
        os_size_kib: Some(kib),
        line_bytes: Some(64),
        ..CacheLevel::new(n, Some(kind))
    }
}

fn parse(xml: &str) -> Document<'_> {
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(xml, opts).expect("well-formed XML")
}

fn objects<'a, 'i>(doc: &'a Document<'i>, kind: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("object") && n.attribute("type") == Some(kind))
        .collect()
}

/// (value, initiator cpuset) of every value of the memory attribute `name`.
fn memattr_values(doc: &Document<'_>, name: &str) -> Vec<(String, String)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("memattr") && n.attribute("name") == Some(name))
        .flat_map(|m| m.children().filter(|c| c.has_tag_name("memattr_value")))
        .map(|v| {
            (
                v.attribute("value").unwrap_or("").to_string(),
                v.attribute("initiator_cpuset").unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn parent_type<'a>(n: Node<'a, '_>) -> &'a str {
    n.parent().and_then(|p| p.attribute("type")).unwrap_or("")
}

#[test]
fn caches_without_sharing_are_private_up_to_l2_and_per_socket_above() {
    let mut t = two_sockets();
    t.set_caches(Some(CacheSection {
        levels: vec![
            level(1, CacheType::Instruction, 32),
            level(1, CacheType::Data, 48),
            level(2, CacheType::Unified, 1024),
            CacheLevel {
                measured_size_kib: Some(16 << 10),
                ways: Some(16),
                ..level(3, CacheType::Unified, 32 << 10)
            },
        ],
        tlb: Vec::new(),
    }));
    let xml = hwloc_xml::render(&t);
    let doc = parse(&xml);
    let l3 = objects(&doc, "L3Cache");
    assert_eq!(l3.len(), 2);
    // The measured size; the L3 holds the socket's groups; the OS's associativity.
    assert_eq!(l3[0].attribute("cache_size"), Some("16777216"));
    assert_eq!(l3[0].attribute("cache_associativity"), Some("16"));
    assert_eq!(
        objects(&doc, "L2Cache")[0].attribute("cache_associativity"),
        None
    );
    assert!(l3.iter().all(|c| parent_type(*c) == "Package"));
    assert_eq!(objects(&doc, "L2Cache").len(), 8);
    for l1 in objects(&doc, "L1Cache") {
        assert_eq!(l1.attribute("cache_type"), Some("1"));
        assert_eq!(parent_type(l1), "L2Cache");
    }
    for l1i in objects(&doc, "L1iCache") {
        assert_eq!(l1i.attribute("cache_type"), Some("2"));
        assert_eq!(parent_type(l1i), "L1Cache");
    }
    for core in objects(&doc, "Core") {
        assert_eq!(parent_type(core), "L1iCache");
    }
    for g in objects(&doc, "Group") {
        assert_eq!(parent_type(g), "L3Cache");
    }
    assert!(xml.contains("<info name=\"TopoprobeSharing\" value=\"assumed\"/>"));
    assert!(!xml.contains("TopoprobeCachesLeftOut"));
}

#[test]
fn a_measured_l3_per_group_nests_inside_the_group_and_a_crossing_one_is_left_out() {
    let mut t = two_sockets();
    let ctx = |v: &[usize]| v.iter().copied().map(ContextId).collect::<Vec<_>>();
    t.set_caches(Some(CacheSection {
        levels: vec![
            CacheLevel {
                shared_by: vec![ctx(&[0, 1]), ctx(&[2, 3]), ctx(&[4, 5]), ctx(&[6, 7])],
                ..level(3, CacheType::Unified, 8 << 10)
            },
            // Crosses the groups {0, 1} and {2, 3}: it cannot nest.
            CacheLevel {
                shared_by: vec![ctx(&[1, 2])],
                ..level(4, CacheType::Unified, 64 << 10)
            },
        ],
        tlb: Vec::new(),
    }));
    let xml = hwloc_xml::render(&t);
    let doc = parse(&xml);
    let l3 = objects(&doc, "L3Cache");
    assert_eq!(l3.len(), 4);
    assert!(l3.iter().all(|c| parent_type(*c) == "Group"));
    assert_eq!(l3[1].attribute("cpuset"), Some("0x0000000c"));
    assert!(objects(&doc, "L4Cache").is_empty());
    assert!(xml.contains("<info name=\"TopoprobeCachesLeftOut\" value=\"1\"/>"));
    assert!(xml.contains("<info name=\"TopoprobeSharing\" value=\"measured\"/>"));
}

/// The latency from context `context` to node 0, ns (no cycles).
fn latency_from(context: usize, ns: f64) -> MemoryLatency {
    MemoryLatency {
        context: ContextId(context),
        node: NodeId(0),
        latency: ns,
        cycles: None,
    }
}

#[test]
fn memory_attributes_take_the_best_bandwidth_of_any_thread_count() {
    let mut t = two_sockets();
    let bw = |socket, access, threads, gbps| MemoryBandwidth {
        socket: SocketId(socket),
        node: NodeId(0),
        access,
        threads,
        gbps,
    };
    t.set_memory(Some(MemorySection {
        latency: vec![latency_from(5, 130.4)],
        bandwidth: vec![
            bw(0, Access::Read, Threads::Single, 10.0),
            bw(0, Access::Read, Threads::AllContexts, 20.0),
            bw(1, Access::Write, Threads::Single, 5.0),
        ],
        ..MemorySection::default()
    }));
    let xml = hwloc_xml::render(&t);
    let doc = parse(&xml);
    let attr = |name: &str| memattr_values(&doc, name);
    // 20 GB/s = 19073 MiB/s from socket 0's CPUs 0-3.
    assert_eq!(attr("Bandwidth"), [("19073".into(), "0x0000000f".into())]);
    assert_eq!(
        attr("WriteBandwidth"),
        [("4768".into(), "0x000000f0".into())]
    );
    assert_eq!(attr("Latency"), [("130".into(), "0x000000f0".into())]);
    assert_eq!(attr("ReadLatency"), attr("Latency"));
}

/// The node × node matrix of `mem --full` adds its initiators whose CPUs no socket figure
/// has (the node of half a socket), and leaves the pairs the socket table has alone.
#[test]
fn memory_attributes_add_the_node_matrix_initiators_the_socket_table_lacks() {
    let mut t = two_sockets();
    let initiator = |name: &str, socket, cpus: Vec<u32>| MatrixInitiator {
        name: name.into(),
        socket,
        node: None,
        cpus,
    };
    t.set_memory(Some(MemorySection {
        latency: vec![latency_from(5, 130.4)],
        detail: MemoryDetail {
            node_matrix: Some(NodeMatrix {
                initiators: vec![
                    initiator("half of socket 0", 0, vec![1, 0]),
                    initiator("socket 1", 1, vec![4, 5, 6, 7]),
                ],
                targets: vec![0],
                latency_ns: vec![vec![Some(111.2)], vec![Some(200.0)]],
                read_gbps: vec![vec![Some(12.0)], vec![None]],
                pairs_measured: 2,
                pairs_total: 2,
            }),
            ..MemoryDetail::default()
        },
        ..MemorySection::default()
    }));
    let xml = hwloc_xml::render(&t);
    let doc = parse(&xml);
    let attr = |name: &str| memattr_values(&doc, name);
    // Socket 1's latency comes from the socket table; CPUs 0-1 from the matrix.
    assert_eq!(
        attr("Latency"),
        [
            ("130".into(), "0x000000f0".into()),
            ("111".into(), "0x00000003".into())
        ]
    );
    // 12 GB/s = 11444 MiB/s, read only: the matrix has no writes.
    assert_eq!(
        attr("ReadBandwidth"),
        [("11444".into(), "0x00000003".into())]
    );
    assert_eq!(attr("Bandwidth"), attr("ReadBandwidth"));
    assert!(attr("WriteBandwidth").is_empty());
    let script = hwloc_xml::annotate::render(&t);
    assert!(
        script.contains("annotate -- \"$node0\" -- memattr ReadBandwidth 0x00000003 11444\n"),
        "{script}"
    );
}

#[test]
fn the_annotate_script_names_objects_through_lstopos_logical_indexes() {
    let mut t = two_sockets();
    t.set_memory(Some(MemorySection {
        latency: vec![latency_from(0, 99.6)],
        bandwidth: Vec::new(),
        ..MemorySection::default()
    }));
    let script = hwloc_xml::annotate::render(&t);
    assert!(script.starts_with("#!/bin/sh\n"));
    assert!(script.contains("echo 'name=topoprobe-latency-ps'\n  echo 6\n  echo 8\n"));
    assert!(script.contains("location pu \"$cpu\""));
    assert!(script.contains("annotate -- root -- distances \"$tmp/distances\"\n"));
    assert!(script.contains("node0=$(location numanode 0)\n"));
    assert!(script.contains("annotate -- \"$node0\" -- memattr Latency 0x0000000f 100\n"));
    // 64 values, one per line: 0 on the diagonal, 40 ns = 40000 ps inside a socket.
    assert!(script.contains("<<'VALUES'\n0\n40000\n"));
    assert!(script.ends_with("cp -- \"$tmp/work.xml\" \"$out\"\n"));
}

fn xeon16_xml() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/machines/intel-xeon-vm-16cpu-2026-11-26/lstopo.xml"),
    )
    .expect("the 16-vCPU guest's lstopo.xml")
}

#[test]
fn lstopos_xml_reads_as_the_os_view_with_caches_and_nodes() {
    let os = read::read_os_view(&xeon16_xml(), Path::new("lstopo.xml")).expect("reads");
    assert_eq!(os.online(), (0..16).collect::<Vec<_>>());
    assert_eq!(os.cores().len(), 16);
    assert_eq!(os.packages().len(), 1);
    let nodes = os.nodes.as_ref().expect("nodes");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].cpus, (0..16).collect::<Vec<_>>());
    assert!(nodes[0].memory_bytes.is_some());
    assert_eq!(os.cache_groups(3), [(0..16).collect::<Vec<_>>()]);
    assert_eq!(os.cache_groups(2).len(), 16);
    let l1i = os
        .caches
        .iter()
        .filter(|c| c.level == 1 && c.kind == CacheType::Instruction)
        .count();
    assert_eq!(l1i, 16);
    let l3 = os.caches.iter().find(|c| c.level == 3).expect("an L3");
    assert_eq!(l3.size_bytes, Some(300 << 20));
    assert_eq!(l3.line_size, Some(64));
    assert!(os.hostname.is_some());

    let t = read::read_topology(&xeon16_xml(), Path::new("lstopo.xml")).expect("structure");
    assert_eq!(t.num_contexts(), 16);
    assert_eq!(
        t.provenance()
            .parameters
            .get("hwloc_xml")
            .map(String::as_str),
        Some("lstopo.xml")
    );
    let caches = t.caches().expect("the OS's caches");
    let l3 = caches.levels.iter().find(|l| l.level == 3).expect("L3");
    assert_eq!(l3.shared_by.len(), 1);
    assert_eq!(l3.os_size_kib, Some(300 << 10));
}

/// An XML text with PUs `ids`, each in its own core, in one package.
fn pus_xml(ids: &[u32]) -> String {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\" cpuset=\"0xff\">\n<object type=\"Package\" os_index=\"0\" cpuset=\"0xff\">\n");
    for (i, id) in ids.iter().enumerate() {
        s.push_str(&format!(
            "<object type=\"Core\" os_index=\"{i}\" cpuset=\"0x1\"><object type=\"PU\" os_index=\"{id}\" cpuset=\"0x{:08x}\"/></object>\n",
            1u32 << (id % 32)
        ));
    }
    s.push_str("</object>\n</object>\n</topology>\n");
    s
}

fn parse_error(text: &str) -> (usize, String) {
    match read::read_os_view(text, Path::new("m.xml")) {
        Err(ModelError::Parse { line, message, .. }) => (line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn bad_xml_is_refused_with_the_line_and_the_problem() {
    let (line, m) = parse_error("<topology>\n<object type=PU/></topology>");
    assert_eq!(line, 2);
    assert!(m.starts_with("not well-formed XML"), "{m}");
    let (_, m) = parse_error("<svg/>");
    assert!(
        m.contains("the root element is <svg>, not <topology>"),
        "{m}"
    );
    let (line, m) = parse_error(&pus_xml(&[0, 1, 1]));
    assert_eq!(line, 7);
    assert_eq!(m, "PU P#1 is listed twice");
    let (_, m) = parse_error("<topology><object type=\"Machine\" cpuset=\"0x1\"/></topology>");
    assert_eq!(m, "the topology has no PU object");
    let (line, m) = parse_error(
        "<topology>\n<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/>\n<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0xf...f\"/></topology>",
    );
    assert_eq!(line, 3);
    assert!(m.contains("is infinite"), "{m}");
    let (_, m) =
        parse_error("<topology><object type=\"PU\" os_index=\"x\" cpuset=\"0x1\"/></topology>");
    assert!(m.contains("os_index=\"x\" is not a whole number"), "{m}");
}

#[test]
fn element_and_pu_counts_are_bounded_before_allocating() {
    let many = "<a/>".repeat(topoprobe_model::limits::MAX_XML_ELEMENTS as usize + 1);
    let (line, m) = parse_error(&many);
    assert_eq!(line, 0);
    assert!(m.contains("above the limit of 1048576"), "{m}");
    let attrs = "=".repeat(topoprobe_model::limits::MAX_XML_ATTRIBUTES + 1);
    let (_, m) = parse_error(&format!("<topology a=\"{attrs}\"/>"));
    assert!(
        m.contains("attributes or more, above the limit of 4194304"),
        "{m}"
    );
    let ids: Vec<u32> = (0..=topoprobe_model::limits::MAX_CONTEXTS as u32).collect();
    let (_, m) = parse_error(&pus_xml(&ids));
    assert!(m.contains("more PUs than the limit of 4096"), "{m}");
}

#[test]
fn nesting_is_bounded_and_cpu_sets_keep_only_the_files_pus() {
    let deep = format!(
        "<topology>{}{}</topology>",
        "<object type=\"Group\" cpuset=\"0x1\">".repeat(300),
        "</object>".repeat(300)
    );
    let (line, m) = parse_error(&deep);
    assert_eq!(line, 1);
    assert_eq!(m, "elements nest deeper than the limit of 256");
    // A node whose set names 1024 CPUs of which the file has two PUs keeps those two.
    let wide = format!(
        "<topology><object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/><object type=\"PU\" os_index=\"33\" cpuset=\"0x2,0x0\"/><object type=\"NUMANode\" os_index=\"0\" cpuset=\"{}\"/></topology>",
        vec!["0xffffffff"; 32].join(",")
    );
    let os = read::read_os_view(&wide, Path::new("m.xml")).expect("reads");
    assert_eq!(os.nodes.expect("a node")[0].cpus, [0, 33]);
    let (_, m) = parse_error(
        "<topology><object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/><object type=\"L2Cache\" cpuset=\"0x1,0xZZ\"/></topology>",
    );
    assert!(
        m.contains("`0xZZ` is not a word of up to 8 hexadecimal digits"),
        "{m}"
    );
}

#[test]
fn the_oss_sharing_fills_the_levels_a_description_does_not_share() {
    let mut t = two_sockets();
    t.set_caches(Some(CacheSection {
        levels: vec![level(3, CacheType::Unified, 8 << 10)],
        tlb: Vec::new(),
    }));
    // The OS's L3s are one per group of two cores.
    let mut xml = String::from("<topology>");
    for g in 0..4u32 {
        xml.push_str(&format!(
            "<object type=\"L3Cache\" cpuset=\"0x{:08x}\" cache_size=\"8388608\" depth=\"3\" cache_type=\"0\">",
            3u32 << (2 * g)
        ));
        for c in 0..2 {
            let id = 2 * g + c;
            xml.push_str(&format!(
                "<object type=\"Core\" cpuset=\"0x{0:08x}\"><object type=\"PU\" os_index=\"{id}\" cpuset=\"0x{0:08x}\"/></object>",
                1u32 << id
            ));
        }
        xml.push_str("</object>");
    }
    xml.push_str("</topology>");
    let os = read::read_os_view(&xml, Path::new("m.xml")).expect("reads");
    assert_eq!(read::add_os_sharing(&mut t, &os), 1);
    let doc_text = hwloc_xml::render(&t);
    let doc = parse(&doc_text);
    let l3 = objects(&doc, "L3Cache");
    assert_eq!(l3.len(), 4);
    assert!(l3.iter().all(|c| parent_type(*c) == "Group"));
    assert!(doc_text.contains("<info name=\"TopoprobeSharing\" value=\"os\"/>"));
}

#[test]
fn the_export_reads_back_as_the_same_structure_and_caches() {
    let mut t = two_sockets();
    t.set_caches(Some(CacheSection {
        levels: vec![
            level(1, CacheType::Data, 32),
            level(2, CacheType::Unified, 1024),
            CacheLevel {
                ways: Some(12),
                ..level(3, CacheType::Unified, 8 << 10)
            },
        ],
        tlb: Vec::new(),
    }));
    let xml = hwloc_xml::render(&t);
    let os = read::read_os_view(&xml, Path::new("m.xml")).expect("reads back");
    let l3 = os.caches.iter().find(|c| c.level == 3).expect("an L3");
    assert_eq!(l3.ways, Some(12));
    assert_eq!(os.online(), (0..8).collect::<Vec<_>>());
    assert_eq!(os.cores().len(), 8);
    assert_eq!(os.packages().len(), 2);
    assert_eq!(os.cache_groups(3), [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(os.cache_groups(1).len(), 8);
    let back = read::read_topology(&xml, Path::new("m.xml")).expect("a structure");
    assert_eq!(back.num_sockets(), 2);
    assert_eq!(back.num_contexts(), 8);
}
