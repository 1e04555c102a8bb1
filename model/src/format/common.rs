//! Text helpers shared by the file formats here and the views of `topoprobe-view`: a count
//! with its noun, and escaping for XML and HTML.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape_xml("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn counts_with_their_noun() {
        assert_eq!(plural(1, "field"), "1 field");
        assert_eq!(plural(2, "field"), "2 fields");
    }
}
