//! The grammar and the resolution on small machines made by hand.

use proptest::prelude::*;

use super::ast::{Atom, Domain, DomainKind, IndexItem, Op, OsItem, Selection, Step};
use super::inventory::Parts;
use super::*;

fn atoms(text: &str) -> Vec<(Op, Atom)> {
    parser::parse_terms(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .into_iter()
        .map(|t| (t.op, t.atom))
        .collect()
}

fn syntax_error(text: &str) -> CpuSetError {
    let e = CpuSetExpr::parse(text).expect_err(text);
    assert_eq!(e.kind, ErrorKind::Syntax, "{text}: {e}");
    e
}

#[test]
fn os_lists_and_masks_parse() {
    assert_eq!(
        atoms("0-3,8"),
        vec![(
            Op::Union,
            Atom::Os(vec![
                OsItem::Range {
                    lo: 0,
                    hi: 3,
                    used: 1,
                    group: 1
                },
                OsItem::One(8)
            ])
        )]
    );
    assert_eq!(
        atoms("0x3c0f"),
        vec![(Op::Union, Atom::Mask(vec![0, 1, 2, 3, 10, 11, 12, 13]))]
    );
    assert_eq!(
        atoms("0x1,0x3"),
        vec![(Op::Union, Atom::Mask(vec![0, 1, 32]))]
    );
    assert_eq!(atoms("0x1,,0x0"), vec![(Op::Union, Atom::Mask(vec![64]))]);
    assert_eq!(
        atoms("0x100000000"),
        vec![(Op::Union, Atom::Mask(vec![32]))]
    );
    // A comma after a mask followed by a term that is no mask word starts a new term.
    assert_eq!(
        atoms("0x1,C0:"),
        vec![
            (Op::Union, Atom::Mask(vec![0])),
            (
                Op::Union,
                Atom::Domain(
                    Domain {
                        kind: DomainKind::Cache,
                        index: 0
                    },
                    None
                )
            )
        ]
    );
}

#[test]
fn operators_and_separators() {
    let ops: Vec<Op> = atoms("all ~pu:0 xcore:0-1 ^pu:3 +0@1,core:1")
        .into_iter()
        .map(|(op, _)| op)
        .collect();
    assert_eq!(
        ops,
        vec![
            Op::Union,
            Op::Clear,
            Op::Intersect,
            Op::Xor,
            Op::Union,
            Op::Union,
            Op::Union
        ]
    );
}

#[test]
fn locations_parse() {
    assert_eq!(
        atoms("package:1.core:0-3"),
        vec![(
            Op::Union,
            Atom::Location(vec![
                Step {
                    ty: ObjectType::Package,
                    selection: Selection::Items(vec![IndexItem::One(1)])
                },
                Step {
                    ty: ObjectType::Core,
                    selection: Selection::Items(vec![IndexItem::Range(0, 3)])
                },
            ])
        )]
    );
    assert_eq!(
        atoms("Core:2-,5:3,7"),
        vec![(
            Op::Union,
            Atom::Location(vec![Step {
                ty: ObjectType::Core,
                selection: Selection::Items(vec![
                    IndexItem::From(2),
                    IndexItem::Count(5, 3),
                    IndexItem::One(7)
                ])
            }])
        )]
    );
    assert_eq!(atoms("node:odd").len(), 1);
    assert_eq!(atoms("all"), vec![(Op::Union, Atom::All)]);
    assert_eq!(atoms("machine:0"), vec![(Op::Union, Atom::All)]);
}

#[test]
fn likwid_forms_parse() {
    let s1 = Domain {
        kind: DomainKind::Socket,
        index: 1,
    };
    assert_eq!(
        atoms("S1:0-3"),
        vec![(
            Op::Union,
            Atom::Domain(s1, Some(vec![IndexItem::Range(0, 3)]))
        )]
    );
    assert_eq!(atoms("S1"), vec![(Op::Union, Atom::Domain(s1, None))]);
    assert_eq!(atoms("S1:"), vec![(Op::Union, Atom::Domain(s1, None))]);
    assert_eq!(
        atoms("L:S1:3-0"),
        vec![(
            Op::Union,
            Atom::Domain(s1, Some(vec![IndexItem::Range(3, 0)]))
        )]
    );
    assert_eq!(
        atoms("E:S1:4:1:2"),
        vec![(
            Op::Union,
            Atom::Expression {
                domain: s1,
                count: Some(4),
                chunk: 1,
                stride: 2,
                offset: 0
            }
        )]
    );
    assert_eq!(
        atoms("M:scatter:4"),
        vec![(
            Op::Union,
            Atom::Scatter {
                kind: DomainKind::Memory,
                count: Some(4)
            }
        )]
    );
    assert_eq!(atoms("S0:0-1@S1:0-1").len(), 2);
    assert_eq!(atoms("S0:0,2,S1:1").len(), 2);
}

#[test]
fn syntax_errors_name_the_term_and_the_fault() {
    for (text, term, says) in [
        ("0-3,x", "x", "unknown object type \"x\""),
        ("5-2", "5-2", "starts at 5, after its end 2"),
        ("0-1048576", "0-1048576", "1048576 is above 1048575"),
        (
            "core:9999999999999999999",
            "core:9999999999999999999",
            "is above",
        ),
        ("cpu:1", "cpu:1", "unknown object type \"cpu\""),
        ("core", "core", "expected `:`"),
        ("core:x", "core:x", "\"x\" is no index"),
        ("core:3-1", "core:3-1", "starts after its end"),
        ("package:1.", "package:1.", "expected an object type"),
        ("S", "S", "S needs a number"),
        ("N3:0", "N3:0", "without a number"),
        ("S:balanced", "S:balanced", "not supported"),
        ("E:S0:1:2", "E:S0:1:2", "1, 3 or 4 numbers"),
        ("E:Q0", "E:Q0", "no likwid domain"),
        ("0x", "0x", "hexadecimal digits"),
        ("0xf...f", "0xf...f", "infinite"),
        ("0x123456789,0x1", "0x123456789,0x1", "at most 8"),
        ("0-3,", "0-3,", "comma must be followed"),
        ("0,,1", "0,,1", "comma must be followed"),
        ("*3", "*3", "a term is a CPU number"),
        ("~-1", "~-1", "a term is a CPU number"),
        ("~", "~", "must be followed"),
        ("0-15:3", "0-15:3", "USED/GROUP"),
        ("0-15:5/4", "0-15:5/4", "0 < USED <= GROUP"),
    ] {
        let e = syntax_error(text);
        assert_eq!(e.term, term, "{text}: {e}");
        assert!(e.reason.contains(says), "{text}: {e}");
    }
    assert!(syntax_error("").reason.contains("empty"));
    assert!(syntax_error("   ").reason.contains("empty"));
    assert!(syntax_error("@ 0").reason.contains("`@`"));
    assert!(syntax_error("0 @").reason.contains("`@`"));
    assert!(syntax_error("core:0 é").reason.contains("ASCII"));
}

#[test]
fn the_size_limit_is_checked_before_parsing() {
    let long = "0,".repeat(MAX_EXPR_BYTES / 2) + "0";
    let e = syntax_error(&long);
    assert!(e.reason.contains("at most 65536"), "{e}");
    // Just under the limit: parsed, and many repeats of a big range cost no more than
    // their CPUs.
    let many = vec!["0-1023"; (MAX_EXPR_BYTES - 100) / 7].join(" ");
    let r = CpuSetExpr::parse(&many).unwrap().resolve_numbers().unwrap();
    assert_eq!(r.cpus.len(), 1024);
}

#[test]
fn numbers_alone_need_no_topology() {
    let r = CpuSetExpr::parse("3,1-2 0x10 ~2")
        .unwrap()
        .resolve_numbers()
        .unwrap();
    assert_eq!(r.order, vec![3, 1, 4]);
    assert_eq!(r.cpus, vec![1, 3, 4]);
    let e = CpuSetExpr::parse("0-3 core:0")
        .unwrap()
        .resolve_numbers()
        .unwrap_err();
    assert_eq!(
        (e.kind, e.term.as_str()),
        (ErrorKind::NeedsTopology, "core:0")
    );
    assert!(!CpuSetExpr::parse("0x3,0-2").unwrap().needs_topology());
    assert!(CpuSetExpr::parse("0 all").unwrap().needs_topology());
}

/// Two packages of two cores with two threads each, numbered as Linux numbers an
/// Intel machine: CPU `c` of package `p` core `k` thread `t` is `t * 4 + p * 2 + k`;
/// one L3 per package, two NUMA nodes, and a CPU-less third node.
fn two_by_two_by_two() -> Inventory {
    let core = |p: u32, k: u32| vec![p * 2 + k, 4 + p * 2 + k];
    let package = |p: u32| [core(p, 0), core(p, 1)].concat();
    Inventory::build(Parts {
        pus: (0..8).collect(),
        levels: vec![
            (
                ObjectType::Package,
                Ok(vec![(Some(0), package(0)), (Some(1), package(1))]),
            ),
            (
                ObjectType::Core,
                Ok((0..2)
                    .flat_map(|p| (0..2).map(move |k| (None, core(p, k))))
                    .collect()),
            ),
            (
                ObjectType::L3Cache,
                Ok(vec![(None, package(0)), (None, package(1))]),
            ),
            (
                ObjectType::NumaNode,
                Ok(vec![
                    (Some(1), package(0)),
                    (Some(0), package(1)),
                    (Some(2), vec![]),
                ]),
            ),
            (ObjectType::L2Cache, Err("no L2 known".into())),
        ],
        cpuless_nodes: Vec::new(),
    })
}

fn order(inv: &Inventory, text: &str) -> Vec<u32> {
    CpuSetExpr::parse(text)
        .and_then(|e| e.resolve(inv))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .order
}

fn set(inv: &Inventory, text: &str) -> Vec<u32> {
    CpuSetExpr::parse(text)
        .and_then(|e| e.resolve(inv))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .cpus
}

fn refused(inv: &Inventory, text: &str) -> CpuSetError {
    CpuSetExpr::parse(text)
        .and_then(|e| e.resolve(inv))
        .expect_err(text)
}

#[test]
fn hwloc_locations_resolve_by_logical_index() {
    let inv = two_by_two_by_two();
    assert_eq!(inv.logical_cpus(), &[0, 4, 1, 5, 2, 6, 3, 7]);
    assert_eq!(order(&inv, "pu:0-3"), vec![0, 4, 1, 5]);
    assert_eq!(set(&inv, "core:1"), vec![1, 5]);
    assert_eq!(set(&inv, "package:1.core:0"), vec![2, 6]);
    assert_eq!(set(&inv, "socket:1.core:1.pu:1"), vec![7]);
    assert_eq!(set(&inv, "core:all.pu:0"), vec![0, 1, 2, 3]);
    assert_eq!(set(&inv, "core:odd"), vec![1, 3, 5, 7]);
    assert_eq!(set(&inv, "core:3:2"), vec![0, 3, 4, 7]);
    assert_eq!(order(&inv, "core:1:9"), vec![1, 5, 2, 6, 3, 7, 0, 4]);
    assert_eq!(set(&inv, "core:2-"), vec![2, 3, 6, 7]);
    assert_eq!(set(&inv, "l3:1"), vec![2, 3, 6, 7]);
    assert_eq!(set(&inv, "package:0.l3cache:0"), vec![0, 1, 4, 5]);
    // Nodes are numbered by their first PU, hwloc's logical order (node:0 is the OS's
    // node 1 here); the CPU-less node comes last and names no CPU.
    assert_eq!(set(&inv, "node:0"), vec![0, 1, 4, 5]);
    assert_eq!(set(&inv, "numanode:2"), Vec::<u32>::new());
    assert_eq!(set(&inv, "package:1.node:0"), vec![2, 3, 6, 7]);
    assert_eq!(set(&inv, "all"), (0..8).collect::<Vec<_>>());
    assert_eq!(set(&inv, "core:0,3"), vec![0, 3, 4, 7]);
    // Inside several objects, indexes one lacks are passed over; none having it is an
    // error.
    assert_eq!(set(&inv, "package:all.core:1-5"), vec![1, 3, 5, 7]);
    assert!(refused(&inv, "package:all.core:2")
        .reason
        .contains("package:0 holds 2 cores"));
}

#[test]
fn set_arithmetic_goes_left_to_right() {
    let inv = two_by_two_by_two();
    assert_eq!(set(&inv, "all ~package:1"), vec![0, 1, 4, 5]);
    assert_eq!(set(&inv, "package:0 xcore:0-2"), vec![0, 1, 4, 5]);
    assert_eq!(set(&inv, "core:0 ^pu:1-2"), vec![0, 1]);
    assert_eq!(set(&inv, "~core:0 core:1"), vec![1, 5]);
    assert_eq!(set(&inv, "0-3,core:3"), vec![0, 1, 2, 3, 7]);
    assert_eq!(order(&inv, "2 ~2 1 2"), vec![1, 2]);
    assert_eq!(order(&inv, "3,1 core:0"), vec![3, 1, 0, 4]);
    assert_eq!(set(&inv, "0x3c 0x1"), vec![0, 2, 3, 4, 5]);
    assert_eq!(set(&inv, "^core:0,0"), vec![0, 4]);
}

#[test]
fn likwid_domains_number_physical_cores_first() {
    let inv = two_by_two_by_two();
    assert_eq!(order(&inv, "S0:0-3"), vec![0, 1, 4, 5]);
    assert_eq!(order(&inv, "S1:0-1"), vec![2, 3]);
    assert_eq!(order(&inv, "S1:3-0"), vec![7, 6, 3, 2]);
    assert_eq!(order(&inv, "N:0-3"), vec![0, 1, 2, 3]);
    assert_eq!(order(&inv, "L:N:4,0"), vec![4, 0]);
    assert_eq!(order(&inv, "S1"), vec![2, 6, 3, 7]);
    assert_eq!(order(&inv, "S1:"), vec![2, 6, 3, 7]);
    assert_eq!(order(&inv, "C1:0"), vec![2]);
    // Memory domains are numbered as the OS numbers the nodes.
    assert_eq!(order(&inv, "M1:0-1"), vec![0, 1]);
    assert_eq!(order(&inv, "M0:0-1"), vec![2, 3]);
    assert_eq!(order(&inv, "S0:0-1@S1:0-1"), vec![0, 1, 2, 3]);
    assert_eq!(order(&inv, "E:N:4:1:2"), vec![0, 1, 2, 3]);
    assert_eq!(order(&inv, "E:S0:2"), vec![0, 4]);
    assert_eq!(order(&inv, "E:N:2:2:4:1"), vec![4, 1]);
    assert_eq!(order(&inv, "S:scatter"), vec![0, 2, 1, 3, 4, 6, 5, 7]);
    assert_eq!(order(&inv, "S:scatter:3"), vec![0, 2, 1]);
}

#[test]
fn resolution_errors_say_what_exists() {
    let inv = two_by_two_by_two();
    for (text, says) in [
        ("package:3", "the topology has 2 packages (0-1)"),
        ("package:1.core:2", "package:1 holds 2 cores (0-1)"),
        ("core:1.pu:0-2", "core:1 holds 2 PUs (0-1)"),
        ("pu:8", "the topology has 8 PUs (0-7)"),
        ("S2:0", "the topology has 2 socket domains (S0-S1)"),
        ("S1:0-4", "index 4: S1 has 4 hardware threads (0-3)"),
        ("M3", "3 memory domains"),
        ("E:S0:2:1:1:9", "offset 9"),
        (
            "0-9",
            "CPUs 8-9 are not hardware contexts of the topology (its CPUs: 0-7)",
        ),
        ("0x100", "CPU 8 is not a hardware context of the topology"),
        // The whole range a thousand times: walked up to the machine's largest CPU only,
        // the rest missing as one range (it once held a billion numbers, 8 GB).
        (
            &vec!["0-1048575"; 1000].join(","),
            "CPUs 8-1048575 are not hardware contexts",
        ),
    ] {
        let e = refused(&inv, text);
        assert_eq!(
            (e.kind, e.term.as_str()),
            (ErrorKind::NotInTopology, text),
            "{e}"
        );
        assert!(e.reason.contains(says), "{text}: {e}");
    }
    for text in [
        "l2:0",
        "package:0.l2cache:0",
        "die:0",
        "D0:0",
        "group:0 ~l2:0",
    ] {
        let e = refused(&inv, text);
        assert!(
            matches!(e.kind, ErrorKind::Unknown | ErrorKind::NeedsTopology),
            "{text}: {e:?}"
        );
        assert!(!e.term.is_empty(), "{text}: {e}");
    }
    assert!(refused(&inv, "l2:0").reason.contains("no L2 known"));
}

#[test]
fn counting_and_intersecting_like_hwloc_calc() {
    let inv = two_by_two_by_two();
    let cpus = set(&inv, "pu:1-2");
    assert_eq!(
        inv.intersecting(ObjectType::Core, &cpus).unwrap(),
        vec![0, 1]
    );
    assert_eq!(
        inv.intersecting(ObjectType::Package, &cpus).unwrap(),
        vec![0]
    );
    assert_eq!(inv.intersecting(ObjectType::Pu, &cpus).unwrap(), vec![1, 2]);
    assert_eq!(inv.count(ObjectType::NumaNode).unwrap(), 3);
    assert_eq!(
        inv.intersecting(ObjectType::Machine, &cpus).unwrap(),
        vec![0]
    );
}

proptest! {
    /// Any set of CPUs round-trips through its list, both masks and likwid's order.
    #[test]
    fn lists_and_masks_round_trip(cpus in proptest::collection::btree_set(0u32..5000, 0..200)) {
        let cpus: Vec<u32> = cpus.into_iter().collect();
        prop_assume!(!cpus.is_empty());
        for text in [render::list(&cpus), render::mask(&cpus), render::hwloc(&cpus), render::ordered(&cpus)] {
            let r = CpuSetExpr::parse(&text).and_then(|e| e.resolve_numbers());
            prop_assert_eq!(r.map(|r| r.cpus), Ok(cpus.clone()), "{}", text);
        }
    }

    /// The order of a list is kept, whatever it is.
    #[test]
    fn an_order_is_kept(cpus in proptest::collection::vec(0u32..300, 1..60)) {
        let mut first = Vec::new();
        for c in &cpus {
            if !first.contains(c) {
                first.push(*c);
            }
        }
        let r = CpuSetExpr::parse(&render::ordered(&cpus)).unwrap().resolve_numbers().unwrap();
        prop_assert_eq!(r.order, first);
    }

    /// No input makes the parser panic.
    #[test]
    fn any_text_parses_or_is_refused(text in "[ -~]{0,40}") {
        let _ = CpuSetExpr::parse(&text).map(|e| e.resolve(&two_by_two_by_two()));
    }
}

/// The OS's view of a guest as QEMU builds it: 2 packages of 6 cores of 2 threads
/// (siblings `2k`, `2k+1`, each core a cluster of its own), each package split into two
/// NUMA nodes of 3 cores
/// (sub-NUMA clustering), one L3 per package, and node 4 holding memory only, whose HMAT
/// initiator is node 0 (or, without HMAT, which is nearest node 0 by distance).
fn snc_guest(hmat: bool) -> topoprobe_model::OsView {
    let cpus: Vec<serde_json::Value> = (0..24u32)
        .map(|id| {
            let package = id / 12;
            serde_json::json!({
                "id": id,
                "package": package,
                "core": (id % 12) / 2,
                // Linux 6.1 in QEMU gives every core a cluster of its own.
                "cluster": (id % 12) / 2,
                "die": 0,
                "thread_siblings": [id & !1, id | 1],
                "core_siblings": (package * 12..package * 12 + 12).collect::<Vec<_>>(),
                "node": id / 6,
            })
        })
        .collect();
    let distances = [
        [10, 11, 21, 21, 17],
        [11, 10, 21, 21, 18],
        [21, 21, 10, 11, 28],
        [21, 21, 11, 10, 28],
        [17, 18, 28, 28, 10],
    ];
    let nodes: Vec<serde_json::Value> = (0..5u32)
        .map(|n| {
            let cpus: Vec<u32> = if n < 4 {
                (n * 6..n * 6 + 6).collect()
            } else {
                vec![]
            };
            serde_json::json!({
                "id": n,
                "cpus": cpus,
                "distances": distances[n as usize],
                "memory_bytes": 256u64 << 20,
            })
        })
        .collect();
    let caches: Vec<serde_json::Value> = (0..2u32)
        .map(|p| {
            serde_json::json!({
                "level": 3, "type": "unified", "size_bytes": 16u64 << 20,
                "cpus": (p * 12..p * 12 + 12).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut view = serde_json::json!({
        "cpus": cpus, "offline": [], "nodes": nodes, "caches": caches, "notes": [],
    });
    if hmat {
        view["initiators"] = serde_json::json!({ "4": [0, 1, 2, 3, 4, 5] });
    }
    serde_json::from_value(view).expect("an OS view")
}

/// hwloc numbers NUMA nodes as it walks its tree: a CPU-less node sits beside the node
/// of its initiators, so `numanode:1` is node 4 (its CPUs: its locality) and `numanode:4`
/// is node 3, as hwloc-calc answers in such a guest.
#[test]
fn cpuless_nodes_are_numbered_where_their_locality_puts_them() {
    for hmat in [true, false] {
        let inv = Inventory::from_os_view(&snc_guest(hmat));
        assert_eq!(
            set(&inv, "numanode:0"),
            (0..6).collect::<Vec<_>>(),
            "hmat {hmat}"
        );
        assert_eq!(
            set(&inv, "numanode:1"),
            (0..6).collect::<Vec<_>>(),
            "hmat {hmat}"
        );
        assert_eq!(
            set(&inv, "numanode:2"),
            (6..12).collect::<Vec<_>>(),
            "hmat {hmat}"
        );
        assert_eq!(
            set(&inv, "numanode:4"),
            (18..24).collect::<Vec<_>>(),
            "hmat {hmat}"
        );
        assert_eq!(set(&inv, "package:1.core:1"), vec![14, 15], "hmat {hmat}");
        // CPU 0 is near both node 0 and node 4.
        assert_eq!(
            inv.intersecting(ObjectType::NumaNode, &[0]).unwrap(),
            vec![0, 1],
            "hmat {hmat}"
        );
    }
}
