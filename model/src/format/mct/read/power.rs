//! The data of the `#Power_measurements` section.

use std::collections::{BTreeMap, HashMap};

use super::{Parser, Section};
use crate::error::ModelError;
use crate::format::common::plural;
use crate::format::lexer::shown;
use crate::format::mct::layout::scope_key;
use crate::ids::SocketId;
use crate::sections::{PowerEntry, PowerScope, PowerSection, PowerState};

impl<'a> Parser<'a> {
    /// The lines of `#Power_measurements`: one per load state for each socket and the total.
    pub(super) fn power(&mut self, s: &Section<'a>) -> Result<PowerSection, ModelError> {
        let mut entries: Vec<PowerEntry> = Vec::new();
        let mut first: HashMap<(PowerScope, PowerState), usize> = HashMap::new();
        // The socket count of the first `Power_total_<sockets>_…` line, and its line.
        let mut totals: Option<(usize, usize)> = None;
        while self.toks.peek().is_some_and(|t| !t.text.starts_with('#')) {
            let what = || format!("section `{} {}`: expected a power line", s.name, s.count);
            let t = self.data(&what)?;
            let (scope, rest) = if let Some(rest) = t.text.strip_prefix("Power_sockt_") {
                (None, rest)
            } else if let Some(rest) = t.text.strip_prefix("Power_total_") {
                (Some(()), rest)
            } else {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: expected `Power_sockt_<socket>_<state>` or \
                         `Power_total_<sockets>_<state>`, found {}",
                        s.name,
                        shown(t.text)
                    ),
                ));
            };
            let bad_name = || {
                self.err(
                    t.line,
                    format!(
                        "section `{}`: malformed power line name {} (expected \
                         `Power_sockt_<socket>_<state>` or `Power_total_<sockets>_<state>`)",
                        s.name,
                        shown(t.text)
                    ),
                )
            };
            let (number, state_name) = rest.split_once('_').ok_or_else(bad_name)?;
            let number: usize = number.parse().map_err(|_| bad_name())?;
            let state = PowerState::from_mct_name(state_name).ok_or_else(|| {
                self.err(
                    t.line,
                    format!(
                        "section `{}`: unknown power state {} (expected one of idle, 1stcore, \
                         2ndcore, 2ndhwc, allcor, allhwc)",
                        s.name,
                        shown(state_name)
                    ),
                )
            })?;
            let scope = match scope {
                None => PowerScope::Socket(SocketId(number)),
                Some(()) => {
                    totals.get_or_insert((number, t.line));
                    PowerScope::Total
                }
            };
            if let Some(line) = first.insert((scope, state), t.line) {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: {} appears twice (first at line {line})",
                        s.name, t.text
                    ),
                ));
            }
            let mut values = [0.0; 5];
            for (i, v) in values.iter_mut().enumerate() {
                let what = || {
                    format!(
                        "section `{}`: `{}` needs 5 values (cores, rest, package, dram, total \
                         watts), only {i} are there",
                        s.name, t.text
                    )
                };
                let tv = self.data(&what)?;
                if tv.text.starts_with("Power_") {
                    return Err(self.err(t.line, format!("truncated data: {}", what())));
                }
                *v = self.number(tv, "power")?;
            }
            let [cores_w, rest_w, package_w, dram_w, total_w] = values;
            entries.push(PowerEntry {
                scope,
                state,
                cores_w,
                rest_w,
                package_w,
                dram_w,
                total_w,
            });
        }
        let mut per_scope: BTreeMap<(usize, usize), (PowerScope, usize)> = BTreeMap::new();
        for e in &entries {
            per_scope
                .entry(scope_key(&e.scope))
                .or_insert((e.scope, 0))
                .1 += 1;
        }
        if entries.is_empty() && s.count > 0 {
            return Err(self.err(
                s.line,
                format!(
                    "truncated section `{} {}`: expected {} per socket and for the total, \
                     found none",
                    s.name,
                    s.count,
                    plural(s.count, "line")
                ),
            ));
        }
        for &(scope, found) in per_scope.values() {
            if found != s.count {
                let scope = match scope {
                    PowerScope::Socket(id) => format!("socket {}", id.0),
                    PowerScope::Total => "the total".to_string(),
                };
                return Err(self.err(
                    s.line,
                    format!(
                        "section `{} {}`: {scope} has {}, expected {} (one per load state; \
                         truncated?)",
                        s.name,
                        s.count,
                        plural(found, "line"),
                        s.count
                    ),
                ));
            }
        }
        let sockets = per_scope.keys().filter(|k| k.0 == 0).count();
        if sockets > 0 {
            for (i, key) in per_scope.keys().filter(|k| k.0 == 0).enumerate() {
                if key.1 != i {
                    return Err(self.err(
                        s.line,
                        format!(
                            "section `{}`: the sockets are not numbered 0 to {}: socket {i} is \
                             missing",
                            s.name,
                            sockets - 1
                        ),
                    ));
                }
            }
            if let Some((total, line)) = totals.filter(|&(t, _)| t != sockets) {
                return Err(self.err(
                    line,
                    format!(
                        "section `{}`: `Power_total_{total}_…` names {}, but the section has \
                         lines for {}",
                        s.name,
                        plural(total, "socket"),
                        plural(sockets, "socket")
                    ),
                ));
            }
            self.agree_on_sockets(sockets, s.name, s.line)?;
        }
        Ok(PowerSection { entries })
    }
}
