//! The grammar of CPU-set expressions (written out in the module documentation of
//! [`crate::cpuset`]): text to [`Term`]s, before any topology is looked at.

use topoprobe_model::MAX_CPU;

use super::ast::{Atom, Domain, DomainKind, IndexItem, Op, OsItem, Selection, Step, Term};
use super::error::CpuSetError;
use super::lexer::Cursor;
use super::objects::ObjectType;
use super::MAX_EXPR_BYTES;

/// Parses an expression into its terms.
///
/// # Errors
///
/// [`CpuSetError`] naming the term at fault: text over [`MAX_EXPR_BYTES`], a character
/// that is not ASCII, an empty expression, or a term that follows no rule of the grammar.
pub(crate) fn parse_terms(text: &str) -> Result<Vec<Term>, CpuSetError> {
    if text.len() > MAX_EXPR_BYTES {
        return Err(CpuSetError::syntax(
            "",
            format!(
                "the expression is {} bytes long; at most {MAX_EXPR_BYTES} are read",
                text.len()
            ),
        ));
    }
    if let Some((at, ch)) = text.char_indices().find(|(_, c)| !c.is_ascii()) {
        return Err(CpuSetError::syntax(
            text,
            format!("{ch:?} at byte {at}: an expression is written in ASCII"),
        ));
    }
    let mut c = Cursor::new(text);
    let mut terms = Vec::new();
    let mut after_at = c.skip_separators();
    if after_at {
        return Err(CpuSetError::syntax(
            text,
            "`@` joins two terms: a term must come before it",
        ));
    }
    while !c.at_end() {
        let start = c.pos();
        let op = operator(&mut c);
        let atom = atom(&mut c, start)?;
        terms.push(Term {
            op,
            atom,
            text: c.since(start).to_string(),
        });
        if c.eat(b',') {
            if c.at_term_end() || c.peek() == Some(b',') {
                return Err(CpuSetError::syntax(
                    c.term_from(start),
                    "a comma must be followed by a CPU, an index or another term",
                ));
            }
            continue;
        }
        if !c.at_term_end() {
            return Err(unexpected(&c, start));
        }
        after_at = c.skip_separators();
        if after_at && c.at_end() {
            return Err(CpuSetError::syntax(
                text,
                "`@` joins two terms: a term must come after it",
            ));
        }
    }
    if terms.is_empty() {
        return Err(CpuSetError::syntax(
            "",
            "the expression is empty: name CPUs (`0-3`, `0x3c0f`, `package:0`, `S0:0-3`...)",
        ));
    }
    Ok(terms)
}

/// The error for an unexpected character in the term that started at `start`.
fn unexpected(c: &Cursor<'_>, start: usize) -> CpuSetError {
    let ch = c
        .peek()
        .map_or_else(|| "the end".to_string(), |b| format!("{:?}", char::from(b)));
    let read = c.since(start);
    let reason = if read.is_empty() || (read.len() == 1 && "+~^x".contains(read)) {
        format!(
            "unexpected {ch}: a term is a CPU number, a mask (0x...) or a name (`package:1`, \
             `S0:0-3`, `all`), after an optional + ~ x or ^"
        )
    } else {
        format!("unexpected {ch} after `{read}`")
    };
    CpuSetError::syntax(c.term_from(start), reason)
}

/// Reads a term's operator: `+`, `~`, `x`, `^`, or none (union).
fn operator(c: &mut Cursor<'_>) -> Op {
    if c.eat(b'+') {
        Op::Union
    } else if c.eat(b'~') {
        Op::Clear
    } else if c.eat(b'^') {
        Op::Xor
    } else if c.peek() == Some(b'x') && c.peek_at(1).is_some_and(|b| b.is_ascii_alphanumeric()) {
        c.advance(1);
        Op::Intersect
    } else {
        Op::Union
    }
}

/// Reads what a term names.
fn atom(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    if c.looking_at("0x") {
        return mask(c, start);
    }
    match c.peek() {
        Some(b) if b.is_ascii_digit() => os_list(c, start),
        Some(b) if b.is_ascii_alphabetic() => named(c, start),
        _ => Err(if c.at_term_end() {
            CpuSetError::syntax(
                c.term_from(start),
                "an operator must be followed by what it applies to",
            )
        } else {
            unexpected(c, start)
        }),
    }
}

/// A number that must be there.
fn required(c: &mut Cursor<'_>, start: usize, what: &str) -> Result<u32, CpuSetError> {
    match c.number() {
        Ok(Some(n)) => Ok(n),
        Ok(None) => Err(CpuSetError::syntax(
            c.term_from(start),
            format!("expected {what} after `{}`", c.since(start)),
        )),
        Err(e) => Err(CpuSetError::syntax(c.term_from(start), e)),
    }
}

/// Whether a comma at the cursor continues a list of numbers (a digit follows it).
fn list_goes_on(c: &Cursor<'_>) -> bool {
    c.peek() == Some(b',') && c.peek_at(1).is_some_and(|b| b.is_ascii_digit())
}

/// `0-3,8,10-15:2/4`: operating-system CPU numbers, as Linux writes lists.
fn os_list(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    let mut items = Vec::new();
    loop {
        let item_start = c.pos();
        let lo = required(c, start, "a CPU number")?;
        if !c.eat(b'-') {
            items.push(OsItem::One(lo));
        } else {
            let hi = required(c, start, "the end of the range")?;
            if lo > hi {
                return Err(CpuSetError::syntax(
                    c.term_from(start),
                    format!(
                        "the range {} starts at {lo}, after its end {hi}",
                        c.since(item_start)
                    ),
                ));
            }
            let (used, group) = if c.eat(b':') {
                let used = required(c, start, "USED of a stride USED/GROUP")?;
                if !c.eat(b'/') {
                    return Err(CpuSetError::syntax(
                        c.term_from(start),
                        "a stride is written USED/GROUP (`0-15:2/4`: in each 4 CPUs, the first 2)",
                    ));
                }
                let group = required(c, start, "GROUP of a stride USED/GROUP")?;
                if used == 0 || used > group {
                    return Err(CpuSetError::syntax(
                        c.term_from(start),
                        format!("a stride USED/GROUP needs 0 < USED <= GROUP, not {used}/{group}"),
                    ));
                }
                (used, group)
            } else {
                (1, 1)
            };
            items.push(OsItem::Range {
                lo,
                hi,
                used,
                group,
            });
        }
        if !list_goes_on(c) {
            return Ok(Atom::Os(items));
        }
        c.advance(1);
    }
}

/// Whether the text after a comma at the cursor is one more word of a mask: `0x` (or not)
/// and at most 8 hexadecimal digits, then a comma or the end of the term (an empty word
/// only before a comma).
fn mask_goes_on(c: &Cursor<'_>) -> bool {
    if c.peek() != Some(b',') {
        return false;
    }
    let mut probe = c.clone();
    probe.advance(1);
    if probe.looking_at("0x") {
        probe.advance(2);
    }
    let digits = probe.hex_digits().len();
    digits <= 8 && (probe.peek() == Some(b',') || (digits > 0 && probe.at_term_end()))
}

/// `0x3c0f` (one number of any length, as `place --format mask` prints) or hwloc's
/// 32-bit words, most significant first: `0xffffffff,0x0000000f`, `0xff0,,0x13`.
fn mask(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    if c.looking_at("0xf...f") {
        return Err(CpuSetError::syntax(
            c.term_from(start),
            "infinite masks (0xf...f) name CPUs no machine has; name the CPUs (`all`, `0-63`)",
        ));
    }
    c.advance(2);
    let mut words = vec![c.hex_digits()];
    if words[0].is_empty() {
        return Err(CpuSetError::syntax(
            c.term_from(start),
            "expected hexadecimal digits after 0x",
        ));
    }
    while mask_goes_on(c) {
        c.advance(1);
        if c.looking_at("0x") {
            c.advance(2);
        }
        words.push(c.hex_digits());
    }
    if words.len() > 1 {
        if let Some(long) = words.iter().find(|w| w.len() > 8) {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                format!(
                    "{long}: a mask in comma-separated words has at most 8 hexadecimal \
                     digits (32 CPUs) per word"
                ),
            ));
        }
    }
    let mut bits = Vec::new();
    let mut base: u64 = 0;
    for word in words.iter().rev() {
        for (i, digit) in word.bytes().rev().enumerate() {
            let v = char::from(digit).to_digit(16).unwrap_or(0);
            for b in 0..4 {
                if v & (1 << b) != 0 {
                    let cpu = base + 4 * i as u64 + b;
                    if cpu > u64::from(MAX_CPU) {
                        return Err(CpuSetError::syntax(
                            c.term_from(start),
                            format!("the mask names CPU {cpu}, above {MAX_CPU}"),
                        ));
                    }
                    bits.push(u32::try_from(cpu).unwrap_or(MAX_CPU));
                }
            }
        }
        base += if words.len() > 1 {
            32
        } else {
            4 * word.len() as u64
        };
    }
    bits.sort_unstable();
    Ok(Atom::Mask(bits))
}

/// A term that starts with a letter: `all`, an hwloc location, or a likwid form.
fn named(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    let word_start = c.pos();
    let word = c.word().unwrap_or("");
    if c.peek() == Some(b':') {
        match word {
            "E" => return expression(c, start),
            "L" => return logical(c, start),
            _ => {}
        }
    }
    if let Some(kind) = domain_kind(word) {
        return domain(c, start, kind, word);
    }
    if (word.eq_ignore_ascii_case("all") || word.eq_ignore_ascii_case("root"))
        && c.peek() != Some(b':')
    {
        return Ok(Atom::All);
    }
    c.reset(word_start);
    location(c, start)
}

/// The kind of a likwid domain tag (`N`, `S1`, `C0`...): an upper-case letter, then
/// digits.
fn domain_kind(word: &str) -> Option<DomainKind> {
    let (&first, rest) = word.as_bytes().split_first()?;
    if !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    DomainKind::of_letter(first)
}

/// Reads the domain of a tag just read (`N`, `S1`).
fn domain_of(
    c: &Cursor<'_>,
    start: usize,
    kind: DomainKind,
    tag: &str,
) -> Result<Domain, CpuSetError> {
    let digits = &tag[1..];
    if kind == DomainKind::Node {
        if !digits.is_empty() {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                format!("{tag}: the node domain is `N`, without a number"),
            ));
        }
        return Ok(Domain { kind, index: 0 });
    }
    if digits.is_empty() {
        return Err(CpuSetError::syntax(
            c.term_from(start),
            format!(
                "{tag} needs a number: {tag}0, {tag}1... (`{tag}:scatter` spreads over all of them)"
            ),
        ));
    }
    let mut digits_cursor = Cursor::new(digits);
    let index = digits_cursor
        .number()
        .map_err(|e| CpuSetError::syntax(c.term_from(start), e))?
        .unwrap_or(0);
    Ok(Domain { kind, index })
}

/// likwid's `S1`, `S1:`, `S1:0-3`, `S:scatter`.
fn domain(
    c: &mut Cursor<'_>,
    start: usize,
    kind: DomainKind,
    tag: &str,
) -> Result<Atom, CpuSetError> {
    if tag.len() == 1 && c.peek() == Some(b':') {
        let save = c.pos();
        c.advance(1);
        if let Some(method) = c.word() {
            return scatter(c, start, kind, method);
        }
        c.reset(save);
    }
    let domain = domain_of(c, start, kind, tag)?;
    if !c.eat(b':') || c.at_term_end() || c.peek() == Some(b',') {
        return Ok(Atom::Domain(domain, None));
    }
    let items = likwid_indexes(c, start)?;
    Ok(Atom::Domain(domain, Some(items)))
}

/// `S:scatter[:count]` (the method word just read).
fn scatter(
    c: &mut Cursor<'_>,
    start: usize,
    kind: DomainKind,
    method: &str,
) -> Result<Atom, CpuSetError> {
    match method {
        "scatter" => {}
        "balanced" | "cbalanced" => {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                format!(
                    "likwid's `{method}` is not supported: use `{}:scatter` or indexes \
                     (`S0:0-3@S1:0-3`)",
                    kind.letter()
                ),
            ))
        }
        other => {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                format!(
                    "unknown method {other:?}: `{}:scatter` is the one supported",
                    kind.letter()
                ),
            ))
        }
    }
    let count = if c.eat(b':') {
        let n = required(c, start, "a number of CPUs")?;
        if n == 0 {
            return Err(CpuSetError::syntax(c.term_from(start), "0 CPUs asked for"));
        }
        Some(n)
    } else {
        None
    };
    Ok(Atom::Scatter { kind, count })
}

/// likwid's index list in a domain: `0-3`, `0,2,4`, `3-0` (descending).
fn likwid_indexes(c: &mut Cursor<'_>, start: usize) -> Result<Vec<IndexItem>, CpuSetError> {
    let mut items = Vec::new();
    loop {
        let a = required(c, start, "an index")?;
        if c.eat(b'-') {
            let b = required(c, start, "the end of the range")?;
            items.push(IndexItem::Range(a, b));
        } else {
            items.push(IndexItem::One(a));
        }
        if !list_goes_on(c) {
            return Ok(items);
        }
        c.advance(1);
    }
}

/// Reads a domain tag after `E:` or `L:`.
fn tag<'a>(c: &mut Cursor<'a>, start: usize) -> Result<Option<(DomainKind, &'a str)>, CpuSetError> {
    let save = c.pos();
    match c.word() {
        Some(w) => match domain_kind(w) {
            Some(k) => Ok(Some((k, w))),
            None => Err(CpuSetError::syntax(
                c.term_from(start),
                format!("{w:?} is no likwid domain (N, S<i>, D<i>, C<i>, M<i>)"),
            )),
        },
        None => {
            c.reset(save);
            Ok(None)
        }
    }
}

/// likwid's `L:S0:0-3` (or `L:0-3`, in `N`).
fn logical(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    c.advance(1);
    let domain = match tag(c, start)? {
        Some((kind, t)) => {
            let d = domain_of(c, start, kind, t)?;
            if !c.eat(b':') {
                return Err(CpuSetError::syntax(
                    c.term_from(start),
                    "expected `:` and indexes: L:<domain>:<indexes> (`L:S0:0-3`)",
                ));
            }
            d
        }
        None => Domain {
            kind: DomainKind::Node,
            index: 0,
        },
    };
    let items = likwid_indexes(c, start)?;
    Ok(Atom::Domain(domain, Some(items)))
}

/// likwid's `E:<domain>[:count[:chunk:stride[:offset]]]`.
fn expression(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    c.advance(1);
    let Some((kind, t)) = tag(c, start)? else {
        return Err(CpuSetError::syntax(
            c.term_from(start),
            "expected a domain: E:<domain>[:count[:chunk:stride]] (`E:S0:4:1:2`)",
        ));
    };
    let domain = domain_of(c, start, kind, t)?;
    let mut numbers = Vec::new();
    while c.eat(b':') {
        numbers.push(required(c, start, "a number")?);
    }
    let (count, chunk, stride, offset) =
        match numbers[..] {
            [] => (None, 1, 1, 0),
            [n] => (Some(n), 1, 1, 0),
            [n, chunk, stride] => (Some(n), chunk, stride, 0),
            [n, chunk, stride, offset] => (Some(n), chunk, stride, offset),
            _ => return Err(CpuSetError::syntax(
                c.term_from(start),
                "E: takes a domain and 1, 3 or 4 numbers: E:<domain>:count[:chunk:stride[:offset]]",
            )),
        };
    if count == Some(0) || chunk == 0 || stride == 0 {
        return Err(CpuSetError::syntax(
            c.term_from(start),
            "the count, chunk and stride of E: are at least 1",
        ));
    }
    Ok(Atom::Expression {
        domain,
        count,
        chunk,
        stride,
        offset,
    })
}

/// hwloc's location: `type:indexes[.type:indexes...]`.
fn location(c: &mut Cursor<'_>, start: usize) -> Result<Atom, CpuSetError> {
    let mut steps = Vec::new();
    loop {
        let name = c.word().unwrap_or("");
        let ty = ObjectType::from_name(name).ok_or_else(|| {
            CpuSetError::syntax(
                c.term_from(start),
                format!(
                    "unknown object type {name:?} (types: {}; likwid domains: N, S<i>, D<i>, \
                     C<i>, M<i>; also `all`, CPU numbers `0-3` and masks `0x3c0f`)",
                    ObjectType::names_text()
                ),
            )
        })?;
        if !c.eat(b':') {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                format!("expected `:` and indexes after {name:?} (`{name}:0`, `{name}:0-3`, `{name}:all`)"),
            ));
        }
        let selection = selection(c, start)?;
        steps.push(Step { ty, selection });
        if !c.eat(b'.') {
            break;
        }
        if !c.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
            return Err(CpuSetError::syntax(
                c.term_from(start),
                "expected an object type after `.` (`package:1.core:0-3`)",
            ));
        }
    }
    if steps.len() == 1 && steps[0].ty == ObjectType::Machine {
        return Ok(Atom::All);
    }
    Ok(Atom::Location(steps))
}

/// hwloc's indexes: `all`, `odd`, `even`, or a list of `N`, `N-M`, `N-`, `N:count`.
fn selection(c: &mut Cursor<'_>, start: usize) -> Result<Selection, CpuSetError> {
    let save = c.pos();
    if let Some(w) = c.word() {
        return match w.to_ascii_lowercase().as_str() {
            "all" => Ok(Selection::All),
            "odd" => Ok(Selection::Odd),
            "even" => Ok(Selection::Even),
            _ => {
                c.reset(save);
                Err(CpuSetError::syntax(
                    c.term_from(start),
                    format!("{w:?} is no index: expected a number, a range (`0-3`, `2-`, `1:2`), all, odd or even"),
                ))
            }
        };
    }
    let mut items = Vec::new();
    loop {
        let a = required(c, start, "an index, a range, all, odd or even")?;
        let item = if c.eat(b'-') {
            match c.number() {
                Ok(Some(b)) if b < a => {
                    return Err(CpuSetError::syntax(
                        c.term_from(start),
                        format!("the range {a}-{b} starts after its end"),
                    ))
                }
                Ok(Some(b)) => IndexItem::Range(a, b),
                Ok(None) => IndexItem::From(a),
                Err(e) => return Err(CpuSetError::syntax(c.term_from(start), e)),
            }
        } else if c.peek() == Some(b':') && c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            c.advance(1);
            let n = required(c, start, "a count")?;
            if n == 0 {
                return Err(CpuSetError::syntax(
                    c.term_from(start),
                    format!("{a}:0 names no object (`{a}:2` is 2 objects from {a})"),
                ));
            }
            IndexItem::Count(a, n)
        } else {
            IndexItem::One(a)
        };
        items.push(item);
        if !list_goes_on(c) {
            return Ok(Selection::Items(items));
        }
        c.advance(1);
    }
}
