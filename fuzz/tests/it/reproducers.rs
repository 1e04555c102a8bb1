//! The corpus files that reproduce the defects fuzzing is meant to find (issue 27, rows 2,
//! 3 and 4, and what the generators found since), kept by name in `regressions/<target>/`,
//! so that `tests/it/replay.rs` runs them through their targets (and `scripts/fuzz.sh`
//! starts every campaign from them).
//! Against the code before each fix, each of them fails its target: an assertion on the
//! OS numbers, on the memory held while reading, or, for the CPU lists, AFL's time limit
//! (`-t 2000`: a billion CPUs set one by one take seconds).
//!
//! Issue 42's, by the same rule: an hwloc XML element with tens of thousands of
//! attributes (quadratic in the parser before the per-element limit: over AFL's time
//! limit), and capture archives cut on a 512-byte boundary (read as a tree with files
//! missing before the end marker was required).
//!
//! `cargo test -p topoprobe-fuzz -- --ignored write_reproducers` writes them again.

use std::path::{Path, PathBuf};

use topoprobe_fuzz::args_gen::{self, Form};
use topoprobe_fuzz::json_gen;

/// One reproducer: its target, its file name, its bytes.
struct Reproducer {
    target: &'static str,
    name: &'static str,
    bytes: Vec<u8>,
}

/// `TOKENS` index of a token.
fn token(t: &str) -> u8 {
    let i = json_gen::TOKENS
        .iter()
        .position(|x| *x == t)
        .expect("a token");
    u8::try_from(i).expect("a byte")
}

/// `COUNTS` index of a count.
fn count(c: usize) -> u8 {
    let i = json_gen::COUNTS
        .iter()
        .position(|x| *x == c)
        .expect("a count");
    u8::try_from(i).expect("a byte")
}

/// Every reproducer.
fn reproducers() -> Vec<Reproducer> {
    let json = |name, template, edits: &[(u8, &str, u8)]| Reproducer {
        target: "json_gen",
        name,
        bytes: json_gen::input(template, 0, edits),
    };
    let whole_range = 1 | (6 << 2); // `N(0)-N(19)` = `0-1048575`, REPEATS[6] = 1000 times
    let every_other = 2 | (16 << 2); // STRIDES[0] = 1/2, REPEATS[4 + 2] = 1000 times
    vec![
        // Row 2: an OS CPU number of 4294967295 (`place --format mask` wrote 1 GiB), one
        // just above the CPU limit, and a node above Linux's.
        json(
            "row2-os-id-4294967295",
            0,
            &[(0, "contexts/1/os_id", token("4294967295"))],
        ),
        json(
            "row2-os-id-1048576",
            3,
            &[(0, "contexts/39/os_id", token("1048576"))],
        ),
        json(
            "row2-node-os-id-1024",
            3,
            &[(
                0,
                "nodes/1",
                token("{\"id\":1,\"local_sockets\":[1],\"os_id\":1024}"),
            )],
        ),
        // Row 3: a latency row of 8 million entries (16 MiB; a 200 MB one took 1.8 GB),
        // and 5 million rows, refused only once read.
        json(
            "row3-latency-row-8M",
            0,
            &[
                (0, "latency/raw/0/1", token("1")),
                (1, "latency/raw/0/1", count(10_000_000)),
            ],
        ),
        json(
            "row3-latency-rows-5M",
            0,
            &[
                (0, "latency/raw/1", token("[]")),
                (1, "latency/raw/1", count(10_000_000)),
            ],
        ),
        json("contexts-4097", 0, &[(1, "contexts/0", count(4097))]),
        // A first row of 4096 entries in a 10 KB file reserved the whole 4096² table
        // (268 MB) before the second row said the table was 4 rows long.
        json(
            "first-row-4096",
            0,
            &[
                (0, "latency/raw/0/1", token("1")),
                (1, "latency/raw/0/1", count(4095)),
                (1, "latency/raw/0/2", count(0)),
                (1, "latency/raw/0/3", count(0)),
            ],
        ),
        // A bandwidth to node 4294967295 (found by this generator): the hwloc XML and the
        // text views counted four billion nodes, a hang.
        json(
            "memory-node-4294967295",
            3,
            &[(0, "memory/bandwidth/4/node", token("4294967295"))],
        ),
        // Row 10's figures: a level whose minimum is above its maximum, a confidence of
        // 7.5, a latency of 1e308 and a denormal one.
        json(
            "extreme-figures",
            3,
            &[
                (3, "levels/0/min", 5),
                (0, "validation/confidence/0/confidence", token("7.5")),
                (0, "latency/raw/0/1", token("1e308")),
                (0, "latency/raw/1/0", token("5e-324")),
            ],
        ),
        // Row 4: `--cpus 0-1048575,…` a thousand times (10 KB, 12 s), a sysfs `online`
        // file the same (11.5 s), every other CPU of the range a thousand times (14 KB,
        // 2.4 s after the first fix), a mask of 65 536 words.
        Reproducer {
            target: "args_gen",
            name: "row4-cpus-0-1048575-x1000",
            bytes: args_gen::input(Form::List, &[(whole_range, 0, 19)]),
        },
        Reproducer {
            target: "args_gen",
            name: "row4-online-0-1048575-x1000",
            bytes: args_gen::input(Form::Online, &[(whole_range, 0, 19)]),
        },
        Reproducer {
            target: "args_gen",
            name: "cpus-0-1048575-every-other-x1000",
            bytes: args_gen::input(Form::List, &[(every_other, 0, 19)]),
        },
        // `0-1048575` ten thousand times (100 KB, found by this generator after the
        // first row-4 fix: 3 s instrumented, a range still set once per copy).
        Reproducer {
            target: "args_gen",
            name: "cpus-0-1048575-x10000",
            bytes: args_gen::input(Form::List, &[(1 | (9 << 2), 0, 19)]),
        },
        Reproducer {
            target: "args_gen",
            name: "mask-ffffffff-x65536",
            bytes: args_gen::input(Form::Mask, &[(1 | (10 << 2), 0, 0)]),
        },
        // Row 4 through the raw targets: the list as `fuzz_args` reads it, and a sysfs
        // tree whose `online` file repeats the range.
        Reproducer {
            target: "args",
            name: "row4-list-0-1048575-x1000",
            bytes: [
                b"\x00".as_slice(),
                vec!["0-1048575"; 1000].join(",").as_bytes(),
            ]
            .concat(),
        },
        Reproducer {
            target: "sysfs",
            name: "row4-online-0-1048575-x1000",
            bytes: args_gen::online_tree(&(vec!["0-1048575"; 1000].join(",") + "\n")),
        },
        // Issue 42: one element with 30 000 attributes, 330 KB (300 000 took minutes).
        Reproducer {
            target: "hwloc_xml",
            name: "issue42-30000-attributes-on-one-element",
            bytes: wide_element(30_000).into_bytes(),
        },
        Reproducer {
            target: "hwloc_xml",
            name: "issue42-65-attributes-on-one-element",
            bytes: wide_element(65).into_bytes(),
        },
        // Issue 42: a capture without its end marker, and one cut half-way, on a header.
        Reproducer {
            target: "capture",
            name: "issue42-tar-without-end-marker",
            bytes: {
                let whole = small_capture();
                whole[..whole.len() - 1024].to_vec()
            },
        },
        Reproducer {
            target: "capture",
            name: "issue42-tar-cut-on-a-block-boundary",
            bytes: {
                let whole = small_capture();
                whole[..(whole.len() / 2) & !511].to_vec()
            },
        },
    ]
}

/// An hwloc XML file whose one `object` element has `n` attributes.
fn wide_element(n: usize) -> String {
    let attrs: String = (0..n).map(|i| format!(" a{i}=\"1\"")).collect();
    format!(
        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"{attrs}/>\n</topology>\n"
    )
}

/// A plain tar capture of a one-CPU machine (`m/sys/...`), ending with its end marker.
fn small_capture() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    b.mode(tar::HeaderMode::Deterministic);
    let files = [
        ("m/sys/devices/system/cpu/online", "0\n"),
        (
            "m/sys/devices/system/cpu/cpu0/topology/physical_package_id",
            "0\n",
        ),
        ("m/sys/devices/system/cpu/cpu0/topology/core_id", "0\n"),
        (
            "m/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
            "0\n",
        ),
        (
            "m/sys/devices/system/cpu/cpu0/topology/core_cpus_list",
            "0\n",
        ),
        (
            "m/sys/devices/system/cpu/cpu0/topology/package_cpus_list",
            "0\n",
        ),
        ("m/sys/devices/system/node/node0/cpulist", "0\n"),
        (
            "m/proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Test CPU\n\n",
        ),
    ];
    for (path, text) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, text.as_bytes())
            .expect("a tar entry");
    }
    b.into_inner().expect("a tar archive")
}

/// The regression file of a reproducer.
fn path(r: &Reproducer) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(r.target)
        .join(r.name)
}

#[test]
fn reproducers_are_in_the_regressions() {
    for r in reproducers() {
        let p = path(&r);
        let found = std::fs::read(&p).unwrap_or_default();
        assert!(
            found == r.bytes,
            "{} differs from its reproducer: write it with `cargo test -p topoprobe-fuzz \
             -- --ignored write_reproducers`",
            p.display()
        );
    }
}

#[test]
fn reproducers_stand_for_what_they_are_named() {
    let by_name = |name: &str| {
        reproducers()
            .into_iter()
            .find(|r| r.name == name)
            .expect("a reproducer")
            .bytes
    };
    let g = json_gen::generate(&by_name("row2-os-id-4294967295"));
    assert!(g.text.contains("\"os_id\":4294967295"));
    let g = json_gen::generate(&by_name("row2-node-os-id-1024"));
    assert!(g.text.contains("\"os_id\":1024}"));
    let g = json_gen::generate(&by_name("row3-latency-row-8M"));
    assert!(g.text.contains("[null,1,1,1,1,"));
    assert!(g.text.len() > 16_000_000 && g.excess > 16_000_000);
    let g = json_gen::generate(&by_name("row3-latency-rows-5M"));
    assert!(g.text.contains("[],[],[],"));
    assert!(g.text.len() > 16_000_000 && g.excess > 16_000_000);
    let g = json_gen::generate(&by_name("first-row-4096"));
    let first_row = g.text.split("\"raw\":[[").nth(1).expect("a raw table");
    let first_row = first_row.split(']').next().expect("a row");
    assert_eq!(first_row.split(',').count(), 4096);
    let g = args_gen::generate(&by_name("row4-cpus-0-1048575-x1000"));
    assert_eq!(g.text.len(), 9999);
    assert_eq!(g.naive_work, 1000 << 20);
    let g = json_gen::generate(&by_name("memory-node-4294967295"));
    assert!(g.text.contains("\"node\":4294967295"));
    let g = args_gen::generate(&by_name("cpus-0-1048575-x10000"));
    assert_eq!(g.text.len(), 99_999);
    let x = String::from_utf8(by_name("issue42-30000-attributes-on-one-element")).unwrap();
    assert_eq!(x.matches("=\"").count(), 30_000 + 3);
    let whole = small_capture();
    assert_eq!(whole.len() % 512, 0);
    for name in [
        "issue42-tar-without-end-marker",
        "issue42-tar-cut-on-a-block-boundary",
    ] {
        let cut = by_name(name);
        assert!(cut.len() % 512 == 0 && cut.len() < whole.len(), "{name}");
    }
    let g = args_gen::generate(&by_name("cpus-0-1048575-every-other-x1000"));
    assert!(g.text.starts_with("0-1048575:1/2,0-1048575:1/2,"));
    assert_eq!(g.naive_work, 1000 << 20);
}

/// Writes the reproducers into `regressions/`.
#[test]
#[ignore = "writes fuzz/regressions"]
fn write_reproducers() {
    for r in reproducers() {
        std::fs::write(path(&r), &r.bytes).expect("writing a regression");
    }
}
