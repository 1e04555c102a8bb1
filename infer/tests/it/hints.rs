//! Hints the latencies contradict: a `--sockets N` whose sockets are separated below a gap
//! the latencies clearly show, or an `--smt yes|no` against their clear verdict, is followed
//! (the user asked) with a `hint_contradicted` warning that names the latencies and what
//! they give without the hint, and a confidence of at most 0.25; a hint that agrees with
//! them, or settles what they leave open, is used without a warning.

use topoprobe_infer::sim::{platforms, CrossSocket, MachineSpec, Noise, Numbering, Unit};
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{Origin, StructureLevel, Topology, WarningKind};

/// A one-socket desktop of two dies of 4 SMT2 cores (16 contexts, siblings `i` and
/// `i + 8`): SMT 7.5 ns, 20 ns inside a die, 80 ns between the dies (a Ryzen 9 5950X
/// shrunk).
fn two_die_desktop() -> MachineSpec {
    let die = Unit::group(20.0, Unit::cores(4, 2, 7.5));
    MachineSpec::symmetric(
        "two-die-desktop",
        1,
        Unit::group(80.0, vec![die.clone(), die]),
        CrossSocket::Uniform(80.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_noise(Noise::lognormal(0.01, 3))
}

fn run(spec: &MachineSpec, hint: impl FnOnce(&mut InferOptions)) -> Topology {
    let mut opts = spec.infer_options();
    hint(&mut opts);
    infer(&spec.matrix(), &opts).expect("inference")
}

/// The messages of the `hint_contradicted` warnings.
fn contradictions(topo: &Topology) -> Vec<String> {
    topo.validation()
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::HintContradicted)
        .map(|w| w.message.clone())
        .collect()
}

fn confidence(topo: &Topology, level: StructureLevel) -> f64 {
    topo.validation()
        .confidence_of(level)
        .expect("a confidence per level")
}

/// The contradicted level follows the hint (given) with a confidence of at most 0.25.
fn assert_followed(topo: &Topology, level: StructureLevel) {
    let origin = match level {
        StructureLevel::Socket => topo.facts().sockets.origin,
        _ => topo.facts().smt.origin,
    };
    assert_eq!(origin, Origin::Given);
    let c = confidence(topo, level);
    assert!(c <= 0.25, "confidence {c}");
}

/// What every contradiction of a typed hint ends with.
const FOLLOWED: &str =
    "the hint is followed as given (leave it out to keep what the latencies show)";

#[test]
fn a_socket_hint_that_cuts_below_the_widest_gap_is_flagged() {
    // Four "sockets" of a two-die desktop cut the dies (20 ns inside) or the cores
    // (7.5 ns), below the gap between 20 and 80 ns that the latencies clearly show.
    let spec = two_die_desktop();
    let topo = run(&spec, |o| o.sockets = Some(4));
    assert_followed(&topo, StructureLevel::Socket);
    assert_eq!(topo.num_sockets(), 4);
    let msgs = contradictions(&topo);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    let m = &msgs[0];
    assert!(
        m.starts_with("--sockets 4 contradicts the latencies: the 4 sockets it forces are "),
        "{m}"
    );
    // It names the widest gap: between the dies' inside (about 20 ns) and their link
    // (about 80 ns), and what was kept.
    assert!(m.contains("widest gap") && m.contains(" ns and 7"), "{m}");
    assert!(
        m.ends_with(&format!("inferred without the hint: 1 socket; {FOLLOWED}")),
        "{m}"
    );
}

#[test]
fn a_socket_hint_that_splits_smt_siblings_says_so() {
    // Four "sockets" of three SMT cores on a ring: at least one core is split, at the
    // 7.5 ns of its siblings, below the gap up to the 30 ns between cores.
    let spec = MachineSpec::symmetric(
        "three-smt-cores",
        1,
        Unit::group(30.0, Unit::cores(3, 2, 7.5)),
        CrossSocket::Uniform(30.0),
    )
    .with_noise(Noise::lognormal(0.01, 5));
    let topo = run(&spec, |o| o.sockets = Some(4));
    assert_followed(&topo, StructureLevel::Socket);
    let msgs = contradictions(&topo);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].contains("apart inside a core (SMT), splitting "),
        "{}",
        msgs[0]
    );
}

#[test]
fn a_socket_hint_far_above_the_latency_levels_is_flagged() {
    // One socket per context on a two-socket server of four latency levels (SMT, CCX,
    // socket, cross-socket): the siblings of every core would be sockets.
    for spec in [
        platforms::ccx_server(2).with_noise(Noise::lognormal(0.01, 2)),
        two_die_desktop(),
    ] {
        let n = spec.truth().num_contexts();
        let topo = run(&spec, |o| o.sockets = Some(n));
        assert_followed(&topo, StructureLevel::Socket);
        assert_eq!(topo.num_sockets(), n, "{}", spec.name);
        let msgs = contradictions(&topo);
        assert_eq!(msgs.len(), 1, "{}: {msgs:?}", spec.name);
        let m = &msgs[0];
        assert!(
            m.starts_with(&format!(
                "--sockets {n} contradicts the latencies: the {n} sockets it forces are "
            )),
            "{m}"
        );
        let cores = spec.truth().num_cores();
        assert!(
            m.contains(&format!("inside a core (SMT), splitting {cores} cores")),
            "{m}"
        );
        let truth = spec.truth().num_sockets();
        assert!(
            m.ends_with(&format!(
                "inferred without the hint: {}; {FOLLOWED}",
                if truth == 1 {
                    "1 socket".to_string()
                } else {
                    format!("{truth} sockets")
                }
            )),
            "{m}"
        );
    }
}

#[test]
fn an_smt_hint_the_latencies_contradict_is_flagged() {
    // SMT off, but sibling pairs communicate at 7.5 ns against 20 ns to the next core.
    let spec = two_die_desktop();
    let topo = run(&spec, |o| o.smt = Some(false));
    assert_followed(&topo, StructureLevel::Core);
    assert!(!topo.has_smt());
    let msgs = contradictions(&topo);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with(
            "--smt no contradicts the latencies: 8 pairs of contexts communicate at 7."
        ),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[0].ends_with(&format!(
            "inferred without the hint: SMT, 8 cores with several contexts; {FOLLOWED}"
        )),
        "{}",
        msgs[0]
    );

    // SMT on, but the fastest pairs share a tile's L2 at 42 ns, twice the SMT bound: the
    // tiles are not cores, but made cores as asked.
    let spec = platforms::knl_tiles().with_noise(Noise::lognormal(0.01, 4));
    let topo = run(&spec, |o| o.smt = Some(true));
    assert_followed(&topo, StructureLevel::Core);
    assert!(topo.has_smt());
    let msgs = contradictions(&topo);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with(
            "--smt yes contradicts the latencies: the fastest sets of contexts communicate at 4"
        ),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[0].ends_with(&format!("inferred without the hint: no SMT; {FOLLOWED}")),
        "{}",
        msgs[0]
    );

    // SMT on where nothing is faster than the rest, at 70 ns: nothing can be made a core,
    // and the hint is not applied.
    let flat = topoprobe_model::LatencyMatrix::from_fn(16, |_, _| Some(70.0));
    let topo = infer(
        &flat,
        &InferOptions {
            smt: Some(true),
            ..InferOptions::default()
        },
    )
    .expect("inference");
    assert!(!topo.has_smt());
    assert_eq!(topo.facts().smt.origin, Origin::Inferred);
    let msgs = contradictions(&topo);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with("--smt yes contradicts the latencies: no set of contexts communicates distinctly faster"),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[0].ends_with("so the hint is not applied: no SMT"),
        "{}",
        msgs[0]
    );

    // A hint read from a file says where it came from.
    let spec = two_die_desktop();
    let topo = run(&spec, |o| {
        o.smt = Some(false);
        o.smt_origin = Origin::File;
    });
    let msgs = contradictions(&topo);
    assert!(
        msgs[0].starts_with("the hint \"SMT off\" (read from the file) contradicts"),
        "{msgs:?}"
    );
    assert!(
        msgs[0].ends_with("the hint is followed as the file says"),
        "{msgs:?}"
    );
}

#[test]
fn hints_that_agree_or_settle_an_open_question_make_no_warning() {
    // The truth's own counts.
    for spec in [
        platforms::xeon_2s().with_noise(Noise::lognormal(0.01, 1)),
        platforms::ccx_server(2).with_noise(Noise::lognormal(0.01, 1)),
        two_die_desktop(),
    ] {
        let truth = spec.truth();
        let topo = run(&spec, |o| {
            o.sockets = Some(truth.num_sockets());
            o.smt = Some(truth.num_cores() < truth.num_contexts());
        });
        truth
            .check(&topo)
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert!(contradictions(&topo).is_empty(), "{}", spec.name);
        assert_eq!(topo.facts().sockets.origin, Origin::Given);
        assert_eq!(topo.facts().smt.origin, Origin::Given);
    }
    // Two dies joined at 74 ns may be two sockets on a fast link: a hint of two is
    // taken. Four sockets of a two-socket server whose sockets are two dies each, joined
    // at 120 ns in pairs and 230 ns otherwise, are a plausible link too: no contradiction.
    let spec = platforms::fast_link_server(8).with_noise(Noise::lognormal(0.01, 1));
    let topo = run(&spec, |o| o.sockets = Some(2));
    assert!(contradictions(&topo).is_empty());
    assert_eq!(topo.num_sockets(), 2);
    let spec = platforms::ccx_server(2).with_noise(Noise::lognormal(0.01, 1));
    let topo = run(&spec, |o| o.sockets = Some(4));
    assert!(contradictions(&topo).is_empty());
    assert_eq!(topo.num_sockets(), 4);
    // Clusters of 4 cores at the SMT bound could be 4-thread cores: the latencies leave it
    // open and either hint settles it.
    let spec = platforms::clusters_at_smt_bound(4).with_noise(Noise::lognormal(0.005, 1));
    for smt in [true, false] {
        let topo = run(&spec, |o| o.smt = Some(smt));
        assert!(contradictions(&topo).is_empty(), "--smt {smt}");
        assert_eq!(topo.has_smt(), smt);
        assert_eq!(topo.facts().smt.origin, Origin::Given);
    }
}

#[test]
fn the_contradiction_reaches_the_json_and_the_text_view() {
    let spec = two_die_desktop();
    let topo = run(&spec, |o| o.sockets = Some(16));
    let json = topoprobe_model::format::json::to_json_string(&topo);
    assert!(json.contains("\"hint_contradicted\""), "{json}");
    let back = topoprobe_model::format::json::from_json_str(&json, std::path::Path::new("x"))
        .expect("the description reads back");
    assert_eq!(contradictions(&back), contradictions(&topo));
    let text = topoprobe_view::text::render(&topo);
    assert!(text.contains("--sockets 16 contradicts"), "{text}");
}
