//! The cache-to-cache table of `topoprobe mem --c2c`: one row per distance, reader and
//! owner, home node and state, one column per operation (ns); then what could not be
//! measured, warnings and notes.

use std::fmt::Write as _;

use topoprobe_model::format::escape_xml as e;
use topoprobe_model::results::bench::{Op, Scope, State};
use topoprobe_model::results::cache_to_cache::{CacheToCacheResult, Home, Transfer};

/// One row of the table: the transfers that share everything but the operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The owner's distance from the reader.
    pub scope: Scope,
    /// The reader's OS CPU.
    pub reader_cpu: u32,
    /// The owner's OS CPU.
    pub owner_cpu: u32,
    /// Where the lines were.
    pub home: Home,
    /// Their node, when bound.
    pub home_node: Option<u32>,
    /// Their state.
    pub state: State,
    /// ns of each operation of [`Op::ALL`] (`None`: not measured).
    pub ns: [Option<f64>; 5],
}

impl Row {
    /// The reader and owner, for people (`CPU 0 <- CPU 16`, `CPU 0 <- memory`).
    #[must_use]
    pub fn pair(&self) -> String {
        if self.scope == Scope::Memory {
            format!("CPU {} <- memory", self.reader_cpu)
        } else {
            format!("CPU {} <- CPU {}", self.reader_cpu, self.owner_cpu)
        }
    }

    /// The home, for people (`owner (node 1)`, `unbound`).
    #[must_use]
    pub fn home_text(&self) -> String {
        match self.home_node {
            Some(n) => format!("{} (node {n})", self.home.as_str()),
            None => self.home.as_str().to_string(),
        }
    }
}

/// The transfers as rows, in the order they were measured.
#[must_use]
pub fn rows(transfers: &[Transfer]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for t in transfers {
        let col = Op::ALL.iter().position(|&o| o == t.op).unwrap_or(0);
        let same = |r: &Row| {
            r.scope == t.scope
                && r.reader_cpu == t.reader_cpu
                && r.owner_cpu == t.owner_cpu
                && r.home == t.home
                && r.home_node == t.home_node
                && r.state == t.state
        };
        if let Some(r) = out.iter_mut().find(|r| same(r)) {
            r.ns[col] = Some(t.latency_ns);
        } else {
            let mut ns = [None; 5];
            ns[col] = Some(t.latency_ns);
            out.push(Row {
                scope: t.scope,
                reader_cpu: t.reader_cpu,
                owner_cpu: t.owner_cpu,
                home: t.home,
                home_node: t.home_node,
                state: t.state,
                ns,
            });
        }
    }
    out
}

/// The text of `mem --c2c`: the table ([`table`]), then what the budget left out and the
/// plan's summary; ends with a newline.
#[must_use]
pub fn text(r: &CacheToCacheResult) -> String {
    let mut out = table(r);
    for l in &r.cost.left_out {
        let _ = writeln!(out, "note: {l}");
    }
    let _ = writeln!(out, "cache-to-cache: {}", crate::cost::summary(&r.cost));
    out
}

/// The table of transfers with what was not measured, the warnings and the notes (a
/// description's text view shows this); ends with a newline.
#[must_use]
pub fn table(r: &CacheToCacheResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "cache-to-cache transfers (ns per operation, median of {} rounds of 32 dependent lines; \
         the kernels of bench line-ops)",
        r.rounds
    );
    let rows = rows(&r.transfers);
    let w_pair = rows
        .iter()
        .map(|x| x.pair().len())
        .max()
        .unwrap_or(0)
        .max(4);
    let w_home = rows
        .iter()
        .map(|x| x.home_text().len())
        .max()
        .unwrap_or(0)
        .max(4);
    let _ = write!(
        out,
        "  {:<12}  {:<w_pair$}  {:<w_home$}  {:<9}",
        "distance", "pair", "home", "state"
    );
    for op in Op::ALL {
        let _ = write!(out, "  {:>6}", op.as_str());
    }
    out.push('\n');
    for x in &rows {
        let _ = write!(
            out,
            "  {:<12}  {:<w_pair$}  {:<w_home$}  {:<9}",
            x.scope.as_str(),
            x.pair(),
            x.home_text(),
            x.state.as_str()
        );
        for v in x.ns {
            let _ = write!(out, "  {:>6}", ns_text(v));
        }
        out.push('\n');
    }
    for u in &r.unavailable {
        let _ = writeln!(out, "  not measured: {u}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: cache-to-cache: {w}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: cache-to-cache: {n}");
    }
    out
}

/// One operation's ns with one decimal, `-` when not measured.
fn ns_text(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "-".into(), |ns| format!("{ns:.1}"))
}

/// The transfers as an HTML table for the report, with what was not measured, the warnings
/// and the notes.
///
/// # Errors
///
/// Never in practice: writing to a `String` does not fail.
pub fn html(s: &mut String, r: &CacheToCacheResult) -> std::fmt::Result {
    writeln!(
        s,
        "<h3>Cache-to-cache transfers</h3><p class=\"muted\">ns per operation by the reader on lines another context holds in a state, at each distance of the topology, with the lines' memory on the reader's or the owner's node (median of {} rounds of 32 dependent lines).</p>",
        r.rounds
    )?;
    write!(
        s,
        "<table class=\"c2c\"><tr><th class=\"l\">distance</th><th class=\"l\">pair</th><th class=\"l\">home</th><th class=\"l\">state</th>"
    )?;
    for op in Op::ALL {
        write!(s, "<th>{}</th>", e(op.as_str()))?;
    }
    writeln!(s, "</tr>")?;
    for x in rows(&r.transfers) {
        write!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>",
            e(x.scope.as_str()),
            e(&x.pair()),
            e(&x.home_text()),
            e(x.state.as_str())
        )?;
        for v in x.ns {
            write!(s, "<td>{}</td>", ns_text(v))?;
        }
        writeln!(s, "</tr>")?;
    }
    writeln!(s, "</table>")?;
    let remarks: Vec<(&str, &String)> = r
        .unavailable
        .iter()
        .map(|u| ("not measured: ", u))
        .chain(r.warnings.iter().map(|w| ("warning: ", w)))
        .chain(r.notes.iter().map(|n| ("", n)))
        .collect();
    if !remarks.is_empty() {
        writeln!(s, "<ul class=\"muted\">")?;
        for (kind, text) in remarks {
            writeln!(s, "<li>{}{}</li>", kind, e(text))?;
        }
        writeln!(s, "</ul>")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{Budget, CostPlan};

    fn t(scope: Scope, owner: u32, home: Home, node: Option<u32>, op: Op, ns: f64) -> Transfer {
        Transfer {
            scope,
            state: State::Modified,
            op,
            reader_cpu: 0,
            owner_cpu: owner,
            third_cpu: None,
            home,
            home_node: node,
            latency_ns: ns,
        }
    }

    #[test]
    fn the_home_variants_of_one_pair_are_separate_rows_with_one_column_per_operation() {
        let r = CacheToCacheResult {
            rounds: 100,
            transfers: vec![
                t(
                    Scope::OtherSocket,
                    16,
                    Home::Reader,
                    Some(0),
                    Op::Load,
                    120.0,
                ),
                t(
                    Scope::OtherSocket,
                    16,
                    Home::Reader,
                    Some(0),
                    Op::Cas,
                    140.0,
                ),
                t(
                    Scope::OtherSocket,
                    16,
                    Home::Owner,
                    Some(1),
                    Op::Load,
                    250.0,
                ),
            ],
            unavailable: vec!["core: no SMT sibling (one context per core)".into()],
            warnings: Vec::new(),
            notes: vec!["one memory node".into()],
            cost: CostPlan::new(Budget::new(5.0, 1 << 20)),
        };
        let rs = rows(&r.transfers);
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].ns, [Some(120.0), None, Some(140.0), None, None]);
        assert_eq!(rs[1].home_text(), "owner (node 1)");
        let s = text(&r);
        assert!(
            s.contains(
                "other_socket  CPU 0 <- CPU 16  reader (node 0)  modified    120.0       -   140.0"
            ),
            "{s}"
        );
        assert!(s.contains("  not measured: core: no SMT sibling"), "{s}");
        assert!(s.contains("note: cache-to-cache: one memory node"), "{s}");
        assert!(s.contains("cache-to-cache: 0 steps"), "{s}");
        assert!(!table(&r).contains("0 steps"));
        let mut h = String::new();
        html(&mut h, &r).unwrap();
        assert_eq!(h.matches("<tr>").count(), 3, "{h}");
        assert!(
            h.contains(
                "<td class=\"l\">CPU 0 &lt;- CPU 16</td><td class=\"l\">owner (node 1)</td>"
            ),
            "{h}"
        );
        assert!(h.contains("<td>250.0</td><td>-</td>"), "{h}");
        assert!(h.contains("<li>not measured: core: no SMT sibling"), "{h}");
    }
}
