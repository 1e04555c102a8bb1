use std::convert::Infallible;

use topoprobe_infer::sim::platforms;
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{
    Component, ContextId, LatencyMatrix, Origin, PairVerdict, SharingOutcome, Topology,
};

use super::decide::{fraction, verdict};
use super::*;

const MIB: u64 = 1 << 20;

/// 2 sockets × 2 groups × 2 cores × 2 SMT contexts (context i's sibling is i + 8).
fn topo() -> Topology {
    let lat = LatencyMatrix::from_fn(16, |a, b| {
        let (ca, cb) = (a % 8, b % 8);
        Some(if a == b {
            0.0
        } else if ca == cb {
            8.0
        } else if ca / 2 == cb / 2 {
            30.0
        } else if ca / 4 == cb / 4 {
            60.0
        } else {
            200.0
        })
    });
    infer(&lat, &InferOptions::default()).unwrap()
}

/// One socket of `n` single-context cores without groups, from the simulator (what the
/// 16-vCPU Xeon guest gave).
fn flat(n: usize) -> Topology {
    let spec = platforms::flat_mesh(n);
    let t = infer(&spec.matrix(), &spec.infer_options()).unwrap();
    assert_eq!(
        (
            t.num_contexts(),
            t.num_cores(),
            t.num_groups(),
            t.num_sockets()
        ),
        (n, n, 0, 1)
    );
    t
}

/// A simulated cache level: instances of `capacity` bytes shared by the contexts that
/// `same` puts together; a walk costs `hit` ns while its instance holds every array
/// walked in it, and with thrash-resistant replacement a miss share of
/// `1 - capacity / load` beyond (LRU: every access misses).
struct Sim<F: Fn(ContextId, ContextId) -> bool> {
    capacity: u64,
    hit: f64,
    miss: f64,
    lru: bool,
    same: F,
}

impl<F: Fn(ContextId, ContextId) -> bool> Sim<F> {
    fn walk(&self, ctxs: &[ContextId], bytes: u64) -> Result<f64, Infallible> {
        let t: f64 = ctxs
            .iter()
            .map(|&c| {
                let load = ctxs.iter().filter(|&&d| (self.same)(c, d)).count() as u64 * bytes;
                let missed = if load <= self.capacity {
                    0.0
                } else if self.lru {
                    1.0
                } else {
                    1.0 - self.capacity as f64 / load as f64
                };
                self.hit + missed * (self.miss - self.hit)
            })
            .sum();
        Ok(t / ctxs.len() as f64)
    }
}

fn spec(name: &str, reach: u64, os: Option<u64>, os_instances: Vec<Vec<usize>>) -> LevelSpec {
    LevelSpec {
        name: name.into(),
        reach_bytes: Some(reach),
        os_bytes: os,
        inner_bytes: None,
        os_instances: os_instances
            .into_iter()
            .map(|i| i.into_iter().map(ContextId).collect())
            .collect(),
    }
}

fn ids(v: &[Vec<ContextId>]) -> Vec<Vec<usize>> {
    v.iter().map(|i| i.iter().map(|c| c.0).collect()).collect()
}

#[test]
fn scopes_go_from_the_core_to_the_machine() {
    let t = topo();
    let s = scopes(&t, ContextId(0));
    let partners: Vec<usize> = s.iter().map(|x| x.partner.0).collect();
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(partners[0], 8);
    assert!(matches!(s[0].component, Some(Component::Core(_))));
    assert!(matches!(s[1].component, Some(Component::Group(_))));
    assert!(matches!(s[2].component, Some(Component::Socket(_))));
    assert!(s[3].component.is_none());
    // Each partner is outside the previous scope.
    assert_eq!(t.context_latency(ContextId(0), s[1].partner), Some(30.0));
}

#[test]
fn instances_follow_the_widest_sharing_scope() {
    let t = topo();
    let s = scopes(&t, ContextId(0));
    assert_eq!(instances(&t, None).len(), 16);
    let per_core = instances(&t, Some(&s[0]));
    assert_eq!(per_core.len(), 8);
    assert!(per_core.iter().all(|c| c.len() == 2));
    let per_group = instances(&t, Some(&s[1]));
    assert_eq!(per_group.len(), 4);
    assert!(per_group.iter().all(|c| c.len() == 4));
    assert_eq!(instances(&t, Some(&s[2])).len(), 2);
    assert_eq!(
        instances(&t, Some(&s[3])),
        vec![(0..16).map(ContextId).collect::<Vec<_>>()]
    );
}

#[test]
fn fractions_place_a_pair_between_private_and_shared() {
    assert_eq!(fraction(10.0, 30.0, 10.0), 0.0);
    assert_eq!(fraction(10.0, 30.0, 30.0), 1.0);
    assert_eq!(fraction(10.0, 10.0, 30.0), 0.0, "no span: no answer");
    assert_eq!(verdict(0.05, 1.02), PairVerdict::Private);
    assert_eq!(verdict(0.4, 1.2), PairVerdict::Unclear);
    assert_eq!(verdict(0.9, 1.4), PairVerdict::Shared);
    // A quarter of the way to a miss ten times a hit is no private level.
    assert_eq!(verdict(0.2, 2.8), PairVerdict::Unclear);
    // Much faster than alone: the walk alone was disturbed.
    assert_eq!(verdict(-0.6, 0.64), PairVerdict::Unclear);
}

#[test]
fn simulated_caches_give_their_sharing_domains() {
    let t = topo();
    // L1 per core (shared by SMT siblings), L2 per group of two cores, L3 per socket,
    // with LRU (Servet's case) and with thrash-resistant replacement.
    let shares = |level: usize, a: ContextId, b: ContextId| match level {
        1 => a.0 % 8 == b.0 % 8,
        2 => (a.0 % 8) / 2 == (b.0 % 8) / 2,
        _ => (a.0 % 8) / 4 == (b.0 % 8) / 4,
    };
    for lru in [true, false] {
        for (level, count, size) in [(1usize, 8usize, 2usize), (2, 4, 4), (3, 2, 8)] {
            let sim = Sim {
                capacity: 32 * MIB,
                hit: 10.0,
                miss: 30.0,
                lru,
                same: |a, b| shares(level, a, b),
            };
            let s = spec("L", 32 * MIB, Some(32 * MIB), Vec::new());
            let found =
                sharing_with(&t, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
            let inst = &found.shared_by;
            assert_eq!(inst.len(), count, "level {level}: {inst:?}");
            assert!(
                inst.iter().all(|i| i.len() == size),
                "level {level}: {inst:?}"
            );
            assert_eq!(found.test.outcome, SharingOutcome::Decided);
            assert!(found.warning.is_none());
            // It stops at the first scope that does not share; each pair walks twice.
            let pairs = &found.test.pairs;
            assert_eq!(pairs.len(), level + 1);
            assert!(pairs.iter().all(|p| p.fraction_again.is_some()));
            assert_eq!(pairs.last().unwrap().verdict, PairVerdict::Private);
            if !lru {
                // Servet's 2× would have called this level private.
                assert!(pairs[0].ratio < 2.0, "{pairs:?}");
            }
        }
    }
    // A private cache: even the SMT sibling does not share it.
    let sim = Sim {
        capacity: MIB,
        hit: 4.0,
        miss: 12.0,
        lru: false,
        same: |a: ContextId, b: ContextId| a == b,
    };
    let s = spec("L2", MIB, Some(MIB), Vec::new());
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
    assert_eq!(found.shared_by.len(), 16);
    assert_eq!(found.test.pairs.len(), 1);
}

#[test]
fn an_l3_shared_by_sixteen_contexts_of_a_flat_socket_is_found() {
    let t = flat(16);
    // The Xeon guest: the OS lists one 300 MiB L3 for all 16 CPUs and the curve's rise is
    // explained by that size, but the guest keeps only 128 MiB of it (thrash-resistant
    // replacement). Arrays of two thirds of 300 MiB already miss alone.
    let sim = Sim {
        capacity: 128 * MIB,
        hit: 40.0,
        miss: 120.0,
        lru: false,
        same: |_, _| true,
    };
    let s = spec("L3", 300 * MIB, Some(300 * MIB), vec![(0..16).collect()]);
    let mut arrays = Vec::new();
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| {
        arrays.push(b);
        sim.walk(c, b)
    })
    .unwrap();
    assert_eq!(ids(&found.shared_by), [(0..16).collect::<Vec<_>>()]);
    assert_eq!(found.test.outcome, SharingOutcome::Decided);
    assert_eq!(found.test.source, Some(Origin::Measured));
    assert_eq!(found.test.pairs.len(), 1, "one scope: the socket");
    assert_eq!(found.test.pairs[0].verdict, PairVerdict::Shared);
    // With LRU the first size tells nothing (both walks miss): a smaller one does.
    let lru = Sim { lru: true, ..sim };
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| lru.walk(c, b)).unwrap();
    assert_eq!(ids(&found.shared_by), [(0..16).collect::<Vec<_>>()]);
    assert!(found.test.array_kib.unwrap() * 1024 < 200 * MIB);
    // The two-CPU guest: one 32 MiB L3 for CPUs 0-1, found shared.
    let t2 = flat(2);
    let sim = Sim {
        capacity: 32 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |_, _| true,
    };
    let s = spec("L3", 32 * MIB, Some(32 * MIB), vec![vec![0, 1]]);
    let found = sharing_with(&t2, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
    assert_eq!(ids(&found.shared_by), [vec![0, 1]]);
}

#[test]
fn a_measured_private_level_is_recorded_against_the_os() {
    // The OS lists one L3 for all 16 CPUs; the walks say each context has its own (vCPUs
    // on different dies of the host): the measurement is recorded, decided, and the OS's
    // listing is left to the comparison with the OS.
    let t = flat(16);
    let sim = Sim {
        capacity: 32 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |a: ContextId, b: ContextId| a == b,
    };
    let s = spec("L3", 32 * MIB, Some(32 * MIB), vec![(0..16).collect()]);
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
    assert_eq!(found.shared_by.len(), 16);
    assert_eq!(found.test.outcome, SharingOutcome::Decided);
    assert_eq!(found.test.pairs[0].verdict, PairVerdict::Private);
}

#[test]
fn an_unclear_pair_keeps_the_os_sharing_with_a_warning() {
    let t = flat(16);
    // Together, each walk costs a third of the way to the doubled walk.
    let s = spec("L3", 32 * MIB, Some(32 * MIB), vec![(0..16).collect()]);
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| {
        Ok::<f64, Infallible>(match (c.len(), b > 32 * MIB) {
            (1, false) => 20.0,
            (1, true) => 80.0,
            _ => 40.0,
        })
    })
    .unwrap();
    assert_eq!(found.test.outcome, SharingOutcome::Inconclusive);
    assert_eq!(found.test.source, Some(Origin::Os));
    assert_eq!(ids(&found.shared_by), [(0..16).collect::<Vec<_>>()]);
    let w = found.warning.unwrap();
    assert!(
        w.contains("inconclusive") && w.contains("OS's sharing is kept"),
        "{w}"
    );
    // Without an OS view, what was decided (nothing: private) is kept, with the warning.
    let s = spec("L3", 32 * MIB, None, Vec::new());
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| {
        Ok::<f64, Infallible>(if c.len() == 1 && b <= 32 * MIB {
            20.0
        } else if c.len() == 1 {
            80.0
        } else {
            40.0
        })
    })
    .unwrap();
    assert_eq!(found.test.source, Some(Origin::Measured));
    assert_eq!(found.shared_by.len(), 16);
    assert!(found.warning.unwrap().contains("too narrow"));
}

#[test]
fn walks_that_cannot_be_calibrated_are_inconclusive() {
    let t = flat(4);
    // Every walk costs the same: no size tells a shared level from a private one.
    let s = spec("L3", 32 * MIB, Some(32 * MIB), vec![(0..4).collect()]);
    let mut walks = 0;
    let found = sharing_with(&t, &s, &SharingOptions::default(), |_, _| {
        walks += 1;
        Ok::<f64, Infallible>(50.0)
    })
    .unwrap();
    assert_eq!(found.test.outcome, SharingOutcome::Inconclusive);
    assert_eq!(found.test.source, Some(Origin::Os));
    assert!(found.test.pairs.is_empty());
    assert_eq!(ids(&found.shared_by), [vec![0, 1, 2, 3]]);
    // The plan's sizes, two walks each, and nothing else.
    let p = plan(&t, &s, &SharingOptions::default()).unwrap();
    assert_eq!(walks, 2 * p.arrays.len());
    // A larger array walked faster than the smaller one is noise: that size is walked
    // again, and the second time decides.
    let mut first = true;
    let sim = Sim {
        capacity: 32 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |_: ContextId, _: ContextId| true,
    };
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| {
        if std::mem::take(&mut first) {
            return Ok(500.0);
        }
        sim.walk(c, b)
    })
    .unwrap();
    assert_eq!(found.test.outcome, SharingOutcome::Decided);
    assert_eq!(ids(&found.shared_by), [vec![0, 1, 2, 3]]);
    assert_eq!(found.test.array_kib, Some(p.arrays[0] / 1024));
}

#[test]
fn levels_over_the_memory_budget_are_unavailable() {
    let t = flat(16);
    let gib = 1024 * MIB;
    let s = spec(
        "L3",
        gib + gib / 10,
        Some(gib + gib / 10),
        vec![(0..16).collect()],
    );
    let opts = SharingOptions {
        max_bytes: 256 * MIB,
        ..SharingOptions::default()
    };
    let reason = plan(&t, &s, &opts).unwrap_err();
    assert!(
        reason.contains("exceed the memory budget of 256 MiB"),
        "{reason}"
    );
    let found = sharing_with(&t, &s, &opts, |_, _| -> Result<f64, Infallible> {
        panic!("nothing is walked")
    })
    .unwrap();
    assert_eq!(found.test.outcome, SharingOutcome::Unavailable);
    assert_eq!(found.test.source, Some(Origin::Os));
    assert_eq!(found.shared_by.len(), 1);
    assert!(found
        .warning
        .unwrap()
        .contains("unavailable: two arrays of"));
    // The plan of a level that fits: sizes, walks and memory known before walking.
    let s = spec("L3", 300 * MIB, Some(300 * MIB), vec![(0..16).collect()]);
    let p = plan(&t, &s, &SharingOptions::default()).unwrap();
    assert_eq!(p.arrays[0], 200 * MIB);
    assert_eq!(p.peak_bytes(), 400 * MIB);
    assert!(p.peak_bytes() <= plan::DEFAULT_MAX_BYTES);
    assert_eq!(p.max_walks(), 4 * p.arrays.len() + 2);
    // 200 MiB: 204800 positions, rounds of 1 Mi accesses.
    let one = 262_144 + 3 * (1 << 20);
    assert!(
        p.max_accesses(3) >= 2 * one + 2 * one,
        "{}",
        p.max_accesses(3)
    );
    // A measured share smaller than the OS's instance: the OS's size is tried too.
    let s = spec("L3", 96 * MIB, Some(300 * MIB), Vec::new());
    let p = plan(&t, &s, &SharingOptions::default()).unwrap();
    assert_eq!(p.arrays[..2], [64 * MIB, 200 * MIB]);
}

#[test]
fn an_os_instance_inside_a_flat_socket_is_tested_at_its_boundary() {
    // Eight cores without latency groups; the OS lists two L3s of four cores (two CCXs),
    // and so does the simulated machine.
    let t = flat(8);
    let os = vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]];
    let s = spec("L3", 16 * MIB, Some(16 * MIB), os.clone());
    let tests = scope_tests(&t, ContextId(0), s.os_instance_of(ContextId(0)));
    assert_eq!(tests.len(), 1);
    assert_eq!(tests[0].partners, [ContextId(1), ContextId(4)]);
    let sim = Sim {
        capacity: 16 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |a: ContextId, b: ContextId| a.0 / 4 == b.0 / 4,
    };
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
    assert_eq!(found.test.outcome, SharingOutcome::Decided);
    assert_eq!(ids(&found.shared_by), os);
    // If the whole socket shares it, the OS's boundary is not confirmed.
    let sim = Sim {
        capacity: 16 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |_: ContextId, _: ContextId| true,
    };
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| sim.walk(c, b)).unwrap();
    assert_eq!(ids(&found.shared_by), [(0..8).collect::<Vec<_>>()]);
}

#[test]
fn a_pair_that_changes_its_answer_is_unclear() {
    // The host moves a vCPU between the two rounds: the pair shares the L3, then not.
    let t = flat(2);
    let s = spec("L3", 32 * MIB, Some(32 * MIB), vec![vec![0, 1]]);
    let shared = Sim {
        capacity: 32 * MIB,
        hit: 12.0,
        miss: 90.0,
        lru: false,
        same: |_: ContextId, _: ContextId| true,
    };
    let mut pairs_walked = 0;
    let found = sharing_with(&t, &s, &SharingOptions::default(), |c, b| {
        if c.len() == 2 {
            pairs_walked += 1;
            if pairs_walked == 2 {
                return Ok(12.0);
            }
        }
        shared.walk(c, b)
    })
    .unwrap();
    assert_eq!(pairs_walked, 2);
    let p = found.test.pairs[0];
    assert_eq!(p.verdict, PairVerdict::Unclear);
    assert!(p.fraction > 0.9 && p.fraction_again.unwrap() < 0.1, "{p:?}");
    assert_eq!(found.test.outcome, SharingOutcome::Inconclusive);
    assert_eq!(found.test.source, Some(Origin::Os));
    assert_eq!(ids(&found.shared_by), [vec![0, 1]]);
    assert!(
        found
            .warning
            .unwrap()
            .contains("walked together twice and answered differently"),
        "the warning says why"
    );
}
