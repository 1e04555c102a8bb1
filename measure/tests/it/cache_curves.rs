//! The cache analysis on curves measured on real machines (`tests/data/cache-curves/`):
//!
//! - `amd-zen3-vm-*.tsv`: an AMD EPYC Milan (Zen 3) KVM guest, OS caches L1d 32 KiB, L2
//!   512 KiB, L3 32 MiB: the random cyclic walk on 4 KiB pages (`rand`) and on huge pages
//!   (`randhuge`), and the stride walk the prefetchers follow (`seq`);
//! - `amd-zen4-vm-run*.tsv`: `topoprobe cache --curve` on an AMD EPYC Genoa (Zen 4) KVM guest
//!   (family 25 model 17), OS caches L1d 32 KiB, L2 1 MiB, L3 32 MiB: huge pages in the
//!   second column, 4 KiB pages in the third, three runs on a busy shared host.

use std::path::Path;

use topoprobe_measure::cache::{analyse, curve, HugePages, Sample};
use topoprobe_model::results::cache::CacheAgreement;
use topoprobe_model::{CacheType, OsCache, OsView};

/// Column `col` (1 or 2 after the size) of a curve file.
fn load(name: &str, col: usize) -> Vec<Sample> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cache-curves")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("size"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Sample {
                bytes: f[0].parse().expect("size"),
                ns: f[col].parse().expect("ns"),
            }
        })
        .collect()
}

fn os(l2: u64) -> OsView {
    let cache = |level, kind, size: u64| OsCache {
        level,
        kind,
        size_bytes: Some(size),
        line_size: Some(64),
        ways: None,
        cpus: vec![0],
    };
    OsView {
        caches: vec![
            cache(1, CacheType::Data, 32 << 10),
            cache(1, CacheType::Instruction, 32 << 10),
            cache(2, CacheType::Unified, l2),
            cache(3, CacheType::Unified, 32 << 20),
        ],
        ..OsView::default()
    }
}

const GRANTED: HugePages = HugePages::Granted { fraction: 1.0 };

/// Measured sizes of L1d, L2 and L3, in KiB.
fn measured(
    os: &OsView,
    main: &[Sample],
    small: Option<&[Sample]>,
    huge: &HugePages,
) -> Vec<Option<u64>> {
    let a = analyse(Some(os), 0, main, small, huge, None);
    a.checked
        .section
        .levels
        .iter()
        .filter(|l| l.kind != Some(CacheType::Instruction))
        .map(|l| l.measured_size_kib)
        .collect()
}

#[test]
fn the_zen3_random_curves_give_l1d_32_kib_and_l2_512_kib_by_themselves() {
    for (file, col) in [("amd-zen3-vm-rand.tsv", 1), ("amd-zen3-vm-randhuge.tsv", 1)] {
        let found = curve::levels(&load(file, col));
        let sizes: Vec<u64> = found.iter().map(|f| f.bytes >> 10).collect();
        assert!(sizes.len() >= 3, "{file}: {found:?}");
        assert_eq!(&sizes[..2], &[32, 512], "{file}: {found:?}");
        // Latencies: L1 ~1.5 ns, L2 ~4.5 ns.
        assert!((found[0].hit_ns - 1.5).abs() < 0.2, "{found:?}");
        assert!((found[1].hit_ns - 4.6).abs() < 0.5, "{found:?}");
        // The last level the walk finds is smaller than the OS's 32 MiB: this guest shares
        // the CCD's L3 with the host's other guests.
        assert!(sizes[2] < 32 << 10, "{found:?}");
    }
}

#[test]
fn the_zen3_curves_checked_against_the_os() {
    let huge = load("amd-zen3-vm-randhuge.tsv", 1);
    let small = load("amd-zen3-vm-rand.tsv", 1);
    let os = os(512 << 10);
    let a = analyse(Some(&os), 0, &huge, Some(&small), &GRANTED, Some(3.0));
    let m: Vec<Option<u64>> = a
        .checked
        .section
        .levels
        .iter()
        .map(|l| l.measured_size_kib)
        .collect();
    assert_eq!(&m[..3], &[None, Some(32), Some(512)], "{:?}", a.checked);
    let l3 = &a.checked.checks[3];
    assert_eq!(l3.agreement, CacheAgreement::Differs, "{:?}", a.checked);
    assert!(m[3].is_some_and(|k| k < 32 << 10));
    assert!(
        a.checked
            .notes
            .iter()
            .any(|n| n.starts_with("L3: measured")),
        "{:?}",
        a.checked.notes
    );
    // Latency in ns and cycles.
    let l1 = &a.checked.section.levels[1];
    assert!(l1.latency.is_some_and(|ns| ns > 1.0 && ns < 2.0));
    assert_eq!(l1.cycles, l1.latency.map(|ns| ns * 3.0));
    // The 4 KiB-page walk parts from the huge-page walk at the second-level TLB's reach
    // (Zen 3: 2048 entries of 4 KiB, 8 MiB).
    assert_eq!(a.tlb.len(), 1, "{:?}", a.tlb);
    let t = a.tlb[0];
    assert!(
        t.reach_bytes >= 6 << 20 && t.missed_bytes <= 9 << 20,
        "{t:?}"
    );
    assert_eq!(a.checked.section.tlb.len(), 1);
    // Only the small pages: the TLB step shows as a rise, said but not made a cache.
    let a = analyse(
        Some(&os),
        0,
        &small,
        None,
        &HugePages::Unavailable("test".into()),
        None,
    );
    assert_eq!(a.checked.section.levels.len(), 4);
    let m: Vec<Option<u64>> = a
        .checked
        .section
        .levels
        .iter()
        .map(|l| l.measured_size_kib)
        .collect();
    assert_eq!(&m[..3], &[None, Some(32), Some(512)], "{:?}", a.checked);
}

#[test]
fn a_wrong_os_size_is_a_disagreement() {
    // The Zen 3 curves against an OS that claimed half or four times its 512 KiB L2.
    for file in ["amd-zen3-vm-rand.tsv", "amd-zen3-vm-randhuge.tsv"] {
        for (claim, text) in [(256u64 << 10, "256 KiB"), (2 << 20, "2 MiB")] {
            let a = analyse(Some(&os(claim)), 0, &load(file, 1), None, &GRANTED, None);
            assert_eq!(
                a.checked.checks[2].agreement,
                CacheAgreement::Differs,
                "{file} {text}: {:?}",
                a.checked
            );
            assert_eq!(a.checked.section.levels[2].measured_size_kib, Some(512));
            let start = format!("L2: measured 512 KiB where the OS lists {text}");
            assert!(
                a.checked.notes.iter().any(|n| n.starts_with(&start)),
                "{:?}",
                a.checked.notes
            );
        }
    }
}

#[test]
fn the_zen4_curves_give_the_os_l1d_and_l2_and_a_smaller_l3() {
    let os = os(1 << 20);
    for run in 1..=3 {
        let file = format!("amd-zen4-vm-run{run}.tsv");
        let huge = load(&file, 1);
        let small = load(&file, 2);
        for (main, small, pages) in [
            (&huge, Some(&small[..]), GRANTED),
            (&small, None, HugePages::Unavailable("test".into())),
        ] {
            let m = measured(&os, main, small, &pages);
            assert_eq!(&m[..2], &[Some(32), Some(1024)], "{file}: {m:?}");
            assert!(m[2].is_some_and(|k| k <= 32 << 10), "{file}: {m:?}");
        }
    }
}

#[test]
fn the_stride_walk_hides_the_levels() {
    // What the prefetchers do to Servet's ascending walk on Zen 3: no L2 step at all, so
    // nothing is found where the random walk finds L2.
    let found = curve::levels(&load("amd-zen3-vm-seq.tsv", 1));
    assert!(!found.iter().any(|f| f.bytes == 512 << 10), "{found:?}");
}
