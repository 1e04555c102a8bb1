//! The simulator: specs, matrices, numbering, noise, quantization, ground truth, probe.

use std::collections::BTreeSet;

use topoprobe_infer::collect_full;
use topoprobe_infer::sim::{
    platforms, CrossSocket, MachineSpec, Noise, Numbering, SimProbe, SpecError, Truth, Unit,
};
use topoprobe_model::PairLatency;
use topoprobe_model::{ContextId, Evidence, LatencyUnit, Member, Topology, TopologyBuilder};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Close at the resolution of a latency table (5 significant digits).
fn close_in_table(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * b.abs()
}

/// A latency as a table holds it (5 significant digits).
fn in_table(x: f64) -> f64 {
    topoprobe_model::round_significant(x, topoprobe_model::TABLE_DIGITS)
}

#[test]
fn every_platform_is_valid() {
    for spec in platforms::all() {
        spec.validate()
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert!(spec.ghz.is_some(), "{}", spec.name);
    }
}

#[test]
fn matrices_are_square_with_empty_diagonal_and_positive_entries() {
    for spec in platforms::all() {
        let spec = spec.with_noise(Noise::lognormal(0.05, 3).with_outliers(0.01, 3.0));
        let m = spec.matrix();
        let n = spec.contexts();
        assert_eq!(m.len(), n, "{}", spec.name);
        assert_eq!(m.to_rows().len(), n);
        for a in 0..n {
            assert_eq!(m.row(a).len(), n);
            for b in 0..n {
                let v = m.get(a, b);
                if a == b {
                    assert_eq!(v, None, "{}: diagonal ({a}, {a})", spec.name);
                } else {
                    let v = v.unwrap_or_else(|| panic!("{}: ({a}, {b}) missing", spec.name));
                    assert!(v.is_finite() && v > 0.0, "{}: ({a}, {b}) = {v}", spec.name);
                }
            }
        }
    }
}

#[test]
fn noise_free_matrix_is_the_true_latency() {
    for spec in platforms::all() {
        let m = spec.matrix();
        let t = spec.true_matrix();
        assert_eq!(m, t, "{}", spec.name);
        let n = spec.contexts();
        for a in (0..n).step_by(7) {
            for b in (0..n).step_by(5) {
                if a != b {
                    assert_eq!(m.get(a, b), Some(in_table(spec.true_latency(a, b))));
                    assert_eq!(m.get(a, b), m.get(b, a), "{}", spec.name);
                }
            }
        }
        assert_eq!(spec.true_latency(0, 0), 0.0);
        assert!(spec.true_latency(0, n).is_nan());
    }
}

#[test]
fn paper_platforms_have_the_papers_latencies() {
    let ivy = platforms::ivy();
    assert_eq!(ivy.contexts(), 40);
    assert_eq!(ivy.units, LatencyUnit::Cycles);
    assert_eq!(ivy.true_latency(0, 20), 28.0);
    assert_eq!(ivy.true_latency(0, 1), 112.0);
    assert_eq!(ivy.true_latency(0, 29), 112.0);
    assert_eq!(ivy.true_latency(0, 10), 308.0);
    assert_eq!(ivy.true_latency(9, 30), 308.0);

    // Westmere: socket s has contexts 10s..10s+9 and 80+10s..; 0-1 linked, 0-6 two hops.
    let w = platforms::westmere();
    assert_eq!(w.contexts(), 160);
    assert_eq!(w.true_latency(0, 80), 28.0);
    assert_eq!(w.true_latency(0, 5), 116.0);
    assert_eq!(w.true_latency(0, 10), 341.0);
    assert_eq!(w.true_latency(0, 60), 445.0);
    let direct: Vec<usize> = (0..8)
        .map(|s| {
            (0..8)
                .filter(|&t| t != s)
                .filter(|&t| {
                    let v = w.true_latency(10 * s, 10 * t);
                    assert!(v == 341.0 || v == 445.0, "{s}-{t}: {v}");
                    v == 341.0
                })
                .count()
        })
        .collect();
    assert!(direct.iter().all(|&d| d == 4 || d == 5), "{direct:?}");

    let h = platforms::haswell();
    assert_eq!(h.contexts(), 96);
    assert_eq!(h.true_latency(0, 48), 30.0);
    assert_eq!(h.true_latency(0, 11), 110.0);
    assert_eq!(h.true_latency(0, 12), 300.0);
    assert_eq!(h.true_latency(0, 36), 300.0);

    let o = platforms::opteron();
    assert_eq!(o.contexts(), 48);
    assert_eq!(o.true_latency(0, 5), 132.0);
    assert_eq!(o.true_latency(0, 6), 280.0); // die 1, same package
    assert_eq!(o.true_latency(0, 12), 280.0); // die 2
    assert_eq!(o.true_latency(0, 18), 380.0); // die 3: two hops

    let s = platforms::sparc_t4();
    assert_eq!(s.contexts(), 256);
    assert_eq!(s.true_latency(0, 7), 28.0);
    assert_eq!(s.true_latency(0, 8), 110.0);
    assert_eq!(s.true_latency(0, 64), 350.0);
}

#[test]
fn modern_platforms_have_their_latencies() {
    let e = platforms::epyc_2x64();
    assert_eq!(e.contexts(), 256);
    assert_eq!(e.true_latency(0, 128), 8.0);
    assert_eq!(e.true_latency(0, 7), 25.0);
    assert_eq!(e.true_latency(0, 8), 120.0);
    assert_eq!(e.true_latency(0, 64), 230.0);

    let r = platforms::epyc_2x64_home_node();
    assert_eq!(r.contexts(), 256);
    assert_eq!(r.true_latency(0, 128), 8.0);
    assert_eq!(r.true_latency(0, 3), 25.0);
    assert_eq!(r.true_latency(0, 4), 267.0); // home node: like cross-socket
    assert_eq!(r.true_latency(64, 67), 25.0);
    assert_eq!(r.true_latency(64, 68), 132.0);
    assert_eq!(r.true_latency(0, 64), 267.0);

    let h = platforms::hybrid_desktop();
    assert_eq!(h.contexts(), 24);
    assert_eq!(h.true_latency(0, 1), 4.3);
    // A ring: 35 ns between neighbouring stops, more farther away (the E-clusters are
    // one stop each).
    assert!(close(h.true_latency(0, 2), 35.0 * (1.0 + 0.3 / 16.0)));
    assert!(close(
        h.true_latency(0, 16),
        35.0 * (1.0 + 0.3 * 8.0 / 16.0)
    ));
    assert_eq!(h.true_latency(0, 16), h.true_latency(0, 19));
    assert_eq!(h.true_latency(16, 17), 50.0);
    assert_eq!(h.true_latency(16, 20), 44.0);

    let f = platforms::flat_mesh(24);
    assert!(close(f.true_latency(0, 1), 40.0 * (1.0 + 0.5 / 24.0)));
    assert!(close(
        f.true_latency(0, 23),
        40.0 * (1.0 + 0.5 * 23.0 / 24.0)
    ));
    assert!(close(f.true_latency(5, 3), f.true_latency(10, 12)));

    let x = platforms::xeon_2s();
    assert_eq!(x.contexts(), 64);
    assert_eq!(x.true_latency(0, 32), 7.4);
    assert!(close(x.true_latency(0, 1), 48.0 * (1.0 + 0.2 / 16.0)));
    assert!(close(
        x.true_latency(0, 47),
        48.0 * (1.0 + 0.2 * 15.0 / 16.0)
    ));
    assert_eq!(x.true_latency(0, 16), 140.0);

    let k = platforms::knl_tiles();
    assert_eq!(k.contexts(), 64);
    assert_eq!(k.true_latency(0, 1), 42.0);
    assert_eq!(k.true_latency(1, 2), 90.0);

    let c = platforms::cmt_modules();
    assert_eq!(c.contexts(), 8);
    assert_eq!(c.true_latency(0, 1), 44.0);
    assert_eq!(c.true_latency(1, 2), 270.0);
}

#[test]
fn numbering_places_siblings_where_documented() {
    let far = platforms::ivy().truth();
    assert_eq!(far.core[0], far.core[20]);
    assert_eq!(far.core[19], far.core[39]);
    assert_ne!(far.core[0], far.core[1]);
    assert_eq!(far.socket[0..10], [0; 10]);
    assert_eq!(far.socket[20..30], [0; 10]);
    assert_eq!(far.socket[10..20], [1; 10]);

    let adj = platforms::ivy()
        .with_numbering(Numbering::SiblingsAdjacent)
        .truth();
    for k in 0..20 {
        assert_eq!(adj.core[2 * k], adj.core[2 * k + 1]);
    }
    assert_ne!(adj.core[1], adj.core[2]);
    assert_eq!(adj.socket[0..20], [0; 20]);

    let inter = platforms::haswell()
        .with_numbering(Numbering::InterleavedSockets)
        .truth();
    for n in 0..96 {
        assert_eq!(inter.socket[n], n % 4, "context {n}");
    }
    assert_eq!(inter.core[0], inter.core[48]);
    assert_ne!(inter.core[0], inter.core[4]);

    let r1 = platforms::ivy()
        .with_numbering(Numbering::Random(5))
        .truth();
    let r2 = platforms::ivy()
        .with_numbering(Numbering::Random(5))
        .truth();
    let r3 = platforms::ivy()
        .with_numbering(Numbering::Random(6))
        .truth();
    assert_eq!(r1, r2);
    assert_ne!(r1, r3);
    assert_ne!(r1.core_sets(), far.core_sets());
    assert_eq!(r1.num_cores(), 20);
    assert!(r1.core_sets().iter().all(|c| c.len() == 2));
    // The matrix follows the numbering.
    let spec = platforms::ivy().with_numbering(Numbering::Random(5));
    for pair in r1.core_sets() {
        assert_eq!(spec.true_latency(pair[0], pair[1]), 28.0);
    }
}

#[test]
fn hybrid_numbering_has_adjacent_p_siblings_then_e_cores() {
    let t = platforms::hybrid_desktop().truth();
    for k in 0..8 {
        assert_eq!(t.core[2 * k], t.core[2 * k + 1]);
    }
    let e: BTreeSet<usize> = t.core[16..].iter().copied().collect();
    assert_eq!(e.len(), 8);
}

#[test]
fn quantization_gives_multiples_of_the_quantum() {
    let q = 24.0;
    let spec = platforms::ivy()
        .with_noise(Noise::lognormal(0.05, 9))
        .with_quantum(Some(q));
    let m = spec.matrix();
    for a in 0..40 {
        for b in 0..40 {
            if let Some(v) = m.get(a, b) {
                let k = v / q;
                assert!((k - k.round()).abs() < 1e-9, "({a}, {b}) = {v}");
                assert!(v >= q);
            }
        }
    }
    // Never rounded to 0: SMT latency 4.3 with a 10 ns quantum is 10.
    let h = platforms::hybrid_desktop()
        .with_quantum(Some(10.0))
        .matrix();
    assert_eq!(h.get(0, 1), Some(10.0));
    assert_eq!(h.get(16, 17), Some(50.0));
    assert_eq!(h.get(16, 20), Some(40.0));
}

#[test]
fn truth_has_the_expected_counts() {
    let counts = |t: &Truth| {
        (
            t.num_contexts(),
            t.num_cores(),
            t.num_sockets(),
            t.groups.len(),
        )
    };
    assert_eq!(counts(&platforms::ivy().truth()), (40, 20, 2, 0));
    assert_eq!(counts(&platforms::westmere().truth()), (160, 80, 8, 0));
    assert_eq!(counts(&platforms::haswell().truth()), (96, 48, 4, 0));
    assert_eq!(counts(&platforms::opteron().truth()), (48, 48, 8, 0));
    assert_eq!(counts(&platforms::sparc_t4().truth()), (256, 32, 4, 0));
    assert_eq!(counts(&platforms::epyc_2x64().truth()), (256, 128, 2, 16));
    assert_eq!(
        counts(&platforms::epyc_2x64_home_node().truth()),
        (256, 128, 2, 32)
    );
    assert_eq!(counts(&platforms::hybrid_desktop().truth()), (24, 16, 1, 3));
    assert_eq!(counts(&platforms::flat_mesh(24).truth()), (24, 24, 1, 0));
    assert_eq!(counts(&platforms::xeon_2s().truth()), (64, 32, 2, 0));
    assert_eq!(counts(&platforms::knl_tiles().truth()), (64, 64, 1, 32));
    assert_eq!(counts(&platforms::cmt_modules().truth()), (8, 8, 1, 4));

    let h = platforms::hybrid_desktop().truth();
    assert_eq!(
        h.groups,
        vec![
            (16..20).collect::<Vec<_>>(),
            (16..24).collect(),
            (20..24).collect()
        ]
    );

    // EPYC: a CCX is the 8 first contexts and their 8 siblings 128 further.
    let e = platforms::epyc_2x64().truth();
    let ccx0: Vec<usize> = (0..8).chain(128..136).collect();
    assert!(e.groups.contains(&ccx0));
    assert!(e.groups.iter().all(|g| g.len() == 16));
}

#[test]
fn truth_ignores_groups_that_are_a_whole_socket_and_dedups_nesting() {
    let inner = Unit::group(30.0, Unit::cores(2, 1, 0.0));
    let chain = Unit::group(40.0, vec![inner]); // same contexts as `inner`
    let whole = Unit::group(50.0, vec![chain, Unit::group(30.0, Unit::cores(2, 1, 0.0))]);
    let spec = MachineSpec::new(
        "nested",
        vec![Unit::group(60.0, vec![whole])],
        CrossSocket::Uniform(100.0),
    );
    spec.validate().unwrap();
    let t = spec.truth();
    assert_eq!(t.groups, vec![vec![0, 1], vec![2, 3]]);
}

#[test]
fn same_seed_same_matrix() {
    for spec in [
        platforms::ivy(),
        platforms::epyc_2x64(),
        platforms::hybrid_desktop(),
    ] {
        let noisy = |seed| {
            spec.clone()
                .with_noise(Noise::lognormal(0.03, seed).with_outliers(0.01, 3.0))
                .matrix()
        };
        assert_eq!(noisy(1), noisy(1), "{}", spec.name);
        assert_ne!(noisy(1), noisy(2), "{}", spec.name);
    }
}

#[test]
fn undirected_noise_is_symmetric_and_directed_is_not() {
    let spec = platforms::ivy().with_noise(Noise::lognormal(0.02, 4));
    let m = spec.matrix();
    assert_eq!(m.max_asymmetry(), 0.0);
    let d = spec
        .with_noise(Noise::lognormal(0.02, 4).directed(true))
        .matrix();
    assert!(d.max_asymmetry() > 0.0);
}

#[test]
fn noise_has_the_requested_size_and_outliers_the_requested_rate() {
    let spec = platforms::epyc_2x64().with_noise(Noise::lognormal(0.02, 11));
    let m = spec.matrix();
    let n = spec.contexts();
    let mut logs = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            logs.push((m.get(a, b).unwrap() / spec.true_latency(a, b)).ln());
        }
    }
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
    assert!(mean.abs() < 0.002, "mean {mean}");
    assert!((sd - 0.02).abs() < 0.002, "sd {sd}");

    let spec = spec.with_noise(Noise::none().with_outliers(0.05, 3.0));
    let m = spec.matrix();
    let (mut up, mut down, mut total) = (0usize, 0usize, 0usize);
    for a in 0..n {
        for b in a + 1..n {
            let r = m.get(a, b).unwrap() / spec.true_latency(a, b);
            total += 1;
            if close_in_table(r, 3.0) {
                up += 1;
            } else if close_in_table(r, 1.0 / 3.0) {
                down += 1;
            } else {
                assert!(close_in_table(r, 1.0), "ratio {r}");
            }
        }
    }
    let rate = (up + down) as f64 / total as f64;
    assert!((rate - 0.05).abs() < 0.005, "rate {rate}");
    assert!(up > 0 && down > 0);
}

#[test]
fn invalid_specs_are_rejected_and_do_not_panic() {
    let ok = platforms::ivy();
    let mut s = ok.clone();
    s.sockets.clear();
    assert_eq!(s.validate(), Err(SpecError::NoSockets));
    assert_eq!(s.matrix().len(), 0);

    let mut s = ok.clone();
    s.sockets[1] = Unit::group(100.0, vec![]);
    assert!(matches!(
        s.validate(),
        Err(SpecError::EmptyGroup { socket: 1, .. })
    ));

    let mut s = ok.clone();
    s.sockets[0] = Unit::group(100.0, vec![Unit::core(0, 1.0)]);
    let e = s.validate().unwrap_err();
    assert!(e.to_string().contains("root.0"), "{e}");

    let mut s = ok.clone();
    s.sockets[0] = Unit::core(2, 28.0);
    assert_eq!(s.validate(), Err(SpecError::RootNotGroup { socket: 0 }));

    let mut s = ok.clone();
    s.sockets[0] = Unit::group(-1.0, Unit::cores(10, 2, 28.0));
    let e = s.validate().unwrap_err();
    assert!(e.to_string().contains("-1"), "{e}");
    // Invalid pairs are missing, never a panic.
    assert_eq!(s.matrix().get(0, 1), None);

    let mut s = ok.clone();
    s.cross = CrossSocket::Matrix(vec![vec![0.0, 308.0]]);
    assert!(matches!(s.validate(), Err(SpecError::CrossShape { .. })));
    assert_eq!(s.true_latency(0, 10), 308.0);
    assert!(s.true_latency(10, 0).is_nan()); // no row 1
    assert_eq!(s.matrix().get(10, 0), None);

    let s = ok.clone().with_home_node(Some(2));
    assert!(matches!(
        s.validate(),
        Err(SpecError::HomeNode {
            node: 2,
            sockets: 2
        })
    ));

    let s = ok.clone().with_quantum(Some(0.0));
    assert!(s.validate().is_err());
    let s = ok.clone().with_noise(Noise::none().with_outliers(1.5, 3.0));
    assert!(s.validate().is_err());
    let s = ok.clone().with_noise(Noise::none().with_outliers(0.1, 0.5));
    assert!(s.validate().is_err());
    let s = ok.with_mesh(f64::NAN);
    assert!(s.validate().is_err());
    assert!(SimProbe::new(&s).is_err());
}

#[test]
fn links_give_hop_latencies() {
    let c = CrossSocket::from_links(4, &[(0, 1), (1, 2), (2, 3)], &[100.0, 150.0]).unwrap();
    assert_eq!(c.between(0, 1), 100.0);
    assert_eq!(c.between(0, 2), 150.0);
    assert_eq!(c.between(0, 3), 150.0); // beyond the last hop: the last latency
    assert_eq!(c.from_socket(0), Some((100.0 + 150.0 + 150.0) / 3.0));
    assert!(matches!(
        CrossSocket::from_links(3, &[(0, 3)], &[1.0]),
        Err(SpecError::Link { .. })
    ));
    assert!(matches!(
        CrossSocket::from_links(3, &[(0, 1)], &[1.0]),
        Err(SpecError::Disconnected { a: 0, b: 2 })
    ));
    assert!(CrossSocket::from_links(2, &[(0, 1)], &[]).is_err());
    let w = CrossSocket::from_links(8, &platforms::WESTMERE_LINKS, &[341.0, 445.0]).unwrap();
    assert_eq!(w, platforms::westmere().cross);
}

#[test]
fn specs_round_trip_through_json() {
    for spec in platforms::all() {
        let spec = spec
            .with_noise(Noise::lognormal(0.02, 1))
            .with_quantum(Some(4.0));
        let json = serde_json::to_string(&spec).unwrap();
        let back: MachineSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
    }
    // Optional fields default.
    let json = r#"{"name": "tiny", "sockets": [{"group": {"latency": 40.0,
        "members": [{"core": {"contexts": 2, "smt_latency": 8.0}},
                    {"core": {"contexts": 2, "smt_latency": 8.0}}]}}],
        "cross": {"uniform": 100.0}}"#;
    let spec: MachineSpec = serde_json::from_str(json).unwrap();
    assert_eq!(spec.contexts(), 4);
    assert_eq!(spec.numbering, Numbering::SiblingsFar);
    assert_eq!(spec.true_latency(0, 2), 8.0);
    assert_eq!(spec.true_latency(0, 1), 40.0);
}

#[test]
fn probe_samples_differ_between_calls() {
    let spec = platforms::ivy().with_noise(Noise::lognormal(0.02, 3));
    let mut p = SimProbe::new(&spec).unwrap();
    assert_eq!(p.contexts(), 40);
    let a = p.measure(0, 1).unwrap().unwrap();
    let b = p.measure(0, 1).unwrap().unwrap();
    assert_ne!(a, b);
    for s in [a, b] {
        assert!(s.min <= s.median);
        assert!(s.spread > 0.0 && s.spread < 0.1, "{s:?}");
        assert!((s.median / 112.0 - 1.0).abs() < 0.1, "{s:?}");
    }
    assert_eq!(p.measurements(), 2);
    // Reproducible from the seed.
    let mut q = SimProbe::new(&spec).unwrap();
    assert_eq!(q.measure(0, 1).unwrap().unwrap(), a);
    // Errors, not panics.
    assert!(p.measure(0, 40).is_err());
    assert!(p.measure(3, 3).is_err());
}

#[test]
fn probe_drift_decays_to_one() {
    let spec = platforms::ivy().with_noise(Noise::lognormal(0.01, 3));
    let mut p = SimProbe::new(&spec).unwrap().with_drift(1.3, 100).unwrap();
    assert!(close(p.drift_factor(), 1.3));
    let first = p.measure(0, 10).unwrap().unwrap().median;
    assert!(first > 308.0 * 1.2, "{first}");
    let mut last = f64::INFINITY;
    for k in 1..100 {
        let f = p.drift_factor();
        assert!(f <= last && f >= 1.0, "measurement {k}: {f}");
        last = f;
        p.measure(0, 10).unwrap();
    }
    assert_eq!(p.drift_factor(), 1.0);
    let warm = p.measure(0, 10).unwrap().unwrap().median;
    assert!((warm / 308.0 - 1.0).abs() < 0.05, "{warm}");
    assert!(SimProbe::new(&spec)
        .unwrap()
        .with_drift(f64::NAN, 10)
        .is_err());
}

#[test]
fn probe_quantizes_and_collects() {
    let spec = platforms::cmt_modules()
        .with_noise(Noise::lognormal(0.02, 1))
        .with_quantum(Some(8.0));
    let mut p = SimProbe::new(&spec).unwrap().with_samples(5);
    let c = collect_full(&mut p, &mut |_, _| {}).unwrap();
    assert_eq!(c.pairs, 28);
    for a in 0..8 {
        for b in 0..8 {
            if a != b {
                let v = c.latency.get(a, b).unwrap();
                assert!((v / 8.0 - (v / 8.0).round()).abs() < 1e-9, "({a}, {b}) {v}");
                assert!(
                    (v / spec.true_latency(a, b) - 1.0).abs() < 0.2,
                    "({a}, {b}) {v}"
                );
            }
        }
    }
}

/// A topology with one-context cores, the given groups (disjoint, each a set of cores) and
/// one socket.
fn flat_topology(n: usize, groups: &[Vec<usize>], extra_single_group: bool) -> Topology {
    let mut b = TopologyBuilder::new((0..n as u32).collect(), LatencyUnit::Ns);
    let cores: Vec<_> = (0..n).map(|i| b.core(vec![ContextId(i)])).collect();
    let mut members = Vec::new();
    let mut grouped = BTreeSet::new();
    for g in groups.iter().rev() {
        let ms = g.iter().map(|&c| Member::Core(cores[c])).collect();
        members.push(Member::Group(b.group(ms, Evidence::Given)));
        grouped.extend(g.iter().copied());
    }
    for (i, &c) in cores.iter().enumerate() {
        if !grouped.contains(&i) {
            if extra_single_group {
                members.push(Member::Group(
                    b.group(vec![Member::Core(c)], Evidence::Given),
                ));
            } else {
                members.push(Member::Core(c));
            }
        }
    }
    b.socket(members);
    b.build().unwrap()
}

#[test]
fn check_compares_up_to_relabelling() {
    let truth = platforms::cmt_modules().truth();
    let good = flat_topology(8, &truth.groups, false);
    assert_eq!(truth.check(&good), Ok(()));

    let missing = flat_topology(8, &truth.groups[..3], true);
    let e = truth.check(&missing).unwrap_err();
    assert!(e.contains("multi-core groups: expected 4, found 3"), "{e}");
    assert!(e.contains("{6-7}"), "{e}");

    let wrong = flat_topology(8, &[vec![0, 1], vec![2, 3], vec![4, 5, 6, 7]], false);
    let e = truth.check(&wrong).unwrap_err();
    assert!(e.contains("first found set not expected: {4-7}"), "{e}");

    // A whole-socket group is ignored.
    let k = platforms::knl_tiles().truth();
    let whole = flat_topology(64, &[(0..64).collect()], false);
    let e = k.check(&whole).unwrap_err();
    assert!(e.contains("expected 32, found 0"), "{e}");

    let ivy = platforms::ivy().truth();
    let e = ivy.check(&good).unwrap_err();
    assert!(e.contains("contexts: expected 40, found 8"), "{e}");
    let flat40 = flat_topology(40, &[], false);
    let e = ivy.check(&flat40).unwrap_err();
    assert!(e.starts_with("cores: expected 20, found 40"), "{e}");
}
