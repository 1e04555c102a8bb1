//! The latency table of a `.mct` file: N² triples `x y latency`.

use super::Parser;
use crate::error::ModelError;
use crate::format::lexer::check_latency;
use crate::matrix::LatencyMatrix;

impl Parser<'_> {
    /// The N² triples after the header (`header_line`, for the message when the file is too
    /// short to hold them).
    pub(super) fn latency_table(
        &mut self,
        n: usize,
        header_line: usize,
    ) -> Result<LatencyMatrix, ModelError> {
        // Every triple takes at least 5 bytes ("0 0 1"): refuse to allocate a table that
        // the file cannot hold.
        let room = self.toks.source_len() / 5 + 1;
        let nn = match n.checked_mul(n) {
            Some(nn) if nn <= room => nn,
            _ => {
                return Err(self.err(
                    header_line,
                    format!(
                        "truncated file: `#HWCs {n}` needs {n}×{n} `x y latency` triples, but \
                         the file is only {} bytes long",
                        self.toks.source_len()
                    ),
                ))
            }
        };
        let mut m = LatencyMatrix::empty(n);
        let mut first_line = vec![0_usize; nn];
        let range = format!("the header says #HWCs {n}");
        for k in 0..nn {
            let what = || {
                format!(
                    "the latency table needs {nn} `x y latency` triples (#HWCs {n}), only {k} \
                     are complete"
                )
            };
            let tx = self.data(&what)?;
            let ty = self.data(&what)?;
            let tl = self.data(&what)?;
            self.one_triple_per_line(tx.line, [ty.line, tl.line])?;
            let x = self.index(tx, "context", n, &range)?;
            let y = self.index(ty, "context", n, &range)?;
            let slot = &mut first_line[x * n + y];
            if *slot != 0 {
                return Err(self.err(
                    tx.line,
                    format!(
                        "the pair ({x}, {y}) appears twice in the latency table (first at line {})",
                        *slot
                    ),
                ));
            }
            *slot = tx.line;
            let v = check_latency(tl.text).map_err(|problem| {
                self.err(tl.line, format!("latency of ({x}, {y}): {problem}"))
            })?;
            if x != y {
                if v == 0.0 {
                    return Err(self.err(
                        tl.line,
                        format!(
                            "latency of ({x}, {y}) is 0: latencies between different contexts \
                             must be positive"
                        ),
                    ));
                }
                m.set(x, y, Some(v));
            }
        }
        Ok(m)
    }

    /// Checks that the triple starting on `line` (its other two values on `others`) fills
    /// that line alone, as libmctop writes it: a value missing or added on one line would
    /// shift every later triple, and the errors it causes further on would blame the wrong
    /// line.
    fn one_triple_per_line(&mut self, line: usize, others: [usize; 2]) -> Result<(), ModelError> {
        let on_line = 1 + others.iter().filter(|&&l| l == line).count();
        if on_line < 3 {
            return Err(self.err(
                line,
                format!(
                    "line {line} holds {on_line} value{} where an `x y latency` triple belongs: \
                     each line of the latency table is one triple",
                    if on_line == 1 { "" } else { "s" }
                ),
            ));
        }
        if self.toks.peek().is_some_and(|t| t.line == line) {
            return Err(self.err(
                line,
                format!(
                    "line {line} holds more than the three values of an `x y latency` triple: \
                     each line of the latency table is one triple"
                ),
            ));
        }
        Ok(())
    }
}
