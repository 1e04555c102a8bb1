//! Text helpers shared by the file formats here and the views of `topoprobe-view`: a count
//! with its noun, and escaping for XML and HTML.

/// How many characters of a user's text an error message echoes ([`elided`]).
pub const ECHOED_CHARS: usize = 80;

/// `text` for an error message: whole when it has at most [`ECHOED_CHARS`] characters,
/// else its first ones, then `…` and how many were left out (a 60 KB CPU expression is
/// not echoed whole).
#[must_use]
pub fn elided(text: &str) -> String {
    match text.char_indices().nth(ECHOED_CHARS) {
        Some((at, _)) => format!(
            "{}… ({} more characters)",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_string(),
    }
}

/// `n thing` or `n things`: `n` followed by `thing`, with an `s` unless `n` is 1.
///
/// ```
/// use topoprobe_model::format::plural;
///
/// assert_eq!(plural(1, "core"), "1 core");
/// assert_eq!(plural(0, "socket"), "0 sockets");
/// ```
#[must_use]
pub fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// A latency for people, without its unit: whole numbers from 100 up or when integral,
/// else one decimal.
///
/// ```
/// use topoprobe_model::format::short_latency;
/// assert_eq!(short_latency(308.0), "308");
/// assert_eq!(short_latency(241.251_019_275), "241");
/// assert_eq!(short_latency(17.63), "17.6");
/// assert_eq!(short_latency(8.0), "8");
/// ```
#[must_use]
pub fn short_latency(v: f64) -> String {
    if v >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Escapes text for XML and HTML (`&`, `<`, `>`, `"`, `'`); control characters other than
/// newline and tab become spaces.
///
/// ```
/// use topoprobe_model::format::escape_xml;
///
/// assert_eq!(escape_xml("a<b & 'c'"), "a&lt;b &amp; &#39;c&#39;");
/// ```
#[must_use]
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// CPU numbers as a CPU list, in the order given: each run of consecutive ascending
/// numbers as a range (`0-3`), the rest one by one, comma-separated. Sorted input gives
/// the Linux CPU list (`0-3,8,10-11`, what `taskset -c` reads); a placement order keeps
/// its order (`0-63,128-191` fills one context per core first), and the list always reads
/// back as the same sequence. Every view writes CPU lists with this one function.
///
/// ```
/// use topoprobe_model::format::cpu_ranges;
///
/// assert_eq!(cpu_ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
/// assert_eq!(cpu_ranges(&[4, 5, 6, 7, 0, 1, 2, 3]), "4-7,0-3");
/// assert_eq!(cpu_ranges(&[0, 128, 1, 129]), "0,128,1,129");
/// assert_eq!(cpu_ranges(&[]), "");
/// ```
#[must_use]
pub fn cpu_ranges(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j].checked_add(1) == Some(cpus[j + 1]) {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&cpus[i].to_string());
        if j > i {
            out.push('-');
            out.push_str(&cpus[j].to_string());
        }
        i = j + 1;
    }
    out
}

/// Rewrites the CPU lists written out number by number in a message (`{16,17,18,19,24}`)
/// with [`cpu_ranges`] (`{16-19,24}`): every list of comma-separated whole numbers with no
/// spaces that holds a run of at least three consecutive numbers. Other text (`2.1%`,
/// `(221, 222)`, `4,5`) is left as it is, so the message keeps its meaning.
///
/// ```
/// use topoprobe_model::format::compact_cpu_lists;
///
/// assert_eq!(
///     compact_cpu_lists("parts ({16,17,18,19,144,145,146,147}) at 2.1%"),
///     "parts ({16-19,144-147}) at 2.1%"
/// );
/// assert_eq!(compact_cpu_lists("pair (0, 1) and 4,5"), "pair (0, 1) and 4,5");
/// ```
#[must_use]
pub fn compact_cpu_lists(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let starts_list = bytes[i].is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_digit() || matches!(bytes[i - 1], b'.' | b',')));
        if !starts_list {
            i += 1;
            continue;
        }
        // The longest `n,n,…,n` from here.
        let mut end = i;
        let mut numbers: Vec<u32> = Vec::new();
        let mut k = i;
        loop {
            let start = k;
            while k < bytes.len() && bytes[k].is_ascii_digit() {
                k += 1;
            }
            let Ok(n) = text[start..k].parse::<u32>() else {
                break;
            };
            numbers.push(n);
            end = k;
            if k + 1 < bytes.len() && bytes[k] == b',' && bytes[k + 1].is_ascii_digit() {
                k += 1;
            } else {
                break;
            }
        }
        // A decimal point after the last number: not a list of whole numbers.
        let decimal =
            bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        let has_run = numbers
            .windows(3)
            .any(|w| w[0].checked_add(1) == Some(w[1]) && w[1].checked_add(1) == Some(w[2]));
        if numbers.len() >= 3 && has_run && !decimal {
            out.push_str(&text[copied..i]);
            out.push_str(&cpu_ranges(&numbers));
            copied = end;
        }
        i = end.max(i + 1);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape_xml("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn cpu_lists_keep_their_order() {
        assert_eq!(cpu_ranges(&[3]), "3");
        assert_eq!(cpu_ranges(&[0, 1]), "0-1");
        assert_eq!(cpu_ranges(&[0, 2, 4]), "0,2,4");
        assert_eq!(
            cpu_ranges(&[u32::MAX - 1, u32::MAX]),
            format!("{}-{}", u32::MAX - 1, u32::MAX)
        );
        let set: Vec<u32> = (0..64).chain(128..192).collect();
        assert_eq!(cpu_ranges(&set), "0-63,128-191");
    }

    #[test]
    fn lists_in_messages_become_ranges() {
        let long: Vec<String> = (32..48).chain(160..176).map(|n| n.to_string()).collect();
        let m = format!("candidates ({{{}}}): not reported", long.join(","));
        assert_eq!(
            compact_cpu_lists(&m),
            "candidates ({32-47,160-175}): not reported"
        );
        for same in [
            "1.2,3,4",
            "groups 4, 21, 26",
            "0,2,4,6",
            "x 1,2,3.5",
            "",
            "7",
        ] {
            assert_eq!(compact_cpu_lists(same), same);
        }
        assert_eq!(compact_cpu_lists("5,6,7 é 1,2,3"), "5-7 é 1-3");
    }

    #[test]
    fn counts_with_their_noun() {
        assert_eq!(plural(1, "field"), "1 field");
        assert_eq!(plural(2, "field"), "2 fields");
    }
}
