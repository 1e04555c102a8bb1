//! The shared lexer of the text formats (matrix CSV, `.mct`, the JSON description):
//! reading a file as UTF-8 text within a size limit, the UTF-8 byte-order mark, lines and
//! white-space separated tokens with their line numbers, latency tokens, and tokens quoted
//! for error messages.
//!
//! Every reader of a text format reads its file through [`read_text`] and reports problems
//! with [`shown`] tokens; the readers differ only in what they do with the text.

use std::io::Read;
use std::path::Path;

use topoprobe_files::{FileError, Input, Rules};

use crate::error::ModelError;

/// The largest latency a reader accepts (in any unit): larger values are taken for a
/// corrupted file rather than a measurement.
pub const MAX_LATENCY: f64 = 1e12;

/// Reads a whole file as UTF-8 text, or standard input when `path` is `-`, under the
/// rules of `topoprobe_files`: opened without blocking, a regular file or a stream (a
/// FIFO or pipe such as `<(command)` waits at most 10 s for its first byte), a
/// directory or block device refused. Input longer than `max_bytes` is refused before
/// anything is allocated for it (and while reading, should it grow: `/dev/zero`); a NUL
/// byte stops the reading at once, as text never holds one. The error of binary input
/// names the line of the first byte that is not text. A byte-order mark is kept: see
/// [`strip_bom`].
///
/// # Errors
///
/// Returns [`ModelError::Io`] when the file cannot be opened or read, and
/// [`ModelError::Parse`] when it is longer than `max_bytes` (at line 0) or not UTF-8 text.
pub(crate) fn read_text(path: &Path, max_bytes: u64) -> Result<String, ModelError> {
    read_text_with(path, Rules::file_or_stream(max_bytes))
}

/// [`read_text`] under `rules`.
fn read_text_with(path: &Path, rules: Rules) -> Result<String, ModelError> {
    if path.as_os_str() == "-" {
        let mut stdin = std::io::stdin().lock();
        return read_bounded(&mut stdin, path, rules.limit, 0);
    }
    open_text_with(path, rules)?.into_text()
}

/// Opens a file to be read as a stream of text, as [`read_text`] reads it whole: a
/// directory is refused, a FIFO waits a bounded time for its writer, a file longer than
/// `max_bytes` is refused before reading. The stream stops with an error at its first NUL
/// byte and as soon as it grows past `max_bytes`; [`TextStream::failure`] then says why,
/// as [`read_text`] would. Standard input (`-`) is not streamed: read it with [`read_text`].
///
/// # Errors
///
/// [`ModelError::Io`] when the file cannot be opened, [`ModelError::Parse`] when it is
/// larger than `max_bytes`.
pub(crate) fn open_text(path: &Path, max_bytes: u64) -> Result<TextStream, ModelError> {
    open_text_with(path, Rules::file_or_stream(max_bytes))
}

/// [`open_text`] under `rules`.
fn open_text_with(path: &Path, rules: Rules) -> Result<TextStream, ModelError> {
    Ok(TextStream {
        inner: topoprobe_files::open(path, rules)?,
        path: path.to_path_buf(),
        limit: rules.limit,
        lines: 1,
        failure: None,
    })
}

/// A file read as a stream of text within a size limit: see [`open_text`].
pub(crate) struct TextStream {
    inner: Input,
    path: std::path::PathBuf,
    /// The most bytes it may hold.
    limit: u64,
    /// The line being read (1-based), for the message of a NUL byte.
    lines: usize,
    failure: Option<ModelError>,
}

impl TextStream {
    /// Whether the file is a stream (a FIFO, pipe or character device) rather than a
    /// regular file that can be read again.
    pub(crate) fn is_stream(&self) -> bool {
        self.inner.is_stream()
    }

    /// Goes back to the start of a regular file to read it again: see
    /// [`Input::rewind`].
    ///
    /// # Errors
    ///
    /// [`ModelError::Io`] for a stream, a file that changed since it was opened, or a
    /// failed seek.
    pub(crate) fn rewind(&mut self) -> Result<(), ModelError> {
        self.inner.rewind()?;
        self.lines = 1;
        self.failure = None;
        Ok(())
    }

    /// The rest of the stream as one text, as [`read_text`] reads a file.
    ///
    /// # Errors
    ///
    /// As [`read_text`].
    pub(crate) fn into_text(mut self) -> Result<String, ModelError> {
        let hint = self.inner.expected_len();
        // The reader's own failure (over the limit, a stream with nothing to read) names
        // the limit or the wait; a NUL byte or bad UTF-8 is the text reader's.
        read_bounded(&mut self.inner, &self.path, self.limit, hint)
            .map_err(|e| self.inner.failure().map_or(e, ModelError::from))
    }

    /// Why the stream stopped early (a NUL byte, more than the limit, a stream with
    /// nothing to read), if it did: the error to report rather than the reader's own.
    pub(crate) fn failure(&mut self) -> Option<ModelError> {
        self.failure
            .take()
            .or_else(|| self.inner.failure().map(ModelError::from))
    }

    fn fail(&mut self, e: ModelError) -> std::io::Error {
        let text = e.to_string();
        self.failure = Some(e);
        std::io::Error::other(text)
    }
}

impl Read for TextStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = self.inner.read(buf)?;
        let part = &buf[..got];
        if let Some(at) = part.iter().position(|&b| b == 0) {
            let line = self.lines + part[..at].iter().filter(|&&b| b == b'\n').count();
            let e = ModelError::parse(
                &self.path,
                line,
                "binary data, not a text file (byte 0x00)".to_string(),
            );
            return Err(self.fail(e));
        }
        self.lines += part.iter().filter(|&&b| b == b'\n').count();
        Ok(got)
    }
}

/// Reads `r` to its end in chunks, refusing more than `max_bytes` and any NUL byte as soon
/// as they are seen; `hint` is the expected length.
fn read_bounded(
    r: &mut impl Read,
    path: &Path,
    max_bytes: u64,
    hint: usize,
) -> Result<String, ModelError> {
    let mut bytes = Vec::with_capacity(hint);
    let mut chunk = vec![0_u8; 64 << 10];
    loop {
        let got = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ModelError::io(path, e)),
        };
        let part = &chunk[..got];
        if let Some(at) = part.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&part[..at]);
            return Err(binary(path, &bytes, 0));
        }
        bytes.extend_from_slice(part);
        let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if read > max_bytes {
            return Err(FileError::TooLarge {
                path: path.to_path_buf(),
                limit: max_bytes,
                found: read,
                by_size: false,
            }
            .into());
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let byte = bytes.get(valid).copied().unwrap_or(0);
        binary(path, &bytes[..valid], byte)
    })
}

/// The error for binary input: `text` is the text before the first `byte` that is not text.
fn binary(path: &Path, text: &[u8], byte: u8) -> ModelError {
    let line = text.iter().filter(|&&b| b == b'\n').count() + 1;
    ModelError::parse(
        path,
        line,
        format!("binary data, not a text file (byte 0x{byte:02x})"),
    )
}

/// The text without its UTF-8 byte-order mark, if it starts with one.
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// A line of text and its 1-based number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub(crate) number: usize,
    /// The line, without its `\n` or `\r\n`.
    pub(crate) text: &'a str,
}

/// The lines of a text, numbered from 1; a line ends at `\n`, `\r\n` or a lone `\r` (the
/// line end of classic Mac OS, which some spreadsheets still write). A text ending with a
/// line end has an empty last line, as `str::split` gives it.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut rest = Some(text);
    let mut number = 0;
    std::iter::from_fn(move || {
        let t = rest?;
        number += 1;
        let Some(end) = t.find(['\n', '\r']) else {
            rest = None;
            return Some(Line { number, text: t });
        };
        let after = if t[end..].starts_with("\r\n") {
            end + 2
        } else {
            end + 1
        };
        rest = Some(&t[after..]);
        Some(Line {
            number,
            text: &t[..end],
        })
    })
}

/// The lines of a text file read as a stream, numbered as [`lines`] numbers the lines of
/// the same text held whole (the byte-order mark dropped, as [`strip_bom`] drops it), so
/// that a reader may go through a large file line by line, holding one line at a time. A
/// byte that is not UTF-8 ends the lines with the error [`read_text`] gives, or with the
/// error of a NUL byte after it, which [`read_text`] meets first.
pub(crate) struct StreamLines<'s> {
    reader: std::io::BufReader<&'s mut TextStream>,
    /// Lines given so far.
    number: usize,
    /// `\n` bytes read before the line being read, for the line of a byte that is not
    /// text.
    newlines: usize,
    /// Whether the line being read ended with `\n` (counted once it is given).
    ended_with_lf: bool,
    /// Whether the last line given ended with `\r`: a `\n` right after belongs to its end.
    after_cr: bool,
    /// Whether what was read so far ends with a line end: an empty last line follows.
    after_line_end: bool,
    done: bool,
}

impl<'s> StreamLines<'s> {
    /// The lines of `stream`, from where it is (its start).
    pub(crate) fn new(stream: &'s mut TextStream) -> Self {
        Self {
            reader: std::io::BufReader::with_capacity(64 << 10, stream),
            number: 0,
            newlines: 0,
            ended_with_lf: false,
            after_cr: false,
            after_line_end: true,
            done: false,
        }
    }

    /// The error of a read that failed: the stream's own (a NUL byte, over the limit), or
    /// the reader's.
    fn failed(&mut self, e: &std::io::Error) -> ModelError {
        self.done = true;
        let path = self.reader.get_ref().path.clone();
        self.reader
            .get_mut()
            .failure()
            .unwrap_or_else(|| ModelError::io(&path, std::io::Error::new(e.kind(), e.to_string())))
    }

    /// The buffered bytes, filled when empty (empty at the end).
    fn fill(&mut self) -> Result<&[u8], ModelError> {
        loop {
            match std::io::BufRead::fill_buf(&mut self.reader) {
                Ok(_) => return Ok(self.reader.buffer()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failed(&e)),
            }
        }
    }

    /// The bytes of the next line without its end, and whether a line end followed them;
    /// `None` at the end of the text.
    fn read_line(&mut self) -> Result<Option<(Vec<u8>, bool)>, ModelError> {
        self.newlines += usize::from(std::mem::take(&mut self.ended_with_lf));
        if std::mem::take(&mut self.after_cr) && self.fill()?.first() == Some(&b'\n') {
            std::io::BufRead::consume(&mut self.reader, 1);
            self.newlines += 1;
        }
        let mut bytes = Vec::new();
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok((!bytes.is_empty()).then_some((bytes, false)));
            }
            let Some(end) = buf.iter().position(|&b| b == b'\n' || b == b'\r') else {
                bytes.extend_from_slice(buf);
                let k = buf.len();
                std::io::BufRead::consume(&mut self.reader, k);
                continue;
            };
            bytes.extend_from_slice(&buf[..end]);
            if buf[end] == b'\n' {
                self.ended_with_lf = true;
            } else {
                self.after_cr = true;
            }
            std::io::BufRead::consume(&mut self.reader, end + 1);
            return Ok(Some((bytes, true)));
        }
    }

    /// The error of a line that is not UTF-8 (`error` of its `bytes`), or of a NUL byte
    /// further on, which reading the whole file meets first.
    fn not_text(&mut self, bytes: &[u8], error: std::str::Utf8Error) -> ModelError {
        let byte = bytes.get(error.valid_up_to()).copied().unwrap_or(0);
        let line = self.newlines + 1;
        if let Err(e) = std::io::copy(&mut self.reader, &mut std::io::sink()) {
            return self.failed(&e);
        }
        let path = self.reader.get_ref().path.clone();
        ModelError::parse(
            &path,
            line,
            format!("binary data, not a text file (byte 0x{byte:02x})"),
        )
    }
}

impl Iterator for StreamLines<'_> {
    /// A line's 1-based number and its text, without its line end.
    type Item = Result<(usize, String), ModelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let (mut bytes, ended) = match self.read_line() {
            Ok(Some(line)) => line,
            Ok(None) => {
                self.done = true;
                if !self.after_line_end {
                    return None;
                }
                (Vec::new(), false)
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        if self.number == 0 && bytes.starts_with(b"\xef\xbb\xbf") {
            bytes.drain(..3);
        }
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                self.done = true;
                let error = e.utf8_error();
                return Some(Err(self.not_text(e.as_bytes(), error)));
            }
        };
        self.after_line_end = ended;
        self.number += 1;
        Some(Ok((self.number, text)))
    }
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    /// The token's text.
    pub(crate) text: &'a str,
    /// 1-based line number.
    pub(crate) line: usize,
}

/// Splits text into tokens as C's `fscanf("%s")` does: runs of bytes other than white
/// space. A break byte (see [`Tokens::break_before`]) also starts a new token, even in the
/// middle of a word.
pub(crate) struct Tokens<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    /// Line of the last token produced (1 before the first): where "end of file" errors point.
    last_line: usize,
    peeked: Option<Token<'a>>,
    /// An ASCII byte that always starts a token.
    break_before: Option<u8>,
}

/// White space as C's `isspace` sees it.
const fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

impl<'a> Tokens<'a> {
    /// The tokens of `text`, split at white space only.
    pub(crate) const fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            line: 1,
            last_line: 1,
            peeked: None,
            break_before: None,
        }
    }

    /// Also starts a token at every `byte` (an ASCII byte, so that tokens stay valid UTF-8).
    pub(crate) const fn break_before(mut self, byte: u8) -> Self {
        if byte.is_ascii() {
            self.break_before = Some(byte);
        }
        self
    }

    /// Length of the whole text in bytes.
    pub(crate) const fn source_len(&self) -> usize {
        self.text.len()
    }

    /// Line of the last token produced (1 before the first): where an error about the end
    /// of the text points.
    pub(crate) const fn last_line(&self) -> usize {
        self.last_line
    }

    /// The next token, if any.
    pub(crate) fn next(&mut self) -> Option<Token<'a>> {
        if let Some(t) = self.peeked.take() {
            return Some(t);
        }
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if !is_space(b) {
                break;
            }
            if b == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
        if self.pos >= bytes.len() {
            return None;
        }
        let start = self.pos;
        self.pos += 1;
        while let Some(&b) = bytes.get(self.pos) {
            if is_space(b) || Some(b) == self.break_before {
                break;
            }
            self.pos += 1;
        }
        // `start` and `pos` sit next to ASCII bytes (or at the ends), so on char boundaries.
        let text = self.text.get(start..self.pos).unwrap_or("");
        self.last_line = self.line;
        Some(Token {
            text,
            line: self.line,
        })
    }

    /// The next token, left to be returned by [`Self::next`].
    pub(crate) fn peek(&mut self) -> Option<Token<'a>> {
        if self.peeked.is_none() {
            self.peeked = self.next();
        }
        self.peeked
    }
}

/// Parses a latency token: a finite number in `0..=MAX_LATENCY`; the error says why not.
pub(crate) fn check_latency(token: &str) -> Result<f64, String> {
    let value: f64 = token
        .parse()
        .map_err(|_| format!("not a number: {}", shown(token)))?;
    if value.is_nan() {
        return Err(format!("{} is not a latency (NaN)", shown(token)));
    }
    if value.is_infinite() {
        return Err(format!("{} is not a latency (infinite)", shown(token)));
    }
    if value < 0.0 {
        return Err(format!("negative latency {}", shown(token)));
    }
    if value > MAX_LATENCY {
        return Err(format!(
            "implausibly large latency {} (more than {MAX_LATENCY:e})",
            shown(token)
        ));
    }
    Ok(value)
}

/// A token quoted for an error message, shortened when long.
pub(crate) fn shown(token: &str) -> String {
    const MAX_CHARS: usize = 24;
    if token.chars().count() <= MAX_CHARS {
        format!("{token:?}")
    } else {
        let head: String = token.chars().take(MAX_CHARS).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;
    use crate::limits::MAX_FILE_BYTES;

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
    }

    #[test]
    fn a_fifo_without_a_writer_is_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        mkfifo(&path);
        let rules =
            Rules::file_or_stream(MAX_FILE_BYTES).waiting(std::time::Duration::from_millis(200));
        let e = read_text_with(&path, rules).unwrap_err();
        let text = format!("{e}: {}", std::error::Error::source(&e).unwrap());
        assert!(text.contains("m.csv") && text.contains("FIFO"), "{text}");
    }

    #[test]
    fn a_fifo_is_read_to_its_writers_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        mkfifo(&path);
        let target = path.clone();
        let writer = std::thread::spawn(move || {
            // Opening blocks until the reader has the FIFO open.
            #[allow(clippy::disallowed_methods)] // the test writes its own fixture
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .unwrap();
            for _ in 0..3 {
                std::io::Write::write_all(&mut f, b"0,1\n").unwrap();
            }
        });
        let text = read_text(&path, MAX_FILE_BYTES).unwrap();
        writer.join().unwrap();
        assert_eq!(text, "0,1\n0,1\n0,1\n");
    }

    #[test]
    fn tokens_split_at_hash() {
        let mut t = Tokens::new("a  b#c\n\n#d 12#e#f\x0bg").break_before(b'#');
        let mut got = Vec::new();
        while let Some(tok) = t.next() {
            got.push((tok.text, tok.line));
        }
        assert_eq!(
            got,
            [
                ("a", 1),
                ("b", 1),
                ("#c", 1),
                ("#d", 3),
                ("12", 3),
                ("#e", 3),
                ("#f", 3),
                ("g", 3)
            ]
        );
    }

    #[test]
    fn tokens_without_a_break_byte_split_at_white_space_only() {
        let mut t = Tokens::new(" a#b\r\n c ");
        assert_eq!(t.peek().map(|t| (t.text, t.line)), Some(("a#b", 1)));
        assert_eq!(t.next().map(|t| (t.text, t.line)), Some(("a#b", 1)));
        assert_eq!(t.next().map(|t| (t.text, t.line)), Some(("c", 2)));
        assert!(t.next().is_none());
        assert_eq!(t.last_line(), 2);
        assert_eq!(t.source_len(), 9);
    }

    #[test]
    fn lines_are_numbered_without_their_ends() {
        let got: Vec<(usize, &str)> = lines("a\r\nb\n\nc").map(|l| (l.number, l.text)).collect();
        assert_eq!(got, [(1, "a"), (2, "b"), (3, ""), (4, "c")]);
        let got: Vec<(usize, &str)> = lines("a\rb\r\rc\r").map(|l| (l.number, l.text)).collect();
        assert_eq!(got, [(1, "a"), (2, "b"), (3, ""), (4, "c"), (5, "")]);
        assert_eq!(lines("").count(), 1);
        assert_eq!(strip_bom("\u{feff}x"), "x");
        assert_eq!(strip_bom("x\u{feff}"), "x\u{feff}");
    }

    #[test]
    fn shown_is_char_safe() {
        let s = "é".repeat(100);
        assert!(shown(&s).ends_with('…'));
        assert_eq!(shown("ab"), "\"ab\"");
    }

    #[test]
    fn files_over_the_limit_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_text(&path, 5).unwrap(), "12345");
        match read_text(&path, 4) {
            Err(ModelError::Parse { line, message, .. }) => {
                assert_eq!(line, 0);
                assert!(message.contains("more than 4 bytes"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        std::fs::write(&path, b"ok\n\xff").unwrap();
        match read_text(&path, MAX_FILE_BYTES) {
            Err(ModelError::Parse { line, message, .. }) => {
                assert_eq!(line, 2);
                assert!(message.contains("0xff"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_nul_byte_stops_the_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        std::fs::write(&path, b"1,2\n3\0,4").unwrap();
        match read_text(&path, MAX_FILE_BYTES) {
            Err(ModelError::Parse { line, message, .. }) => {
                assert_eq!(line, 2);
                assert_eq!(message, "binary data, not a text file (byte 0x00)");
            }
            other => panic!("{other:?}"),
        }
    }
}
