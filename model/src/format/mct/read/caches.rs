//! The data of the `#Cache_levels` section.

use super::{Parser, Section};
use crate::error::ModelError;
use crate::format::common::plural;
use crate::format::lexer::{check_latency, shown, Token};
use crate::format::mct::layout::mct_cache_line;
use crate::os_view::CacheType;
use crate::sections::{CacheLevel, CacheSection};

impl<'a> Parser<'a> {
    /// The lines of `#Cache_levels`.
    pub(super) fn caches(&mut self, s: &Section<'_>) -> Result<CacheSection, ModelError> {
        let mut levels: Vec<CacheLevel> = Vec::new();
        for i in 0..s.count {
            let what = || {
                format!(
                    "section `{} {}` needs {} `Cache_level i Latency l SizeOS s SizeEst e`, \
                     only {i} are complete",
                    s.name,
                    s.count,
                    plural(s.count, "line")
                )
            };
            let field = |this: &mut Self, key: &str| -> Result<Token<'a>, ModelError> {
                let t = this.data(&what)?;
                if t.text != key {
                    return Err(this.err(
                        t.line,
                        format!(
                            "section `{}`: expected `{key}`, found {} (lines are `Cache_level i \
                             Latency l SizeOS s SizeEst e`)",
                            s.name,
                            shown(t.text)
                        ),
                    ));
                }
                this.data(&what)
            };
            let tl = field(self, "Cache_level")?;
            let tlat = field(self, "Latency")?;
            let tos = field(self, "SizeOS")?;
            let test = field(self, "SizeEst")?;
            let level: u32 = tl.text.parse().map_err(|_| {
                self.err(
                    tl.line,
                    format!(
                        "section `{}`: expected a cache level number, found {}",
                        s.name,
                        shown(tl.text)
                    ),
                )
            })?;
            if levels.iter().any(|l| mct_cache_line(l) == level) {
                return Err(self.err(
                    tl.line,
                    format!("section `{}`: cache level {level} appears twice", s.name),
                ));
            }
            let latency = check_latency(tlat.text).map_err(|problem| {
                self.err(
                    tlat.line,
                    format!("section `{}`: level {level}: {problem}", s.name),
                )
            })?;
            let size = |this: &Self, t: Token<'_>, what: &str| -> Result<Option<u64>, ModelError> {
                let v: u64 = t.text.parse().map_err(|_| {
                    this.err(
                        t.line,
                        format!(
                            "section `{}`: level {level}: expected the {what} in KiB (a whole \
                             number), found {}",
                            s.name,
                            shown(t.text)
                        ),
                    )
                })?;
                Ok((v > 0).then_some(v))
            };
            // libmctop's line 0 is the L1 instruction cache, line 1 the L1 data cache.
            let (number, kind) = match level {
                0 => (1, CacheType::Instruction),
                1 => (1, CacheType::Data),
                n => (n, CacheType::Unified),
            };
            levels.push(CacheLevel {
                latency: (latency > 0.0).then_some(latency),
                os_size_kib: size(self, tos, "size the OS reports")?,
                measured_size_kib: size(self, test, "measured size")?,
                ..CacheLevel::new(number, Some(kind))
            });
        }
        Ok(CacheSection {
            levels,
            tlb: Vec::new(),
        })
    }
}
