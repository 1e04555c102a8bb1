//! Cache sizes and latencies by measurement (Servet §III-A) and shared caches (§III-B).
//!
//! [`measure_caches`] walks arrays of growing size with the mcalibrator traversal
//! ([`traverse`]) on one pinned context, finds the levels in the curve ([`curve`]: L1 from
//! the first rise, physically indexed levels with the probabilistic algorithm of
//! [`probabilistic`]) and sets them beside what the OS reports. [`shared`] finds which
//! contexts share each level by concurrent traversals.

pub mod check;
pub mod curve;
pub mod probabilistic;
pub mod shared;
pub mod tlb;
pub mod traverse;

use std::time::{Duration, Instant};

use topoprobe_model::{size_text, Budget, CacheSection, CostPlan, CostStep, OsView};

use crate::plan::{Rates, PROCESS_BYTES};

pub use curve::{FoundLevel, Method, Sample};
pub use tlb::TlbReach;
use topoprobe_sys::affinity::{pin_current_thread, AffinityError};
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};
use traverse::STRIDE_BYTES;

/// Which pages the arrays are walked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pages {
    /// Transparent huge pages where the kernel gives them (the cache levels, without TLB
    /// misses until far beyond the last level), then 4 KiB pages (the same walk plus the
    /// TLB misses: where the two curves part is the TLB's reach).
    #[default]
    Both,
    /// Transparent huge pages only (falls back to 4 KiB pages when they are refused).
    Huge,
    /// 4 KiB pages only: TLB reach and cache capacity are then not told apart.
    Small,
}

/// What [`measure_caches`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// The context to measure on.
    pub cpu: u32,
    /// Largest array walked, bytes (`None`: [`default_max`]).
    pub max_bytes: Option<u64>,
    /// Which pages to walk on.
    pub pages: Pages,
    /// Timed rounds per size (the fastest counts; two more up to 4 MiB, where they are
    /// cheap).
    pub rounds: usize,
    /// Accesses per timed round at most (at least [`MIN_STEPS`], at most a lap of the
    /// cycle): a round shorter than a lap samples the cycle's steady state as well.
    pub max_steps: usize,
    /// Cycles per ns of the timer, to give each level's latency in cycles too.
    pub ghz: Option<f64>,
    /// Time and memory the measurement may take ([`plan_caches`] fits the walk to it).
    pub budget: Budget,
    /// The rates the walk is planned at: [`Rates::ASSUMED`] unless the machine's speed
    /// was measured ([`crate::plan::Shape::rates`]).
    pub rates: Rates,
}

/// The budget of `topoprobe cache` by default: 15 s and 512 MiB.
pub const DEFAULT_BUDGET: Budget = Budget::new(15.0, 512 << 20);

/// Smallest largest array a walk may be asked for, bytes: the walk's first sizes step
/// finely up to 254 KiB to find the L1 ([`sizes`]), so a smaller limit finds nothing and
/// could not be kept to.
pub const MIN_MAX_BYTES: u64 = 256 << 10;

/// Fewest accesses of a timed round (about 20 µs in an L1).
pub const MIN_STEPS: usize = 1 << 14;

impl Default for CacheOptions {
    /// Huge pages then 4 KiB pages, arrays up to [`default_max`], three rounds of up to
    /// 65536 accesses per size: `topoprobe cache`, 4 to 10 s.
    fn default() -> Self {
        Self {
            cpu: 0,
            max_bytes: None,
            pages: Pages::Both,
            rounds: 3,
            max_steps: 1 << 16,
            ghz: None,
            budget: DEFAULT_BUDGET,
            rates: Rates::ASSUMED,
        }
    }
}

impl CacheOptions {
    /// The quick measurement of a description's default plugins: huge pages only (no TLB
    /// curve), arrays up to twice the largest cache the OS reports (at least 32 MiB, at
    /// most [`MAX_WALK_BYTES`]; the memory budget bounds it), two rounds of up to 32768
    /// accesses per size.
    #[must_use]
    pub fn quick(cpu: u32, os: Option<&OsView>) -> Self {
        Self {
            cpu,
            max_bytes: Some(
                largest_os_cache(os, None)
                    .unwrap_or(0)
                    .saturating_mul(2)
                    .clamp(32 << 20, MAX_WALK_BYTES),
            ),
            pages: Pages::Huge,
            rounds: 2,
            max_steps: 1 << 15,
            ghz: None,
            budget: DEFAULT_BUDGET,
            rates: Rates::ASSUMED,
        }
    }
}

/// Why caches could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The thread could not be pinned.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// The arrays could not be allocated.
    #[error(transparent)]
    Buffer(#[from] BufferError),
}

/// How the walk's pages came out (one verdict for every probe: [`crate::pages`]).
pub use crate::pages::HugePages;

/// The measured curves, the levels found in them and the cache section they make.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheReport {
    /// The curve the levels come from (on huge pages when they were granted): every size
    /// walked and its access time.
    pub samples: Vec<Sample>,
    /// The same sizes walked on 4 KiB pages, when measured beside huge pages (it shows
    /// the TLB's reach).
    pub small_pages: Option<Vec<Sample>>,
    /// Whether [`CacheReport::samples`] is on huge pages.
    pub huge_pages: HugePages,
    /// The levels the curve shows, innermost first.
    pub found: Vec<FoundLevel>,
    /// Where the 4 KiB-page walk parts from the huge-page walk: the TLB's reach.
    pub tlb: Vec<TlbReach>,
    /// The section for the description: measured levels beside the OS's (latencies in ns).
    pub section: CacheSection,
    /// How each level of the section compares with the OS, in its order.
    pub checks: Vec<check::LevelCheck>,
    /// Remarks for the user: where the curve and the OS disagree, and why it may be.
    pub notes: Vec<String>,
    /// Largest array walked, bytes.
    pub max_bytes: u64,
    /// Wall time of the measurement, seconds.
    pub seconds: f64,
    /// The plan, with what each sweep spent.
    pub cost: CostPlan,
}

/// The largest cache the OS reports for `cpu` (any CPU when `cpu` is `None`), bytes.
#[must_use]
pub fn largest_os_cache(os: Option<&OsView>, cpu: Option<u32>) -> Option<u64> {
    os?.caches
        .iter()
        .filter(|c| cpu.is_none_or(|cpu| c.cpus.contains(&cpu)))
        .filter_map(|c| c.size_bytes)
        .max()
}

/// The largest array a walk is asked for, whatever the cache: a walk's arrays are bounded
/// by its memory budget (which grows with the last-level cache, see
/// [`crate::plan::scaled_memory`]), not by a fixed size, so that a 1.5 GiB L3 is walked
/// past where the machine can afford it.
pub const MAX_WALK_BYTES: u64 = 64 << 30;

/// Largest array walked when not given: four times the largest cache the OS reports, at
/// least 64 MiB and at most [`MAX_WALK_BYTES`] (64 MiB when the OS reports none); the
/// memory budget bounds it in the plan.
#[must_use]
pub fn default_max(os: Option<&OsView>) -> u64 {
    largest_os_cache(os, None)
        .unwrap_or(0)
        .saturating_mul(4)
        .clamp(64 << 20, MAX_WALK_BYTES)
}

/// The sizes walked, none above `max`: 4 KiB steps offset by 2 KiB up to 256 KiB (the L1
/// size falls between two of them), then 1/16-octave steps to 16 MiB and 1/8-octave steps
/// beyond.
#[must_use]
pub fn sizes(max: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..64)
        .map(|k| k * 4096 + 2048)
        .take_while(|&b| b <= max)
        .collect();
    let mut s = 256.0 * 1024.0;
    while s <= max as f64 {
        v.push(s as u64 / 1024 * 1024);
        let step = if s < 16.0 * 1024.0 * 1024.0 {
            16.0
        } else {
            8.0
        };
        s *= 2f64.powf(1.0 / step);
    }
    v
}

/// How the cache walk runs on this machine, and what it will cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CachePlan {
    /// Largest array walked, bytes.
    pub max_bytes: u64,
    /// The sizes walked, ascending.
    pub sizes: Vec<u64>,
    /// Which pages the arrays are walked on.
    pub pages: Pages,
    /// Timed rounds per size.
    pub rounds: usize,
    /// Accesses per timed round at most.
    pub max_steps: usize,
    /// One step per sweep (huge pages, then 4 KiB pages).
    pub steps: Vec<CostStep>,
    /// What the budget changed or left out, for the user.
    pub notes: Vec<String>,
    /// The budget.
    pub budget: Budget,
}

impl CachePlan {
    /// The plan as a record.
    #[must_use]
    pub fn cost(&self) -> CostPlan {
        CostPlan::of(self.budget, self.steps.clone(), self.notes.clone())
    }
}

/// Time of one access of a walk over `bytes` on 4 KiB pages beyond the TLB's reach, as a
/// share of the same walk on huge pages.
const SMALL_PAGE_COST: f64 = 1.3;
/// Rounds of the sizes up to 4 MiB beyond the asked ones (cheap, they steady the inner
/// levels).
const SMALL_SIZE_EXTRA_ROUNDS: usize = 2;
/// Arrays up to this size get [`SMALL_SIZE_EXTRA_ROUNDS`].
const SMALL_SIZE: u64 = 4 << 20;

/// Accesses of the walk of one size: an untimed lap, then `rounds` timed rounds.
fn walk_loads(bytes: u64, rounds: usize, max_steps: usize) -> (usize, u64) {
    let positions = (bytes / traverse::STRIDE_BYTES as u64).max(1) as usize;
    let r = if bytes <= SMALL_SIZE {
        rounds + SMALL_SIZE_EXTRA_ROUNDS
    } else {
        rounds
    };
    let steps = positions.clamp(MIN_STEPS, max_steps.max(MIN_STEPS));
    (r, (positions.max(steps / 4) + r * steps) as u64)
}

/// Seconds of one sweep over `sizes` at rates `r` on a machine whose caches are `levels`.
fn sweep_seconds(
    r: &Rates,
    sizes: &[u64],
    rounds: usize,
    max_steps: usize,
    levels: &[u64],
    small: bool,
) -> f64 {
    let max = sizes.last().copied().unwrap_or(0);
    // Growing the cycle writes two random positions per position added.
    let grow = (max / traverse::STRIDE_BYTES as u64) as f64 * r.access_ns(max, levels) * 1e-9;
    let walks: f64 = sizes
        .iter()
        .map(|&b| {
            let (_, loads) = walk_loads(b, rounds, max_steps);
            let slower = if small && b > 16 << 20 {
                SMALL_PAGE_COST
            } else {
                1.0
            };
            loads as f64 * r.access_ns(b, levels) * slower * 1e-9
        })
        .sum();
    r.thread_start_s + r.touch_seconds(max, 1) + grow + walks
}

/// Plans the cache walk: the sizes up to `opts.max_bytes` (or [`default_max`] of the OS's
/// caches `levels`), within `opts.budget`. Over the budget, the 4 KiB-page sweep goes first
/// (no TLB reach), then rounds and accesses per size shrink, then the largest size; every
/// change is said in [`CachePlan::notes`]. The largest array never exceeds the memory budget
/// (less what the process needs besides).
#[must_use]
pub fn plan_caches(levels: &[u64], huge_pages: bool, opts: &CacheOptions) -> CachePlan {
    let budget = opts.budget;
    let mut notes = Vec::new();
    let largest = levels.iter().copied().max();
    let wanted = opts.max_bytes.unwrap_or_else(|| {
        largest
            .unwrap_or(0)
            .saturating_mul(4)
            .clamp(64 << 20, MAX_WALK_BYTES)
    });
    let room = budget.bytes.saturating_sub(PROCESS_BYTES).max(1 << 20);
    let mut max = wanted.min(room);
    if max < wanted {
        notes.push(format!(
            "the walk stops at {} (the {} memory budget) instead of {}{}",
            size_text(max),
            size_text(budget.bytes),
            size_text(wanted),
            match largest {
                Some(l) if 2 * l > max => format!(
                    ": the {} last level the OS lists is not walked past, its size is the \
                     OS's, unchecked",
                    size_text(l)
                ),
                _ => String::new(),
            }
        ));
    }
    let mut pages = opts.pages;
    if pages == Pages::Both && !huge_pages {
        pages = Pages::Small;
    }
    let mut rounds = opts.rounds.max(1);
    let mut max_steps = opts.max_steps.max(MIN_STEPS);
    let cost = |max: u64, pages: Pages, rounds: usize, steps: usize| -> Vec<CostStep> {
        let sz = sizes(max);
        let mut out = Vec::new();
        let n = sz.len() as u64;
        if pages != Pages::Small {
            out.push(CostStep::new(
                "cache",
                "caches: walk on huge pages",
                max,
                n,
                sweep_seconds(&opts.rates, &sz, rounds, steps, levels, false),
            ));
        }
        if pages != Pages::Huge {
            out.push(CostStep::new(
                "cache",
                "caches: walk on 4 KiB pages",
                max,
                n,
                sweep_seconds(&opts.rates, &sz, rounds, steps, levels, true),
            ));
        }
        out
    };
    let total = |steps: &[CostStep]| steps.iter().map(|s| s.seconds).sum::<f64>();
    let mut steps = cost(max, pages, rounds, max_steps);
    if total(&steps) > budget.seconds && pages == Pages::Both {
        pages = Pages::Huge;
        steps = cost(max, pages, rounds, max_steps);
        notes.push(format!(
            "walked on huge pages only (no TLB reach): both walks need {:.1} s, over the \
             {:.1} s budget",
            total(&cost(max, Pages::Both, rounds, max_steps)),
            budget.seconds
        ));
    }
    while total(&steps) > budget.seconds && (rounds > 1 || max_steps > MIN_STEPS) {
        if max_steps > MIN_STEPS {
            max_steps = (max_steps / 2).max(MIN_STEPS);
        } else {
            rounds -= 1;
        }
        steps = cost(max, pages, rounds, max_steps);
    }
    let before = max;
    while total(&steps) > budget.seconds && max > 4 << 20 {
        max = max / 4 * 3;
        steps = cost(max, pages, rounds, max_steps);
    }
    if max < before {
        notes.push(format!(
            "the walk stops at {} instead of {} to keep within the {:.1} s budget",
            size_text(max),
            size_text(before),
            budget.seconds
        ));
    }
    CachePlan {
        sizes: sizes(max),
        max_bytes: max,
        pages,
        rounds,
        max_steps,
        steps,
        notes,
        budget,
    }
}

/// Walks every size on `cpu` (one array of the largest size, its cycle grown size by
/// size) until `deadline`; returns the curve (cut short at the deadline) and, when huge
/// pages were asked for, the share of the array the kernel backed with them.
fn sweep(
    cpu: u32,
    sizes: &[u64],
    huge: bool,
    rounds: usize,
    max_steps: usize,
    deadline: Instant,
) -> Result<(Vec<Sample>, Option<f64>), CacheError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<(Vec<Sample>, Option<f64>), CacheError> {
            pin_current_thread(cpu)?;
            let max = sizes.last().copied().unwrap_or(STRIDE_BYTES as u64);
            let mut buf = Buffer::new(
                max as usize,
                PagePlacement {
                    node: None,
                    huge_pages: Some(huge),
                },
            )?;
            buf.touch();
            let fraction = huge.then(|| crate::pages::share_of(&buf).unwrap_or(0.0));
            let mut cycle = traverse::Cycle::new(buf.words_mut(), 0x5eed ^ u64::from(cpu));
            let mut out = Vec::with_capacity(sizes.len());
            for &bytes in sizes {
                if Instant::now() > deadline {
                    break;
                }
                let positions = cycle.grow(buf.words_mut(), bytes as usize);
                let (r, _) = walk_loads(bytes, rounds, max_steps);
                let steps = positions.clamp(MIN_STEPS, max_steps.max(MIN_STEPS));
                let ns = traverse::ns_per_access(buf.words(), positions, r, steps);
                out.push(Sample { bytes, ns });
            }
            Ok((out, fraction))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// A sweep may run this many times its planned time before its curve is cut short.
const SWEEP_SLACK: f64 = 2.0;

/// Runs one planned sweep, recording what it spent; notes a curve cut short.
fn planned_sweep(
    opts: &CacheOptions,
    plan: &mut CachePlan,
    index: usize,
    huge: bool,
    notes: &mut Vec<String>,
) -> Result<(Vec<Sample>, Option<f64>), CacheError> {
    let started = Instant::now();
    let limit = plan
        .steps
        .get(index)
        .map_or(f64::MAX, |s| s.seconds * SWEEP_SLACK);
    let deadline = started + Duration::from_secs_f64(limit.min(1e6));
    let out = sweep(
        opts.cpu,
        &plan.sizes,
        huge,
        plan.rounds,
        plan.max_steps,
        deadline,
    )?;
    if out.0.len() < plan.sizes.len() {
        let note = format!(
            "the walk on {} pages stopped {} ({} of {}): it ran {:.1} s, twice its plan; \
             the machine is slower than planned",
            if huge { "huge" } else { "4 KiB" },
            out.0.last().map_or_else(
                || "before its first size".into(),
                |s| format!("at {}", check::size_text(s.bytes))
            ),
            out.0.len(),
            topoprobe_model::format::plural(plan.sizes.len(), "size"),
            started.elapsed().as_secs_f64()
        );
        notes.push(note.clone());
        if let Some(s) = plan.steps.get_mut(index) {
            s.note = Some(note);
        }
    }
    if let Some(s) = plan.steps.get_mut(index) {
        s.record(
            started.elapsed().as_secs_f64(),
            topoprobe_sys::usage::peak_resident_bytes(),
        );
    }
    Ok(out)
}

/// Measures the cache levels on `opts.cpu` and sets them beside the OS's view of that CPU,
/// as [`plan_caches`] plans it within `opts.budget`.
///
/// # Errors
///
/// [`CacheError::Affinity`] when the thread cannot be pinned to the context,
/// [`CacheError::Buffer`] when the array cannot be allocated.
pub fn measure_caches(os: Option<&OsView>, opts: &CacheOptions) -> Result<CacheReport, CacheError> {
    let started = Instant::now();
    let levels = os.map_or_else(Vec::new, |os| crate::plan::cache_sizes(os, opts.cpu));
    let thp = crate::memory::thp_available();
    let mut plan = plan_caches(&levels, thp, opts);
    let max = plan.max_bytes;
    let want_huge = plan.pages != Pages::Small;
    let mut huge_pages = HugePages::Unavailable(if opts.pages != Pages::Small {
        "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled)".into()
    } else {
        "4 KiB pages were asked for".into()
    });
    let mut notes = Vec::new();
    let mut huge_curve = None;
    if want_huge && thp {
        let (curve, fraction) = planned_sweep(opts, &mut plan, 0, true, &mut notes)?;
        huge_pages = HugePages::of_share(fraction, "array");
        if huge_pages.granted() {
            huge_curve = Some(curve);
        }
    }
    let small = if huge_curve.is_none() || plan.pages == Pages::Both {
        let index = plan.steps.len().saturating_sub(1);
        if huge_curve.is_none() && plan.pages == Pages::Huge {
            // Huge pages were refused: the one planned sweep runs on 4 KiB pages.
            if let Some(s) = plan.steps.get_mut(index) {
                "caches: walk on 4 KiB pages".clone_into(&mut s.what);
            }
        }
        Some(planned_sweep(opts, &mut plan, index, false, &mut notes)?.0)
    } else {
        None
    };
    let (samples, small_pages) = match (huge_curve, small) {
        (Some(h), s) => (h, s),
        (None, Some(s)) => (s, None),
        (None, None) => (Vec::new(), None),
    };
    let a = analyse(
        os,
        opts.cpu,
        &samples,
        small_pages.as_deref(),
        &huge_pages,
        opts.ghz,
    );
    let mut all_notes = plan.notes.clone();
    all_notes.extend(notes);
    all_notes.extend(a.checked.notes);
    Ok(CacheReport {
        samples,
        small_pages,
        huge_pages,
        found: a.found,
        tlb: a.tlb,
        section: a.checked.section,
        checks: a.checked.checks,
        notes: all_notes,
        max_bytes: max,
        seconds: started.elapsed().as_secs_f64(),
        cost: plan.cost(),
    })
}

/// What the curves of one context show.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The rises of the main curve, innermost first.
    pub found: Vec<FoundLevel>,
    /// Where the 4 KiB-page curve parts from the main one.
    pub tlb: Vec<TlbReach>,
    /// The levels set beside the OS's, with the notes.
    pub checked: check::Checked,
}

/// Finds the levels of `curve` (on huge pages when `huge` says so), the TLB's reach from
/// `small` (the same sizes on 4 KiB pages), and sets them beside the OS's caches of `cpu`
/// (`ghz`: the timer's cycles per ns, for latencies in cycles). Pure: the tests feed it
/// curves measured elsewhere.
#[must_use]
pub fn analyse(
    os: Option<&OsView>,
    cpu: u32,
    curve: &[Sample],
    small: Option<&[Sample]>,
    huge: &HugePages,
    ghz: Option<f64>,
) -> Analysis {
    let found = curve::levels(curve);
    let tlb = if matches!(huge, HugePages::Granted { .. }) {
        tlb::reach(curve, small)
    } else {
        Vec::new()
    };
    let checked = check::section(os, cpu, curve, &found, &tlb, huge, ghz);
    Analysis {
        found,
        tlb,
        checked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cover_l1_finely_then_geometrically() {
        let s = sizes(1 << 30);
        assert_eq!(&s[..3], &[6144, 10240, 14336]);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(*s.last().unwrap() <= 1 << 30);
        assert!(s.len() < 260, "{}", s.len());
        // Never beyond the limit.
        assert_eq!(sizes(10 << 10), [6144, 10240]);
        assert!(sizes(MIN_MAX_BYTES).iter().all(|&b| b <= MIN_MAX_BYTES));
    }
}
