use topoprobe_model::{LatencyMatrix, OsCpu, OsView};

use super::*;
use crate::{infer, InferOptions};

/// A machine as the OS lists it: `sockets` packages of `cores` cores of `threads`
/// contexts; CPU numbers run through the first context of every core, then the second
/// (Linux's numbering: siblings `c` and `c + sockets * cores`).
fn os_view(sockets: u32, cores: u32, threads: u32) -> OsView {
    let per_thread = sockets * cores;
    let n = per_thread * threads;
    let cpu = |id: u32| {
        let core = id % per_thread;
        let package = core / cores;
        OsCpu {
            id,
            package: i64::from(package),
            die: None,
            core: i64::from(core % cores),
            cluster: None,
            thread_siblings: (0..threads).map(|t| core + t * per_thread).collect(),
            core_siblings: (0..n)
                .filter(|c| (c % per_thread) / cores == package)
                .collect(),
            node: Some(package),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        }
    };
    OsView {
        cpus: (0..n).map(cpu).collect(),
        ..OsView::default()
    }
}

/// A deterministic value in `0..1` for a pair.
fn jitter(a: usize, b: usize) -> f64 {
    let (a, b) = (a.min(b) as u64, a.max(b) as u64);
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    (x % 10_000) as f64 / 10_000.0
}

fn measured(topo: &Topology) -> (usize, usize, bool) {
    (topo.num_sockets(), topo.num_cores(), topo.has_smt())
}

fn warning(topo: &Topology, kind: WarningKind) -> Option<&str> {
    topo.validation()
        .warnings
        .iter()
        .find(|w| w.kind == kind)
        .map(|w| w.message.as_str())
}

/// An emulated guest: 32 vCPUs time-sharing two CPUs answer 1.2 to 1.9 µs for every pair,
/// whatever the OS says (4 packages of 4 cores of 2 threads).
#[test]
fn an_emulated_guest_keeps_the_os_structure() {
    let os = os_view(4, 4, 2);
    let m = LatencyMatrix::from_fn(32, |a, b| (a != b).then(|| 1200.0 + 700.0 * jitter(a, b)));
    let opts = InferOptions {
        sockets: Some(4),
        sockets_origin: Origin::Os,
        ..InferOptions::default()
    };
    let inferred = infer(&m, &opts).unwrap();
    assert_ne!(measured(&inferred), (4, 16, true));
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (4, 16, true));
    let why = warning(&anchored, WarningKind::StructureFromOs).expect("flagged");
    assert!(why.contains("scheduler"), "{why}");
    // The measured latencies stay, attached to the OS's levels.
    assert_eq!(anchored.latency_tables().raw.get(0, 1), m.get(0, 1));
    assert!(!anchored.levels().is_empty());
    // Siblings 0 and 16 are one core.
    let ctx = |cpu: u32| {
        anchored
            .contexts()
            .iter()
            .find(|c| c.os_id == cpu)
            .unwrap()
            .core
    };
    assert_eq!(ctx(0), ctx(16));
    assert_ne!(ctx(0), ctx(1));
}

/// A flat table in the hardware's range (a guest whose two "packages" share one host
/// socket): pairs across the OS's packages at 60 ns cannot cross a chip-to-chip link, so
/// the one measured socket stands, quoted.
#[test]
fn packages_closer_than_a_link_are_one_socket() {
    let os = os_view(2, 8, 1);
    let m = LatencyMatrix::from_fn(16, |a, b| (a != b).then(|| 60.0 + 8.0 * jitter(a, b)));
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    assert_eq!(inferred.num_sockets(), 1);
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (1, 16, false));
    let quote = warning(&anchored, WarningKind::DiffersFromOs).expect("quoted");
    assert!(quote.contains("chip-to-chip"), "{quote}");
}

/// A wide, noisy table (300 to 700 ns, a busy host) could hide a socket boundary: the
/// OS's two packages stand.
#[test]
fn a_noisy_table_does_not_remove_a_socket() {
    let os = os_view(2, 8, 1);
    let m = LatencyMatrix::from_fn(16, |a, b| (a != b).then(|| 300.0 + 400.0 * jitter(a, b)));
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (2, 16, false));
    let why = warning(&anchored, WarningKind::StructureFromOs).expect("flagged");
    assert!(
        why.contains("cannot tell") || why.contains("but pairs across"),
        "{why}"
    );
}

/// The OS of a guest lists SMT siblings the host runs on separate cores: at 40 ns they
/// are no siblings, and the measured cores stand.
#[test]
fn siblings_slower_than_smt_are_separate_cores() {
    let os = os_view(1, 4, 2);
    let m = LatencyMatrix::from_fn(8, |a, b| (a != b).then(|| 40.0 + 3.0 * jitter(a, b)));
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    assert!(!inferred.has_smt());
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (1, 8, false));
    let quote = warning(&anchored, WarningKind::DiffersFromOs).expect("quoted");
    assert!(quote.contains("SMT siblings (20 ns)"), "{quote}");
}

/// Two sockets the latencies show clearly, where the OS (a guest) lists one package: the
/// measured structure stands and the warning quotes the gap.
#[test]
fn a_clear_gap_overrides_the_os() {
    let os = os_view(1, 8, 1);
    let m = LatencyMatrix::from_fn(8, |a, b| {
        (a != b).then(|| {
            let base = if a / 4 == b / 4 { 45.0 } else { 140.0 };
            base * (1.0 + 0.03 * jitter(a, b))
        })
    });
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    assert_eq!(inferred.num_sockets(), 2);
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (2, 8, false));
    assert!(warning(&anchored, WarningKind::StructureFromOs).is_none());
    let quote = warning(&anchored, WarningKind::DiffersFromOs).expect("quoted");
    assert!(
        quote.contains("2 sockets inferred (0-3 | 4-7) where the OS lists 1 package (0-7)"),
        "{quote}"
    );
    assert!(quote.contains("gap of"), "{quote}");
}

/// A description that agrees with the OS is left as it is.
#[test]
fn agreement_changes_nothing() {
    let os = os_view(2, 4, 2);
    // Siblings c and c + 8; sockets of cores 0-3 and 4-7.
    let m = LatencyMatrix::from_fn(16, |a, b| {
        (a != b).then(|| {
            let (ca, cb) = (a % 8, b % 8);
            if ca == cb {
                8.0
            } else if ca / 4 == cb / 4 {
                45.0
            } else {
                140.0
            }
        })
    });
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    let before = inferred.clone();
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(anchored, before);
}

/// Sockets made from noise where the table otherwise has structure (SMT siblings at
/// 8 ns): one slow core split off as a socket of its own is not backed by a gap.
#[test]
fn a_lone_slow_core_is_not_a_socket() {
    let os = os_view(1, 8, 2);
    let m = LatencyMatrix::from_fn(16, |a, b| {
        (a != b).then(|| {
            let (ca, cb) = (a % 8, b % 8);
            let v = if ca == cb {
                8.0
            } else {
                45.0 + 30.0 * jitter(a, b)
            };
            // Core 7 waits for its CPU now and then.
            if ca != cb && (ca == 7 || cb == 7) {
                v * 1.4
            } else {
                v
            }
        })
    });
    let opts = InferOptions {
        sockets: Some(2),
        sockets_origin: Origin::Os,
        ..InferOptions::default()
    };
    let inferred = infer(&m, &opts).unwrap();
    // The hint made two sockets of the table.
    assert_eq!(inferred.num_sockets(), 2);
    let anchored = anchor_to_os(inferred, &os);
    assert_eq!(measured(&anchored), (1, 8, true));
    let why = warning(&anchored, WarningKind::StructureFromOs).expect("flagged");
    assert!(why.contains("sockets: 2 sockets inferred"), "{why}");
}

/// Hints given on the command line are the user's word.
#[test]
fn given_hints_are_left_alone() {
    let os = os_view(4, 4, 2);
    let m = LatencyMatrix::from_fn(32, |a, b| (a != b).then(|| 1200.0 + 700.0 * jitter(a, b)));
    let opts = InferOptions {
        sockets: Some(1),
        ..InferOptions::default()
    };
    let inferred = infer(&m, &opts).unwrap();
    let before = inferred.clone();
    assert_eq!(anchor_to_os(inferred, &os), before);
}

/// CPUs the OS does not list leave the description as it is.
#[test]
fn cpus_unknown_to_the_os_change_nothing() {
    let os = os_view(1, 2, 1);
    let m = LatencyMatrix::from_fn(4, |a, b| (a != b).then(|| 1500.0 + 100.0 * jitter(a, b)));
    let inferred = infer(&m, &InferOptions::default()).unwrap();
    let before = inferred.clone();
    assert_eq!(anchor_to_os(inferred, &os), before);
}

#[test]
fn partitions_compare_as_sets() {
    assert!(same_partition(&[0, 0, 1], &[5, 5, 2]));
    assert!(!same_partition(&[0, 0, 1], &[5, 2, 2]));
    assert!(!same_partition(&[0, 1, 2], &[0, 0, 2]));
}
