//! A cursor over the bytes of an expression: the small reads the grammar is made of
//! (numbers with their limit, words, hexadecimal digits, single characters).

use topoprobe_model::MAX_CPU;

/// Characters that end a term.
pub(crate) const fn is_separator(c: u8) -> bool {
    c.is_ascii_whitespace() || c == b'@'
}

/// A position in an expression.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub(crate) const fn new(text: &'a str) -> Self {
        Self {
            text: text.as_bytes(),
            pos: 0,
        }
    }

    /// The byte offset of the cursor.
    pub(crate) const fn pos(&self) -> usize {
        self.pos
    }

    /// Moves the cursor back to `pos` (a position it has been at).
    pub(crate) fn reset(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The next byte, if any.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    /// The byte `n` places after the next one.
    pub(crate) fn peek_at(&self, n: usize) -> Option<u8> {
        self.text.get(self.pos + n).copied()
    }

    /// Whether the cursor is at the end of the text or of a term.
    pub(crate) fn at_term_end(&self) -> bool {
        self.peek().is_none_or(is_separator)
    }

    /// Whether the cursor is at the end of the text.
    pub(crate) const fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    /// Takes the next byte if it is `c`.
    pub(crate) fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips whitespace and `@`, and says whether it skipped an `@`.
    pub(crate) fn skip_separators(&mut self) -> bool {
        let mut at = false;
        while let Some(c) = self.peek().filter(|&c| is_separator(c)) {
            at |= c == b'@';
            self.pos += 1;
        }
        at
    }

    /// The text from `start` to the cursor.
    pub(crate) fn since(&self, start: usize) -> &'a str {
        std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("")
    }

    /// The text from `start` to the end of the term the cursor is in.
    pub(crate) fn term_from(&self, start: usize) -> &'a str {
        let end = self.text[self.pos.min(self.text.len())..]
            .iter()
            .position(|&c| is_separator(c))
            .map_or(self.text.len(), |i| self.pos + i);
        std::str::from_utf8(&self.text[start.min(end)..end]).unwrap_or("")
    }

    /// Reads a run of ASCII letters and digits starting with a letter.
    pub(crate) fn word(&mut self) -> Option<&'a str> {
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.pos += 1;
        }
        Some(self.since(start))
    }

    /// Reads a decimal number no larger than [`MAX_CPU`]; `Ok(None)` when no digit is
    /// next.
    ///
    /// # Errors
    ///
    /// The digits read, when their number is above [`MAX_CPU`] (checked as digits are
    /// read: a long run of digits never overflows).
    pub(crate) fn number(&mut self) -> Result<Option<u32>, String> {
        let start = self.pos;
        let mut value: u64 = 0;
        let mut over = false;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            self.pos += 1;
            if !over {
                value = value * 10 + u64::from(c - b'0');
                over = value > u64::from(MAX_CPU);
            }
        }
        if self.pos == start {
            return Ok(None);
        }
        if over {
            return Err(format!(
                "{} is above {MAX_CPU}, the largest number an expression may hold",
                self.since(start)
            ));
        }
        Ok(Some(u32::try_from(value).unwrap_or(MAX_CPU)))
    }

    /// Reads a run of hexadecimal digits.
    pub(crate) fn hex_digits(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            self.pos += 1;
        }
        self.since(start)
    }

    /// Whether the text at the cursor starts with `s` (ASCII case ignored).
    pub(crate) fn looking_at(&self, s: &str) -> bool {
        self.text
            .get(self.pos..self.pos + s.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(s.as_bytes()))
    }

    /// Moves the cursor `n` bytes on.
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.text.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stop_at_the_limit_without_overflow() {
        let mut c = Cursor::new("1048575,1048576");
        assert_eq!(c.number(), Ok(Some(MAX_CPU)));
        assert!(c.eat(b','));
        assert!(c.number().unwrap_err().contains("1048576 is above"));
        let long = "9".repeat(100);
        let mut c = Cursor::new(&long);
        assert!(c.number().is_err());
        assert!(c.at_end());
        assert_eq!(Cursor::new("x").number(), Ok(None));
    }

    #[test]
    fn words_separators_and_terms() {
        let mut c = Cursor::new("l3cache:2 @ S0");
        assert_eq!(c.word(), Some("l3cache"));
        assert_eq!(c.term_from(0), "l3cache:2");
        assert!(c.eat(b':'));
        assert_eq!(c.number(), Ok(Some(2)));
        assert!(c.at_term_end());
        assert!(c.skip_separators());
        assert_eq!(c.word(), Some("S0"));
        assert!(c.at_end());
    }
}
