//! The figures a description file states that nothing derives from its structure — latency
//! levels, the latency tables, the confidences of the validation, the nodes the memory
//! figures are of — checked for the range they can have, so that a crafted or damaged file
//! (a level whose minimum is above its maximum, a median over more pairs than the machine
//! has, a confidence of 7.5, a latency of 10³⁰⁸, a bandwidth to node 4294967295) is refused
//! with the field named rather than shown.

use crate::data::TopologyData;
use crate::format::csv::MAX_LATENCY;
use crate::limits::MAX_NODES;
use crate::{LatencyMatrix, LatencySummary, ModelError};

fn bad(msg: String) -> ModelError {
    ModelError::Structure(msg)
}

/// Checks the stated figures of `d` (see the [module docs](self)).
pub(crate) fn check(d: &TopologyData) -> Result<(), ModelError> {
    let n = d.contexts.len();
    let pairs = n.saturating_mul(n.saturating_sub(1)) / 2;
    for level in &d.levels {
        summary(
            &format!("latency level {}", level.id),
            &level.latency,
            pairs,
        )?;
    }
    for c in &d.validation.confidence {
        if !(0.0..=1.0).contains(&c.confidence) {
            return Err(bad(format!(
                "validation: the confidence of the {} level is {}: a confidence is between 0 and 1",
                c.level.as_str(),
                c.confidence
            )));
        }
    }
    if let Some(memory) = &d.memory {
        let nodes = memory
            .latency
            .iter()
            .map(|l| ("latency", l.node))
            .chain(memory.bandwidth.iter().map(|b| ("bandwidth", b.node)));
        for (i, (what, node)) in nodes.enumerate() {
            if node.0 >= MAX_NODES {
                let i = if what == "latency" {
                    i
                } else {
                    i - memory.latency.len()
                };
                return Err(bad(format!(
                    "memory.{what}[{i}] is of node {}: Linux numbers nodes below {MAX_NODES} \
                     (see docs/LIMITS.md)",
                    node.0
                )));
            }
        }
    }
    let tables = &d.latency;
    latencies("raw", &tables.raw)?;
    latencies("normalized", &tables.normalized)?;
    if let Some(spread) = &tables.spread {
        for a in 0..spread.len() {
            for (b, v) in spread.row(a).enumerate() {
                if let Some(v) = v {
                    if !v.is_finite() || v < 0.0 {
                        return Err(bad(format!(
                            "latency.spread[{a}][{b}] is {}: a spread is a finite, non-negative fraction",
                            shown(v)
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A figure as a message shows it: in scientific notation when huge or tiny.
fn shown(v: f64) -> String {
    if v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A latency: finite, 0 to [`MAX_LATENCY`].
fn latency_ok(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_LATENCY).contains(&v)
}

fn summary(what: &str, s: &LatencySummary, pairs: usize) -> Result<(), ModelError> {
    for (name, v) in [("min", s.min), ("median", s.median), ("max", s.max)] {
        if !latency_ok(v) {
            return Err(bad(format!(
                "{what}: {name} {} is not a latency (0 to {MAX_LATENCY:e})",
                shown(v)
            )));
        }
    }
    if !(s.min <= s.median && s.median <= s.max) {
        return Err(bad(format!(
            "{what}: min {} ≤ median {} ≤ max {} does not hold",
            shown(s.min),
            shown(s.median),
            shown(s.max)
        )));
    }
    if s.count > pairs {
        return Err(bad(format!(
            "{what}: a summary of {} pairs, but the machine has {pairs}",
            s.count
        )));
    }
    Ok(())
}

fn latencies(name: &str, m: &LatencyMatrix) -> Result<(), ModelError> {
    for a in 0..m.len() {
        for (b, v) in m.row(a).enumerate() {
            if let Some(v) = v {
                if !latency_ok(v) {
                    return Err(bad(format!(
                        "latency.{name}[{a}][{b}] is {}: a latency is finite, 0 to {MAX_LATENCY:e}",
                        shown(v)
                    )));
                }
            }
        }
    }
    Ok(())
}
