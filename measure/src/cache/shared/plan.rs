//! What the shared-cache test of one level will walk, decided before anything is walked:
//! the array sizes to try, the pairs, and the memory they take at most.
//!
//! Each walk's array is two thirds of what one context keeps of the level (its measured
//! size; Servet's choice): alone it fits, and two of them together do not fit in one
//! instance. The measured size is only what one context keeps, which can be less than
//! the instance (a guest's share of a host's last level) or, when the OS's size explained
//! the rise of the curve, more than a context really keeps; so further sizes are tried
//! when the first one does not tell a level that holds the array from one that does not
//! ([`super::decide::MIN_CONTRAST`]): two thirds of the OS's size when the OS lists a
//! larger instance, then half and a quarter of the first size.

use topoprobe_model::{ContextId, Topology};

use super::scopes::{scope_tests, ScopeTest};
use super::walk::accesses;
use crate::cache::check::size_text;
use crate::cache::traverse::STRIDE_BYTES;

/// Memory the test may take at once when not told otherwise: 1 GiB (two arrays of two
/// thirds of a 768 MiB level).
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Timed rounds of each walk when not told otherwise (the fastest counts).
pub const DEFAULT_ROUNDS: usize = 3;

/// An OS size this much larger than the measured one is tried as well.
const LARGER_OS: f64 = 1.25;

/// A fallback array must be this many times the level inside (so that a walk alone
/// misses that level, and the test is about this one).
const INNER_MARGIN: u64 = 4;

/// What the shared-cache test may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharingOptions {
    /// Most bytes allocated at once (two arrays walked together, or one array twice their
    /// size walked alone): a level whose arrays do not fit is not tested ("unavailable").
    pub max_bytes: u64,
    /// Timed rounds of each walk (the fastest counts).
    pub rounds: usize,
}

impl Default for SharingOptions {
    /// [`DEFAULT_MAX_BYTES`], [`DEFAULT_ROUNDS`].
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            rounds: DEFAULT_ROUNDS,
        }
    }
}

/// One cache level as the test sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LevelSpec {
    /// The level's name (`L2`), for messages.
    pub name: String,
    /// What one context keeps of the level: its measured size, bytes.
    pub reach_bytes: Option<u64>,
    /// Size of one instance as the OS lists it, bytes.
    pub os_bytes: Option<u64>,
    /// Size of the data level inside this one, bytes (the arrays must be larger).
    pub inner_bytes: Option<u64>,
    /// The OS's instances of the level as contexts of the topology, each ascending
    /// (empty when the OS lists none).
    pub os_instances: Vec<Vec<ContextId>>,
}

impl LevelSpec {
    /// The OS's instance holding `ctx`, when the OS lists one.
    #[must_use]
    pub fn os_instance_of(&self, ctx: ContextId) -> Option<&[ContextId]> {
        self.os_instances
            .iter()
            .find(|i| i.contains(&ctx))
            .map(Vec::as_slice)
    }
}

/// Everything the test of one level walks, at most.
#[derive(Debug, Clone, PartialEq)]
pub struct SharingPlan {
    /// The context every pair starts from (the topology's first).
    pub first: ContextId,
    /// Array sizes of one walk to try in this order, bytes: each is walked alone, and an
    /// array twice its size too; the first whose doubled walk is clearly slower is used.
    pub arrays: Vec<u64>,
    /// The scopes, innermost first, with the partners walked together with `first`.
    pub scopes: Vec<ScopeTest>,
}

impl SharingPlan {
    /// Most bytes allocated at once: twice the largest array.
    #[must_use]
    pub fn peak_bytes(&self) -> u64 {
        self.arrays.iter().max().map_or(0, |a| a * 2)
    }

    /// Most dependent accesses of the first context over the whole test, with `rounds`
    /// timed rounds per walk: times the last level's miss latency, a bound on its
    /// duration.
    #[must_use]
    pub fn max_accesses(&self, rounds: usize) -> u64 {
        let calibration: u64 = self
            .arrays
            .iter()
            .map(|&a| 2 * (accesses(a, rounds) + accesses(a * 2, rounds)))
            .sum();
        let largest = self.arrays.iter().max().copied().unwrap_or(0);
        calibration + 2 * self.partners() as u64 * accesses(largest, rounds)
    }

    /// Most walks: two per array size tried (four when a size is measured again because
    /// its larger walk was the faster), two per partner (each pair walks twice).
    #[must_use]
    pub fn max_walks(&self) -> usize {
        4 * self.arrays.len() + 2 * self.partners()
    }

    /// Partners over all scopes.
    fn partners(&self) -> usize {
        self.scopes.iter().map(|s| s.partners.len()).sum()
    }
}

/// Two thirds of `bytes`, whole strides, at least one stride.
fn two_thirds(bytes: u64) -> u64 {
    let stride = STRIDE_BYTES as u64;
    (bytes / 3 * 2 / stride * stride).max(stride)
}

/// The walks of one level's test, or why it cannot run (the reason of an "unavailable").
///
/// # Errors
///
/// A sentence saying why: the level's size is unknown, the topology has no context, its
/// arrays would not be larger than the level inside it, or two of them exceed
/// `opts.max_bytes`.
pub fn plan(
    topo: &Topology,
    spec: &LevelSpec,
    opts: &SharingOptions,
) -> Result<SharingPlan, String> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Err("the topology has no context".into());
    };
    let Some(reach) = spec.reach_bytes.or(spec.os_bytes).filter(|&b| b > 0) else {
        return Err("its size is unknown (neither measured nor listed by the OS)".into());
    };
    let primary = two_thirds(reach);
    if let Some(inner) = spec.inner_bytes.filter(|&i| primary <= i) {
        return Err(format!(
            "two thirds of its size ({}) are not larger than the level inside it ({})",
            size_text(primary),
            size_text(inner)
        ));
    }
    if primary.saturating_mul(2) > opts.max_bytes {
        return Err(format!(
            "two arrays of {} (two thirds of the {} one context keeps) exceed the memory \
             budget of {}",
            size_text(primary),
            size_text(reach),
            size_text(opts.max_bytes)
        ));
    }
    let mut arrays = vec![primary];
    if let Some(os) = spec
        .os_bytes
        .filter(|&o| o as f64 > reach as f64 * LARGER_OS)
    {
        let a = two_thirds(os);
        if a.saturating_mul(2) <= opts.max_bytes {
            arrays.push(a);
        }
    }
    for part in [2, 4] {
        let a = two_thirds(reach / part);
        let clear_of_inner = spec
            .inner_bytes
            .is_none_or(|i| a >= i.saturating_mul(INNER_MARGIN));
        if clear_of_inner && a > STRIDE_BYTES as u64 * 4 && !arrays.contains(&a) {
            arrays.push(a);
        }
    }
    Ok(SharingPlan {
        first,
        arrays,
        scopes: scope_tests(topo, first, spec.os_instance_of(first)),
    })
}
