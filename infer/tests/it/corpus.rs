//! Inference on the real measured matrices of the test data: every identifiable level of
//! every machine is right (as the corpus scorer counts them), and the results are
//! internally consistent.

use crate::common;

use common::{corpus_ids, excluded, matrix, truth, wrong_levels};
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{Role, StructureLevel, WarningKind};

#[test]
fn every_machine_is_inferred_correctly() {
    let ids = corpus_ids();
    assert_eq!(ids.len(), 13, "the test data has 13 machines with truth");
    let mut failures = Vec::new();
    for id in &ids {
        let topo = infer(&matrix(id), &InferOptions::default()).expect("inference");
        let wrong = wrong_levels(&topo, &truth(id), excluded(id));
        if !wrong.is_empty() {
            failures.push(format!("{id}: wrong {wrong:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn results_are_complete_and_consistent() {
    for id in corpus_ids() {
        let m = matrix(&id);
        let topo = infer(&m, &InferOptions::default()).expect("inference");
        let n = m.len();
        let normalized = &topo.latency_tables().normalized;
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    assert!(
                        normalized.get(a, b).is_some(),
                        "{id}: normalized ({a},{b}) missing"
                    );
                }
            }
        }
        assert!(!topo.levels().is_empty(), "{id}: no levels");
        let v = topo.validation();
        for level in [
            StructureLevel::Core,
            StructureLevel::Group,
            StructureLevel::Socket,
        ] {
            let c = v.confidence_of(level).expect("confidence of every level");
            assert!((0.0..=1.0).contains(&c), "{id}: confidence {c}");
        }
        // The description survives a JSON round trip: the structure whole, the figures to
        // the 10 significant digits a description keeps, so that a second trip changes
        // nothing.
        let json = topoprobe_model::format::json::to_json_string(&topo);
        let back =
            topoprobe_model::format::json::from_json_str(&json, std::path::Path::new("x.json"))
                .expect("round trip");
        assert_eq!(back.contexts(), topo.contexts(), "{id}: JSON round trip");
        assert_eq!(back.cores(), topo.cores(), "{id}: JSON round trip");
        assert_eq!(
            topoprobe_model::format::json::to_json_string(&back),
            json,
            "{id}: JSON round trip"
        );
    }
}

#[test]
fn hard_cases_carry_the_expected_explanations() {
    let kinds = |id: &str| -> Vec<WarningKind> {
        infer(&matrix(id), &InferOptions::default())
            .expect("inference")
            .validation()
            .warnings
            .iter()
            .map(|w| w.kind.clone())
            .collect()
    };
    assert!(kinds("nv-2x-epyc-7742").contains(&WarningKind::HomeNode));
    assert!(kinds("nv-i9-12900k").contains(&WarningKind::InvertedGroup));
    assert!(kinds("hy-apple-m1pro-10c").contains(&WarningKind::Asymmetric));
    assert!(kinds("nv-graviton2").contains(&WarningKind::Flat));
    assert!(kinds("nv-graviton2").contains(&WarningKind::Quantized));
}

#[test]
fn levels_have_the_expected_roles() {
    let topo = infer(&matrix("nv-2x-xeon-gold-6242"), &InferOptions::default()).expect("inference");
    let roles: Vec<Role> = topo.levels().iter().map(|l| l.role).collect();
    assert_eq!(roles, vec![Role::Smt, Role::Socket, Role::CrossSocket]);
    let smt = &topo.levels()[0].latency;
    assert!(smt.median > 7.0 && smt.median < 8.0, "SMT level {smt:?}");
    let cross = &topo.levels()[2].latency;
    assert!(
        cross.min > 130.0 && cross.max < 150.0,
        "cross-socket level {cross:?}"
    );
}
