//! What the SMT decision says of a latency agrees with the latency: a figure is never
//! called above the SMT bound when it is below it (a 3x3 matrix at 10 ns once read "10.0 ns,
//! above the SMT bound of 20.0 ns"), and counts are in the right number.

use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::LatencyMatrix;

/// Every "at X ns, above|below the SMT bound of B ns" in `text`, as (X, word, B).
fn claims(text: &str) -> Vec<(f64, String, f64)> {
    let mut out = Vec::new();
    for word in ["above", "below"] {
        let needle = format!(" ns, {word} the SMT bound of ");
        let mut rest = text;
        while let Some(at) = rest.find(&needle) {
            let before = &rest[..at];
            let x: f64 = before
                .rsplit(' ')
                .next()
                .and_then(|t| t.parse().ok())
                .expect("a figure before the claim");
            let after = &rest[at + needle.len()..];
            let b: f64 = after
                .split(' ')
                .next()
                .and_then(|t| t.parse().ok())
                .expect("a bound after the claim");
            out.push((x, word.to_string(), b));
            rest = after;
        }
    }
    out
}

#[test]
fn a_latency_is_above_or_below_the_smt_bound_as_it_is() {
    let mut seen = 0;
    for ns in [5.0, 10.0, 14.0, 20.0, 25.0, 30.0, 45.0, 70.0] {
        for n in [2, 3, 4] {
            for smt in [None, Some(true), Some(false)] {
                let m = LatencyMatrix::from_fn(n, |a, b| (a != b).then_some(ns));
                let opts = InferOptions {
                    smt,
                    ..InferOptions::default()
                };
                let topo = infer(&m, &opts).unwrap();
                let v = topo.validation();
                let mut texts: Vec<String> = v.confidence.iter().map(|c| c.basis.clone()).collect();
                texts.extend(v.unresolved.iter().map(|u| u.reason.clone()));
                texts.extend(v.warnings.iter().map(|w| w.message.clone()));
                for t in &texts {
                    assert!(!t.contains(" 1 cores"), "{t}");
                    for (x, word, b) in claims(t) {
                        seen += 1;
                        let right = if word == "above" { x > b } else { x <= b };
                        assert!(right, "{n}x{n} at {ns} ns, --smt {smt:?}: {t}");
                    }
                }
            }
        }
    }
    assert!(seen > 10, "the sweep checks claims ({seen})");
}
