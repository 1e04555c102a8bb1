//! The structure-aware targets: generated descriptions through the loader and the
//! placement's output, generated CPU lists through their parsers.

use std::path::Path;

use topoprobe_model::format::{hwloc_xml, json};
use topoprobe_model::limits::{MAX_CONTEXTS, MAX_NODES};
use topoprobe_model::MAX_CPU;
use topoprobe_place::{place, Policy, Request};
use topoprobe_view::results::placement::{render, Form};

use crate::alloc;
use crate::args_gen::Form as ArgForm;
use crate::{args_gen as cpu_lists, json_gen as descriptions};

/// The policies a generated description is placed with (the input picks one).
const POLICIES: [Policy; 6] = [
    Policy::ConHwc,
    Policy::Sequential,
    Policy::ConCoreHwc,
    Policy::BalanceCore,
    Policy::RrCore,
    Policy::RrScale,
];

/// The longest mask `place --format mask` may print: `0x`, a digit per 4 CPUs up to
/// [`MAX_CPU`], a newline.
pub const MASK_MAX: usize = 2 + MAX_CPU as usize / 4 + 1 + 1;

/// The longest line of the hwloc XML of a description: four CPU sets of [`MAX_CPU`] CPUs
/// (`0x%08x,` per 32 CPUs) and the rest of an object's attributes.
pub const HWLOC_LINE_MAX: usize = 4 * (MAX_CPU as usize / 32 + 1) * 11 + 4096;

/// A generated description ([`descriptions::generate`]) through the loader, which must hold
/// no more than [`alloc::reading_bound`] of the text within the list limits (the copies
/// of a list element past [`MAX_CONTEXTS`] are refused, so they must not cost memory);
/// a description it accepts has its OS numbers within the limits, and the placement
/// `place --format mask` and `--format list` print over it, and its hwloc XML, are
/// bounded by them.
///
/// # Panics
///
/// When the loader or the output breaks its contract: that is the finding the fuzzer
/// looks for.
pub fn json_gen(data: &[u8]) {
    let g = descriptions::generate(data);
    let path = Path::new("generated.json");
    let (loaded, peak) = alloc::measure(|| json::from_json_str(&g.text, path));
    let bound = alloc::reading_bound(g.text.len() - g.excess);
    assert!(
        peak <= bound,
        "reading {} bytes ({} of them list elements past the limit) held {peak} bytes, \
         more than {bound}",
        g.text.len(),
        g.excess
    );
    let Ok(topo) = loaded else { return };
    assert!(topo.num_contexts() <= MAX_CONTEXTS);
    assert!(topo.contexts().iter().all(|c| c.os_id <= MAX_CPU));
    assert!(topo
        .nodes()
        .iter()
        .filter_map(|n| n.os_id)
        .all(|n| (n as usize) < MAX_NODES));
    let policy = POLICIES[g.policy % POLICIES.len()];
    if let Ok(p) = place(&topo, &Request::new(policy)) {
        let mask = render(&p, Form::Mask);
        assert!(mask.len() <= MASK_MAX, "a mask of {} bytes", mask.len());
        let list = render(&p, Form::List);
        assert!(p.contexts.len() <= MAX_CONTEXTS);
        // Seven digits and a comma per CPU at most.
        assert!(list.len() <= 8 * p.contexts.len() + 1, "{list}");
    }
    let xml = hwloc_xml::render(&topo);
    let longest = xml.lines().map(str::len).max().unwrap_or(0);
    assert!(longest <= HWLOC_LINE_MAX, "an XML line of {longest} bytes");
}

/// A generated argument ([`cpu_lists::generate`]) through its parser: a list that parses
/// names at most `MAX_CPU + 1` CPUs, ascending, the same as its items written once
/// (repeating an item changes nothing), and writes back to itself; a mask names CPUs up
/// to [`MAX_CPU`]; an `online` file goes through the whole OS view reader. The work of a
/// parser is not counted here: a list repeating a whole range a thousand times, a
/// billion CPUs for a parser that sets them one by one, runs past AFL's time limit
/// (`-t 2000`) and is reported as a hang.
///
/// # Panics
///
/// When a parser breaks its contract: that is the finding the fuzzer looks for.
pub fn args_gen(data: &[u8]) {
    let g = cpu_lists::generate(data);
    match g.form {
        ArgForm::List => {
            let Ok(cpus) = topoprobe_model::parse_cpu_list(&g.text) else {
                return;
            };
            assert!(cpus.len() <= MAX_CPU as usize + 1);
            assert!(cpus.windows(2).all(|w| w[0] < w[1]));
            let once = topoprobe_model::parse_cpu_list(&g.distinct);
            assert_eq!(once.as_ref(), Ok(&cpus), "{}", cpu_lists::describe(&g));
            let again = topoprobe_model::format_cpu_list(&cpus);
            assert_eq!(topoprobe_model::parse_cpu_list(&again).as_ref(), Ok(&cpus));
        }
        ArgForm::Online => crate::sysfs(&cpu_lists::online_tree(&g.text)),
        ArgForm::Mask => {
            if let Ok(cpus) = topoprobe_model::parse_cpu_mask(&g.text) {
                assert!(cpus.len() <= MAX_CPU as usize + 1);
                assert!(cpus.windows(2).all(|w| w[0] < w[1]));
                assert!(cpus.iter().all(|&c| c <= MAX_CPU));
            }
        }
    }
}
