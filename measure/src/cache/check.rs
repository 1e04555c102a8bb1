//! The measured levels set beside the OS's: which rise of the curve is which OS level,
//! whether the OS's size explains the rise, and what to say when it does not.
//!
//! Rises are matched to the OS's data and unified levels in order, by size (an alignment
//! that may leave a rise or an OS level unmatched). A matched OS size that explains its rise
//! ([`FoundLevel::explained_by`]: the misses begin by 1.5 × the size and are not half-way
//! before 0.75 × it) is the measured size; the curve alone cannot tell it from a neighbour
//! that explains the rise as well (Servet's probabilistic fit is kept in the check). A size
//! that does not explain its rise is a disagreement, said with the access times around it
//! and the likely reason. A rise no OS level explains is reported as such, never made a
//! cache level of its own while the OS lists caches (on 4 KiB pages it is often the TLB's
//! reach).

use topoprobe_model::results::cache::CacheAgreement;
use topoprobe_model::{CacheLevel, CacheSection, CacheType, OsView, TlbReach as ModelTlb};

use super::curve::{FoundLevel, Sample};
use super::tlb::TlbReach;
use super::HugePages;

/// One level of the section and how it was checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelCheck {
    /// Level number.
    pub level: u32,
    /// Its kind.
    pub kind: CacheType,
    /// The rise of the curve matched to it, when there is one.
    pub found: Option<FoundLevel>,
    /// How it compares with the OS.
    pub agreement: CacheAgreement,
}

/// What [`section`] concludes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checked {
    /// The section for the description.
    pub section: CacheSection,
    /// One check per level of the section, in its order.
    pub checks: Vec<LevelCheck>,
    /// Remarks for the user: every disagreement, unexplained rise and TLB reach.
    pub notes: Vec<String>,
}

/// Octaves between two sizes.
fn octaves(a: u64, b: u64) -> f64 {
    (a.max(1) as f64 / b.max(1) as f64).log2().abs()
}

/// Cost of leaving a rise or an OS level unmatched, in octaves.
const SKIP: f64 = 2.0;
/// Farthest a rise may be from the OS level it is matched to, in octaves.
const FARTHEST: f64 = 4.0;

/// Cost of matching a rise to an OS size (`None`: not allowed).
fn match_cost(f: &FoundLevel, os_bytes: u64) -> Option<f64> {
    if f.explained_by(os_bytes) {
        return Some(0.0);
    }
    let d = octaves(f.bytes, os_bytes);
    (d <= FARTHEST).then_some(d)
}

/// Matches rises (sorted by size) to OS sizes (sorted by level) in order; returns, for each
/// OS size, the index of its rise.
fn align(found: &[FoundLevel], os: &[u64]) -> Vec<Option<usize>> {
    let (n, m) = (found.len(), os.len());
    let mut cost = vec![vec![f64::INFINITY; m + 1]; n + 1];
    cost[0][0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            let here = cost[i][j];
            if !here.is_finite() {
                continue;
            }
            if i < n {
                cost[i + 1][j] = cost[i + 1][j].min(here + SKIP);
            }
            if j < m {
                cost[i][j + 1] = cost[i][j + 1].min(here + SKIP);
            }
            if i < n && j < m {
                if let Some(c) = match_cost(&found[i], os[j]) {
                    cost[i + 1][j + 1] = cost[i + 1][j + 1].min(here + c);
                }
            }
        }
    }
    // Walk back.
    let mut out = vec![None; m];
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        let here = cost[i][j];
        if i > 0 && j > 0 {
            if let Some(c) = match_cost(&found[i - 1], os[j - 1]) {
                if (cost[i - 1][j - 1] + c - here).abs() < 1e-9 {
                    out[j - 1] = Some(i - 1);
                    i -= 1;
                    j -= 1;
                    continue;
                }
            }
        }
        if i > 0 && (cost[i - 1][j] + SKIP - here).abs() < 1e-9 {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out
}

pub use topoprobe_model::size_text;

/// The access times of the curve at the powers of two between `lo` and `hi` (the nearest
/// size walked): the data behind a disagreement.
fn data_between(curve: &[Sample], lo: u64, hi: u64) -> String {
    let mut parts = Vec::new();
    let mut p = lo.max(1).next_power_of_two();
    while p <= hi {
        let nearest = curve.iter().min_by(|a, b| {
            octaves(a.bytes, p)
                .total_cmp(&octaves(b.bytes, p))
                .then(a.bytes.cmp(&b.bytes))
        });
        if let Some(s) = nearest {
            parts.push(format!("{} {:.1} ns", size_text(s.bytes), s.ns));
        }
        p = p.saturating_mul(2);
        if p == 0 {
            break;
        }
    }
    parts.join(", ")
}

/// Why a matched rise does not fit the OS's size, with the data.
fn disagreement(name: &str, f: &FoundLevel, os_bytes: u64, last: bool, curve: &[Sample]) -> String {
    let data = data_between(
        curve,
        (f.onset_bytes / 2).min(os_bytes / 2),
        f.half_bytes.max(os_bytes) * 2,
    );
    let shape = format!(
        "the curve rises from {:.1} to {:.1} ns, misses beginning at {} and half-way at {}",
        f.hit_ns,
        f.miss_ns,
        size_text(f.onset_bytes),
        size_text(f.half_bytes)
    );
    let why = if f.half_bytes < os_bytes {
        if last {
            "this context keeps only part of the last level: it is shared with the other cores \
             that use it and, in a virtual machine, with the host's other guests, whose lines \
             take their share"
        } else {
            "a level shared with another context that was busy, or ways the hardware holds \
             back"
        }
    } else {
        "the misses begin after the OS's size: a larger level behind it (a victim cache), or a \
         prefetcher the random order does not defeat"
    };
    format!(
        "{name}: measured {} where the OS lists {}: {shape} ({data}); {why}",
        size_text(f.bytes),
        size_text(os_bytes)
    )
}

/// Sets the found levels beside the OS's caches of `cpu` and says where they disagree;
/// `curve` is the curve they come from (its access times back the notes), `tlb` the TLB
/// reaches found beside it, `huge` how its pages came out, `ghz` the timer's cycles per ns.
#[must_use]
pub fn section(
    os: Option<&OsView>,
    cpu: u32,
    curve: &[Sample],
    found: &[FoundLevel],
    tlb: &[TlbReach],
    huge: &HugePages,
    ghz: Option<f64>,
) -> Checked {
    let mut notes = Vec::new();
    let mut os_caches: Vec<_> = os
        .map(|v| {
            v.caches
                .iter()
                .filter(|c| c.cpus.contains(&cpu))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    os_caches.sort_by_key(|c| (c.level, c.kind != CacheType::Instruction));
    let data: Vec<usize> = os_caches
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind != CacheType::Instruction && c.size_bytes.is_some())
        .map(|(i, _)| i)
        .collect();
    let sizes: Vec<u64> = data
        .iter()
        .filter_map(|&i| os_caches[i].size_bytes)
        .collect();
    let matched = align(found, &sizes);
    let last_data = data.last().copied();
    let mut levels = Vec::new();
    let mut checks = Vec::new();
    let set_latency = |l: &mut CacheLevel, f: &FoundLevel| {
        l.latency = Some(f.latency_ns);
        l.cycles = ghz.map(|g| f.latency_ns * g);
    };
    for (i, c) in os_caches.iter().enumerate() {
        let mut level = CacheLevel::new(u32::from(c.level), Some(c.kind));
        level.os_size_kib = c.size_bytes.map(|b| b / 1024);
        level.line_bytes = c.line_size;
        level.ways = c.ways;
        let name = level.name();
        let slot = data.iter().position(|&d| d == i);
        let f = slot.and_then(|s| matched[s]).map(|k| found[k]);
        let agreement = match (c.kind, c.size_bytes, f) {
            (CacheType::Instruction, ..) => CacheAgreement::OsOnly,
            (_, None, _) => CacheAgreement::OsOnly,
            (_, Some(os_bytes), Some(f)) => {
                set_latency(&mut level, &f);
                if f.explained_by(os_bytes) {
                    level.measured_size_kib = Some(os_bytes / 1024);
                    if f.bytes == os_bytes {
                        CacheAgreement::Agrees
                    } else {
                        CacheAgreement::Explains
                    }
                } else {
                    level.measured_size_kib = Some(f.bytes / 1024);
                    notes.push(disagreement(
                        &name,
                        &f,
                        os_bytes,
                        Some(i) == last_data,
                        curve,
                    ));
                    CacheAgreement::Differs
                }
            }
            (_, Some(os_bytes), None) => {
                let top = curve.last().map_or(0, |s| s.bytes);
                let mut note = format!(
                    "{name} ({}) is listed by the OS but shows no rise in the curve",
                    size_text(os_bytes)
                );
                if top < os_bytes.saturating_mul(2) {
                    note.push_str(&format!(
                        " (the walk stops at {}; a larger --max-size walks past it)",
                        size_text(top)
                    ));
                }
                notes.push(note);
                CacheAgreement::NotSeen
            }
        };
        checks.push(LevelCheck {
            level: level.level,
            kind: c.kind,
            found: f,
            agreement,
        });
        levels.push(level);
    }
    // Rises no OS level explains.
    let used: Vec<usize> = matched.iter().flatten().copied().collect();
    let mut number = 0u32;
    for (k, f) in found.iter().enumerate() {
        number += 1;
        if used.contains(&k) {
            continue;
        }
        if os.is_some() && !data.is_empty() {
            let mut note = format!(
                "a rise from {:.1} to {:.1} ns around {} that no cache the OS lists explains; it is not reported as a cache",
                f.hit_ns,
                f.miss_ns,
                size_text(f.bytes)
            );
            if !matches!(huge, HugePages::Granted { .. }) {
                note.push_str(&format!(
                    " (on 4 KiB pages it may be the TLB's reach: {} pages)",
                    f.bytes / 4096
                ));
            }
            notes.push(note);
        } else {
            let mut l = CacheLevel::new(number, Some(CacheType::Unified));
            l.measured_size_kib = Some(f.bytes / 1024);
            set_latency(&mut l, f);
            checks.push(LevelCheck {
                level: number,
                kind: CacheType::Unified,
                found: Some(*f),
                agreement: CacheAgreement::Unlisted,
            });
            levels.push(l);
        }
    }
    if os.is_none() {
        notes.push("the OS view is unavailable: levels are numbered in the order found".into());
    } else if data.is_empty() && !found.is_empty() {
        notes.push(
            "the OS lists no data cache for this CPU: levels are numbered in the order found"
                .into(),
        );
    }
    let without = if huge.granted() {
        "TLB misses may remain in the curve"
    } else {
        "TLB misses and cache capacity are not told apart, and a rise at a TLB's reach can look like a level"
    };
    notes.extend(huge.note("array", without));
    for t in tlb {
        notes.push(format!(
            "TLB: on 4 KiB pages the walk costs more than on huge pages from {} on (+{:.1} ns per access): the TLB's reach with 4 KiB pages is about {} ({} entries); not a cache",
            size_text(t.missed_bytes),
            t.extra_ns,
            size_text(t.reach_bytes),
            t.entries()
        ));
    }
    let section = CacheSection {
        levels,
        tlb: tlb
            .iter()
            .map(|t| ModelTlb {
                page_kib: t.page_bytes / 1024,
                reach_kib: t.reach_bytes / 1024,
                extra_ns: t.extra_ns,
            })
            .collect(),
    };
    Checked {
        section,
        checks,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::super::curve::Method;
    use super::*;

    fn cache(level: u8, kind: CacheType, size: u64) -> topoprobe_model::OsCache {
        topoprobe_model::OsCache {
            level,
            kind,
            size_bytes: Some(size),
            line_size: Some(64),
            ways: None,
            cpus: vec![0, 1],
        }
    }

    #[test]
    fn sizes_read_well_and_never_as_zero() {
        assert_eq!(size_text(1), "1 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1024), "1 KiB");
        assert_eq!(size_text(512 << 10), "512 KiB");
        assert_eq!(size_text(3 << 19), "1.5 MiB");
    }

    fn os() -> OsView {
        OsView {
            caches: vec![
                cache(1, CacheType::Data, 32 << 10),
                cache(1, CacheType::Instruction, 32 << 10),
                cache(2, CacheType::Unified, 1 << 20),
                cache(3, CacheType::Unified, 32 << 20),
            ],
            ..OsView::default()
        }
    }

    fn rise(bytes: u64, onset: u64, half: u64, hit: f64) -> FoundLevel {
        FoundLevel {
            bytes,
            latency_ns: hit,
            hit_ns: hit,
            miss_ns: hit * 3.0,
            method: Method::Probabilistic,
            onset_bytes: onset,
            half_bytes: half,
            full_bytes: half + half / 2,
        }
    }

    #[test]
    fn sizes_the_os_explains_are_taken_and_others_said() {
        let found = [
            rise(32 << 10, 30 << 10, 33 << 10, 1.4),
            // Fit 2 MiB, but misses begin at 1.3 MiB: a 1 MiB cache explains it.
            rise(2 << 20, 1300 << 10, 2200 << 10, 5.8),
            // Half-way at 15 MiB: 32 MiB does not explain it.
            rise(16 << 20, 13 << 20, 15 << 20, 18.0),
        ];
        let c = section(
            Some(&os()),
            0,
            &[],
            &found,
            &[],
            &HugePages::Granted { fraction: 1.0 },
            Some(2.5),
        );
        let names: Vec<String> = c.section.levels.iter().map(CacheLevel::name).collect();
        assert_eq!(names, ["L1i", "L1d", "L2", "L3"]);
        let measured: Vec<Option<u64>> = c
            .section
            .levels
            .iter()
            .map(|l| l.measured_size_kib)
            .collect();
        assert_eq!(measured, [None, Some(32), Some(1024), Some(16384)]);
        let agreements: Vec<CacheAgreement> = c.checks.iter().map(|k| k.agreement).collect();
        assert_eq!(
            agreements,
            [
                CacheAgreement::OsOnly,
                CacheAgreement::Agrees,
                CacheAgreement::Explains,
                CacheAgreement::Differs
            ]
        );
        assert_eq!(c.section.levels[1].cycles, Some(1.4 * 2.5));
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
        assert!(
            c.notes[0].starts_with("L3: measured 16 MiB where the OS lists 32 MiB"),
            "{}",
            c.notes[0]
        );
        assert!(c.notes[0].contains("shared"), "{}", c.notes[0]);
    }

    #[test]
    fn a_rise_no_os_level_explains_is_not_a_cache() {
        // L1, L2, then a TLB step at 8 MiB on 4 KiB pages, then the L3's end at 24 MiB.
        let found = [
            rise(32 << 10, 30 << 10, 33 << 10, 1.4),
            rise(1 << 20, 1 << 20, 2 << 20, 5.0),
            rise(8 << 20, 7 << 20, 9 << 20, 16.0),
            rise(24 << 20, 20 << 20, 26 << 20, 40.0),
        ];
        let c = section(
            Some(&os()),
            0,
            &[],
            &found,
            &[],
            &HugePages::Unavailable("off".into()),
            None,
        );
        assert_eq!(c.section.levels.len(), 4);
        assert_eq!(c.section.levels[3].measured_size_kib, Some(32 << 10));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("around 8 MiB") && n.contains("TLB's reach: 2048 pages")),
            "{:?}",
            c.notes
        );
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("huge pages were not used (off)")));
    }

    #[test]
    fn levels_the_curve_lacks_are_said_and_no_os_view_numbers_them() {
        let found = [rise(48 << 10, 46 << 10, 50 << 10, 1.6)];
        let c = section(
            Some(&os()),
            0,
            &[],
            &found,
            &[],
            &HugePages::Granted { fraction: 1.0 },
            None,
        );
        let not_seen: Vec<&LevelCheck> = c
            .checks
            .iter()
            .filter(|k| k.agreement == CacheAgreement::NotSeen)
            .collect();
        assert_eq!(not_seen.len(), 2, "{:?}", c.checks);
        assert!(c
            .notes
            .iter()
            .any(|n| n.starts_with("L2 (1 MiB) is listed")));
        // 48 KiB is not explained by a 32 KiB L1: said, and measured as 48 KiB.
        assert_eq!(c.section.levels[1].measured_size_kib, Some(48));
        let c = section(
            None,
            0,
            &[],
            &found,
            &[],
            &HugePages::Granted { fraction: 1.0 },
            None,
        );
        assert_eq!(c.section.levels.len(), 1);
        assert_eq!(c.section.levels[0].name(), "L1");
        assert!(c.notes.iter().any(|n| n.contains("OS view is unavailable")));
    }

    #[test]
    fn tlb_reach_is_reported_beside_the_levels() {
        let t = TlbReach {
            page_bytes: 4096,
            reach_bytes: 8 << 20,
            missed_bytes: 9 << 20,
            extra_ns: 24.0,
        };
        let c = section(
            Some(&os()),
            0,
            &[],
            &[],
            &[t],
            &HugePages::Granted { fraction: 1.0 },
            None,
        );
        assert_eq!(c.section.tlb.len(), 1);
        assert_eq!(c.section.tlb[0].reach_kib, 8192);
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("2048 entries") && n.contains("not a cache")));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size_text(512 << 10), "512 KiB");
        assert_eq!(size_text(1 << 20), "1 MiB");
        assert_eq!(size_text(1536 << 10), "1.5 MiB");
        let curve: Vec<Sample> = (10..30)
            .map(|k| Sample {
                bytes: 1 << k,
                ns: f64::from(k),
            })
            .collect();
        assert_eq!(
            data_between(&curve, 3 << 20, 9 << 20),
            "4 MiB 22.0 ns, 8 MiB 23.0 ns"
        );
    }
}
