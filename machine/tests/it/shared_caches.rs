//! Shared-cache detection on simulated machines, from the walks to the description's
//! differences from the OS.

use std::convert::Infallible;

use topoprobe_infer::compare::compare_with_os;
use topoprobe_infer::infer;
use topoprobe_infer::sim::platforms;
use topoprobe_measure::cache::shared::{measure_section_with, LevelSpec, SharingOptions};
use topoprobe_model::{
    CacheLevel, CacheSection, CacheType, ContextId, Origin, OsCache, OsCpu, OsDifference, OsView,
    SharingOutcome, StructureLevel, Topology,
};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The 16-vCPU Xeon guest as latency showed it: one socket of 16 cores, no groups.
fn flat16() -> Topology {
    let spec = platforms::flat_mesh(16);
    infer(&spec.matrix(), &spec.infer_options()).unwrap()
}

/// Its OS view: 16 CPUs of one package, L1d and L2 per CPU, one 300 MiB L3 for all.
fn os16() -> OsView {
    let cpus = (0..16u32)
        .map(|id| OsCpu {
            id,
            package: 0,
            die: Some(0),
            core: i64::from(id),
            cluster: None,
            thread_siblings: vec![id],
            core_siblings: (0..16).collect(),
            node: Some(0),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        })
        .collect();
    let cache = |level: u8, kind, size: u64, cpus: Vec<u32>| OsCache {
        level,
        kind,
        size_bytes: Some(size),
        line_size: Some(64),
        ways: None,
        cpus,
    };
    let mut caches = Vec::new();
    for c in 0..16 {
        caches.push(cache(1, CacheType::Data, 48 * KIB, vec![c]));
        caches.push(cache(2, CacheType::Unified, 2 * MIB, vec![c]));
    }
    caches.push(cache(3, CacheType::Unified, 300 * MIB, (0..16).collect()));
    OsView {
        cpus,
        caches,
        ..OsView::default()
    }
}

/// The cache section `cache` gave there: every level's size as the OS's.
fn section() -> CacheSection {
    let level = |n: u32, kind, kib: u64| CacheLevel {
        os_size_kib: Some(kib),
        measured_size_kib: Some(kib),
        ..CacheLevel::new(n, Some(kind))
    };
    CacheSection {
        levels: vec![
            CacheLevel {
                os_size_kib: Some(32),
                ..CacheLevel::new(1, Some(CacheType::Instruction))
            },
            level(1, CacheType::Data, 48),
            level(2, CacheType::Unified, 2048),
            level(3, CacheType::Unified, 300 * 1024),
        ],
        tlb: Vec::new(),
    }
}

/// A simulated walk: each level holds `capacity(level)` bytes per instance, and
/// `shared(level)` says whether the 16 contexts share one instance; a walk that does not
/// fit misses in proportion (thrash-resistant replacement), a miss costing 4× a hit.
fn walk(
    capacity: impl Fn(&LevelSpec) -> u64,
    shared: impl Fn(&LevelSpec) -> bool,
) -> impl FnMut(&LevelSpec, &[ContextId], u64) -> Result<f64, Infallible> {
    move |spec, ctxs, bytes| {
        let per_instance = if shared(spec) { ctxs.len() as u64 } else { 1 };
        let load = per_instance * bytes;
        let cap = capacity(spec);
        let missed = if load <= cap {
            0.0
        } else {
            1.0 - cap as f64 / load as f64
        };
        Ok(10.0 * (1.0 + 3.0 * missed))
    }
}

/// Runs the test on every level, stores the section, compares with the OS.
fn measure(
    topo: &mut Topology,
    os: &OsView,
    walk: impl FnMut(&LevelSpec, &[ContextId], u64) -> Result<f64, Infallible>,
) -> (Vec<Option<String>>, Vec<OsDifference>) {
    let mut s = section();
    let found =
        measure_section_with(topo, Some(os), &mut s, &SharingOptions::default(), walk).unwrap();
    topo.set_caches(Some(s));
    let warnings = found.into_iter().map(|(_, f)| f.warning).collect();
    (warnings, compare_with_os(topo, os))
}

fn cache_diffs(diffs: &[OsDifference]) -> Vec<&OsDifference> {
    diffs
        .iter()
        .filter(|d| d.level == StructureLevel::Cache)
        .collect()
}

fn level(topo: &Topology, n: u32) -> &CacheLevel {
    topo.caches()
        .unwrap()
        .levels
        .iter()
        .find(|l| l.level == n && l.kind != Some(CacheType::Instruction))
        .unwrap()
}

#[test]
fn an_l3_shared_by_all_sixteen_contexts_is_found_and_agrees_with_the_os() {
    let mut topo = flat16();
    let os = os16();
    // The guest keeps 128 MiB of the 300 MiB L3; the private levels hold what the OS says.
    let (warnings, diffs) = measure(
        &mut topo,
        &os,
        walk(
            |s| s.reach_bytes.map_or(0, |r| r.min(128 * MIB)),
            |s| s.name == "L3",
        ),
    );
    assert!(warnings.iter().all(Option::is_none), "{warnings:?}");
    assert!(cache_diffs(&diffs).is_empty(), "{diffs:?}");
    let l3 = level(&topo, 3);
    assert_eq!(l3.shared_by, [(0..16).map(ContextId).collect::<Vec<_>>()]);
    let t = l3.sharing.as_ref().unwrap();
    assert_eq!(t.outcome, SharingOutcome::Decided);
    assert_eq!(t.source, Some(Origin::Measured));
    // Per-core private levels agree with the OS: no difference either.
    assert_eq!(level(&topo, 1).shared_by.len(), 16);
    assert_eq!(level(&topo, 2).shared_by.len(), 16);
    // The instruction cache is not walked.
    assert!(topo.caches().unwrap().levels[0].sharing.is_none());
}

#[test]
fn a_private_l3_where_the_os_lists_a_shared_one_is_an_os_difference() {
    let mut topo = flat16();
    let os = os16();
    // The walks find every vCPU with an L3 of its own (on different dies of the host).
    let (_, diffs) = measure(
        &mut topo,
        &os,
        walk(|s| s.reach_bytes.map_or(0, |r| r.min(128 * MIB)), |_| false),
    );
    let l3 = level(&topo, 3);
    assert_eq!(l3.shared_by.len(), 16, "the measurement is recorded");
    let d = cache_diffs(&diffs);
    assert_eq!(d.len(), 1, "{diffs:?}");
    assert!(
        d[0].message.contains("the OS lists one L3"),
        "{}",
        d[0].message
    );
    assert!(d[0].message.contains("CPUs 0 and 1"), "{}", d[0].message);
    assert!(d[0].rerun.contains("topoprobe cache --shared"));
    // Written out and read back, the description keeps the record and the difference.
    topo.set_os_differences(diffs.clone());
    let text = topoprobe_model::format::json::to_json_string(&topo);
    let back = topoprobe_model::format::json::from_json_str(&text, std::path::Path::new("d.json"))
        .unwrap();
    // (figures keep 10 significant digits: what is read back writes the same text)
    assert_eq!(topoprobe_model::format::json::to_json_string(&back), text);
    assert_eq!(
        back.caches().map(|c| c.levels.len()),
        topo.caches().map(|c| c.levels.len())
    );
    assert_eq!(back.validation().os_differences, diffs);
}

#[test]
fn undecided_walks_keep_the_os_sharing_with_a_warning() {
    let mut topo = flat16();
    let os = os16();
    // Every walk costs the same: no size tells a shared L3 from private ones.
    let mut private = walk(|s| s.reach_bytes.unwrap_or(0), |_| false);
    let (warnings, diffs) = measure(&mut topo, &os, |spec, ctxs, bytes| {
        if spec.name == "L3" {
            Ok(50.0)
        } else {
            private(spec, ctxs, bytes)
        }
    });
    let l3 = level(&topo, 3);
    assert_eq!(l3.shared_by, [(0..16).map(ContextId).collect::<Vec<_>>()]);
    let t = l3.sharing.as_ref().unwrap();
    assert_eq!(t.outcome, SharingOutcome::Inconclusive);
    assert_eq!(t.source, Some(Origin::Os));
    assert!(
        cache_diffs(&diffs).is_empty(),
        "kept from the OS: {diffs:?}"
    );
    let w: Vec<&String> = warnings.iter().flatten().collect();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("L3: the shared-cache test is inconclusive"),
        "{}",
        w[0]
    );
}

#[test]
fn a_level_over_the_budget_is_unavailable_and_keeps_the_os_sharing() {
    let mut topo = flat16();
    let os = os16();
    let mut s = section();
    s.levels[3].measured_size_kib = Some(1100 * 1024);
    let opts = SharingOptions {
        max_bytes: 256 * MIB,
        ..SharingOptions::default()
    };
    let found = measure_section_with(&topo, Some(&os), &mut s, &opts, |spec, _, _| {
        assert_ne!(spec.name, "L3", "the L3 is not walked");
        Ok::<f64, Infallible>(10.0)
    })
    .unwrap();
    let l3 = &found[2].1;
    assert_eq!(l3.test.outcome, SharingOutcome::Unavailable);
    assert!(l3
        .warning
        .as_ref()
        .unwrap()
        .contains("unavailable: two arrays of"));
    topo.set_caches(Some(s));
    assert_eq!(level(&topo, 3).shared_by.len(), 1);
    assert!(cache_diffs(&compare_with_os(&topo, &os)).is_empty());
}

#[test]
fn levels_that_contradict_each_other_keep_the_os_sharing() {
    // The host moved the vCPUs between the tests: CPUs 0 and 1 shared an L1d (SMT
    // siblings of the host) but not the L2 and L3 that hold it.
    let mut topo = flat16();
    let os = os16();
    let (warnings, diffs) = measure(
        &mut topo,
        &os,
        walk(
            |s| s.reach_bytes.map_or(0, |r| r.min(128 * MIB)),
            |s| s.name == "L1d",
        ),
    );
    for n in [1, 2, 3] {
        let t = level(&topo, n).sharing.as_ref().unwrap();
        assert_eq!(t.outcome, SharingOutcome::Inconclusive, "L{n}");
        assert_eq!(t.source, Some(Origin::Os));
    }
    assert_eq!(level(&topo, 1).shared_by.len(), 16);
    assert_eq!(level(&topo, 3).shared_by.len(), 1);
    let w: Vec<&String> = warnings.iter().flatten().collect();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[0].contains("moved a vCPU"), "{}", w[0]);
    assert!(cache_diffs(&diffs).is_empty(), "{diffs:?}");
}
