//! The argument generator of the `args_gen` target: CPU lists and masks with long
//! repetitions, as `--cpus`, a sysfs `online` file or a `cpumap` hold them. A few input
//! bytes stand for an argument of up to [`BUDGET`] bytes (`0-1048575,` a thousand times
//! is 10 KB), so the fuzzer reaches the lists whose cost once grew with the square of
//! their length.
//!
//! Input layout: byte 0 picks the form ([`Form`], `mod 3`); then every 3 bytes
//! `kind, a, b` are one item: `kind mod 4` = 0 the CPU `N(a)`, 1 the range `N(a)-N(b)`,
//! 2 the strided range `N(a)-N(b):u/g` (`(u, g)` = [`STRIDES`]`[kind / 4 mod 8]`), 3 the
//! raw token [`TOKENS`]`[a]`; the item is written [`REPEATS`]`[b mod 16]` times for kinds 0
//! and 3, `REPEATS[kind / 4 mod 16]` times for a range, `REPEATS[4 + kind / 32]` for a
//! strided one. `N(x)` is
//! [`NUMBERS`]`[x mod 32]`. Masks are written from the same items: a CPU or range as the
//! words `ffffffff` / `N(a)` in hexadecimal.

use std::fmt::Write as _;

use topoprobe_model::MAX_CPU;

/// The longest argument generated: 128 KiB, Linux's limit on one argument
/// (`MAX_ARG_STRLEN`), and far above a sysfs file (one page).
pub const BUDGET: usize = 128 << 10;

/// The most items one input makes.
const MAX_ITEMS: usize = 256;

/// CPU numbers an item names.
pub const NUMBERS: [u64; 32] = [
    0,
    1,
    2,
    3,
    7,
    31,
    32,
    63,
    64,
    65,
    127,
    1023,
    1024,
    4095,
    4096,
    65_535,
    65_536,
    MAX_CPU as u64 - 64,
    MAX_CPU as u64 - 1,
    MAX_CPU as u64,
    MAX_CPU as u64 + 1,
    u32::MAX as u64,
    u32::MAX as u64 + 1,
    u64::MAX,
    5,
    15,
    16,
    100,
    255,
    256,
    511,
    512,
];

/// How many times an item is written (each capped by [`BUDGET`]).
pub const REPEATS: [usize; 16] = [
    1,
    1,
    2,
    3,
    10,
    100,
    1000,
    1001,
    4096,
    10_000,
    65_536,
    1 << 20,
    1,
    2,
    5,
    50,
];

/// The strides of a strided range, `(used, group)`.
pub const STRIDES: [(u32, u32); 8] = [
    (1, 2),
    (1, 1),
    (63, 64),
    (1, 64),
    (3, 5),
    (0, 1),
    (2, 1),
    (1, MAX_CPU),
];

/// Raw tokens: malformed items, padding, and whole ranges.
pub const TOKENS: [&str; 16] = [
    "",
    " ",
    "-",
    "1-",
    "-1",
    "0-1048575",
    "0-1048575:1/2",
    "0-1048575:63/64",
    "0x1",
    "\n",
    "\0",
    "1:1/1",
    "0-0:0/0",
    "3-1",
    "00000001",
    "1048575-1048575:1/1048575",
];

/// Where the argument goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `--cpus`, `--pin` and the other list arguments: [`topoprobe_model::parse_cpu_list`].
    List,
    /// The `online` file of a sysfs tree, through the OS view reader ([`crate::sysfs`]).
    Online,
    /// A CPU mask (`cpumap`, `--mask`): [`topoprobe_model::parse_cpu_mask`].
    Mask,
}

/// A generated argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// Where it goes.
    pub form: Form,
    /// The argument.
    pub text: String,
    /// The distinct items, each written once, in order of first appearance: the same
    /// set of CPUs as `text`, which repeats them (when `text` is a list).
    pub distinct: String,
    /// The CPUs a parser that sets them one by one would visit: the sum of the items'
    /// spans (a thousand whole ranges: a billion).
    pub naive_work: u64,
}

/// One item as text in `form`, and the CPUs it spans.
fn item(form: Form, kind: u8, a: u8, b: u8) -> (String, u64) {
    let n = |x: u8| NUMBERS[usize::from(x) % NUMBERS.len()];
    let span = |lo: u64, hi: u64| hi.saturating_sub(lo).saturating_add(1).min(1 << 20);
    let param = kind >> 2;
    match (form, kind % 4) {
        (_, 3) => (TOKENS[usize::from(a) % TOKENS.len()].to_string(), 1 << 20),
        (Form::Mask, 0) => (format!("{:x}", n(a) & 0xffff_ffff), 32),
        (Form::Mask, _) => ("ffffffff".to_string(), 32),
        (_, 0) => (n(a).to_string(), 1),
        (_, 1) => (format!("{}-{}", n(a), n(b)), span(n(a), n(b))),
        _ => {
            let (used, group) = STRIDES[usize::from(param % 8)];
            (
                format!("{}-{}:{used}/{group}", n(a), n(b)),
                span(n(a), n(b)),
            )
        }
    }
}

/// The argument `data` describes (see the module's documentation).
#[must_use]
pub fn generate(data: &[u8]) -> Generated {
    let (&first, rest) = data.split_first().unwrap_or((&0, &[]));
    let form = match first % 3 {
        0 => Form::List,
        1 => Form::Online,
        _ => Form::Mask,
    };
    let mut text = String::new();
    let mut distinct: Vec<String> = Vec::new();
    let mut naive_work = 0_u64;
    let mut items = 0_usize;
    for chunk in rest.chunks_exact(3).take(MAX_ITEMS) {
        let (kind, a, b) = (chunk[0], chunk[1], chunk[2]);
        let (piece, span) = item(form, kind, a, b);
        let times = if kind % 4 == 1 {
            REPEATS[usize::from(kind >> 2) % REPEATS.len()]
        } else if kind % 4 == 2 {
            REPEATS[usize::from(kind >> 5) + 4]
        } else {
            REPEATS[usize::from(b) % REPEATS.len()]
        };
        let room = BUDGET.saturating_sub(text.len()) / (piece.len() + 1);
        let times = times.min(room);
        for _ in 0..times {
            if items > 0 {
                text.push(',');
            }
            text.push_str(&piece);
            items += 1;
        }
        naive_work = naive_work.saturating_add(span.saturating_mul(times as u64));
        if times > 0 && !distinct.contains(&piece) {
            distinct.push(piece);
        }
    }
    if form == Form::Online {
        text.push('\n');
    }
    Generated {
        form,
        text,
        distinct: distinct.join(","),
        naive_work,
    }
}

/// The input of `items` (`(kind, a, b)`) in `form`: how the seeds and tests write one.
#[must_use]
pub fn input(form: Form, items: &[(u8, u8, u8)]) -> Vec<u8> {
    let mut out = vec![form as u8];
    for &(k, a, b) in items {
        out.extend_from_slice(&[k, a, b]);
    }
    out
}

/// The sysfs target's input of an `online` file holding `online` (and a CPU 0 with
/// topology files), see [`crate::SYSFS_FILES`].
#[must_use]
pub fn online_tree(online: &str) -> Vec<u8> {
    let mut out = online.as_bytes().to_vec();
    for piece in ["0\n", "0\n", "0\n"] {
        out.push(0xff);
        out.extend_from_slice(piece.as_bytes());
    }
    out
}

/// A short description of `g` for a failed assertion.
#[must_use]
pub fn describe(g: &Generated) -> String {
    let mut s = format!("{:?}, {} bytes: ", g.form, g.text.len());
    let head: String = g.text.chars().take(120).collect();
    let _ = write!(s, "{head:?}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_range_a_thousand_times() {
        // kind 1 with REPEATS[6] = 1000: `0-1048575` (NUMBERS[0], NUMBERS[19]).
        let g = generate(&input(Form::List, &[(1 | (6 << 2), 0, 19)]));
        assert_eq!(g.text, vec!["0-1048575"; 1000].join(","));
        assert_eq!(g.distinct, "0-1048575");
        assert_eq!(g.naive_work, 1000 << 20);
    }

    #[test]
    fn repetitions_stop_at_the_budget() {
        let g = generate(&input(Form::Online, &[(3, 5, 11), (3, 5, 11)]));
        assert!(g.text.len() <= BUDGET + 1 && g.text.len() > BUDGET - 16);
        assert!(g.text.ends_with('\n'));
        let g = generate(&input(Form::Mask, &[(1 | (10 << 2), 0, 0)]));
        assert!(g.text.starts_with("ffffffff,ffffffff"));
    }
}
