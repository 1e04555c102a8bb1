//! Latency-matrix CSV: the input of `infer --from-matrix`.
//!
//! A file holds N lines of N comma-separated latencies; line `i` is row `i` of the
//! matrix (the latency from context `i` to each context). The diagonal and missing
//! entries are empty (a diagonal `0` is accepted too). This is what
//! core-to-core-latency's `--csv` prints; it prints `0` for a pair below its timer's
//! resolution, which is kept as a latency of 0 (the inference reads it as one timer step
//! and warns).
//!
//! Reading is lenient about layout and strict about values:
//!
//! - CRLF line ends, a UTF-8 byte-order mark, blanks around values, trailing blank lines,
//!   trailing empty fields and a missing final newline are accepted;
//! - a lower- or upper-triangle-only file is mirrored: whenever exactly one of `(a, b)` and
//!   `(b, a)` is present, the other is set to the same value. In a lower-triangle file row
//!   `i` may also stop after its `i` (or `i + 1`, with the diagonal) fields;
//! - a matrix where both `(a, b)` and `(b, a)` are present and differ is kept as it is
//!   (a directed measurement); [`LatencyMatrix::symmetrized`] makes it symmetric;
//! - NaN, infinite and negative latencies, values above [`MAX_LATENCY`], a non-zero
//!   diagonal, non-numeric fields, non-square files, files with fewer than two rows and
//!   contexts without any latency are rejected with the file, the line and the problem.
//!
//! ```
//! use std::path::Path;
//! use topoprobe_model::format::csv::{parse_matrix, write_matrix};
//!
//! // Lower triangle only, as core-to-core-latency prints it.
//! let m = parse_matrix(",,\n40,,\n90,91,\n", Path::new("lat.csv")).unwrap();
//! assert_eq!(m.get(0, 1), Some(40.0));
//! assert_eq!(m.get(1, 2), Some(91.0));
//! let mut out = Vec::new();
//! write_matrix(&m, &mut out).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), ",40,90\n40,,91\n90,91,\n");
//! ```

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use super::common::plural;
use super::lexer::{
    self, check_latency, open_text, read_text, shown, strip_bom, StreamLines, TextStream,
};
use crate::error::ModelError;
use crate::limits::{MAX_CONTEXTS, MAX_FILE_BYTES};
use crate::matrix::LatencyMatrix;

pub use super::lexer::MAX_LATENCY;

/// Reads a latency-matrix CSV file: a regular file line by line, in two passes, never
/// holding its text (the widest file of 4096 contexts is 185 MB); standard input (`-`), a
/// FIFO or a pipe whole, as [`parse_matrix`] reads a text.
///
/// # Errors
///
/// Returns [`ModelError::Io`] when the file cannot be read, and [`ModelError::Parse`]
/// (naming the file, the line and the problem) when it is not UTF-8 text or not a valid
/// matrix; see [`parse_matrix`].
pub fn read_matrix(path: &Path) -> Result<LatencyMatrix, ModelError> {
    if path.as_os_str() == "-" {
        return parse_matrix(&read_text(path, MAX_FILE_BYTES)?, path);
    }
    let stream = open_text(path, MAX_FILE_BYTES)?;
    if stream.is_stream() {
        return parse_matrix(&stream.into_text()?, path);
    }
    matrix_of_lines(
        path,
        &mut FileLines {
            stream,
            read: false,
        },
    )
}

/// Parses the text of a latency-matrix CSV file; `path` is only used in error messages.
///
/// See the [module documentation](self) for what is accepted.
///
/// # Errors
///
/// Returns [`ModelError::Parse`] naming `path`, the 1-based line and the problem when the
/// text is empty, has a single row, is not square (a row with too many fields, or a row
/// count that does not match the columns), holds a field that is not a number, a NaN,
/// infinite, negative or implausibly large (above [`MAX_LATENCY`]) value, a non-zero value
/// on the diagonal, or when a context has no latency at all (its row and column are
/// empty). A zero off the diagonal is a latency below the timer's resolution and is kept.
pub fn parse_matrix(text: &str, path: &Path) -> Result<LatencyMatrix, ModelError> {
    matrix_of_lines(path, &mut TextLines(strip_bom(text)))
}

/// The lines of a matrix file, numbered from 1, or the error that stopped reading them.
type Lines<'a> = Box<dyn Iterator<Item = Result<(usize, Cow<'a, str>), ModelError>> + 'a>;

/// Where the lines of a matrix file come from, as many times as they are asked for.
trait LineSource {
    /// The lines from the first.
    fn lines(&mut self) -> Result<Lines<'_>, ModelError>;
}

/// The lines of a text held whole.
struct TextLines<'t>(&'t str);

impl LineSource for TextLines<'_> {
    fn lines(&mut self) -> Result<Lines<'_>, ModelError> {
        Ok(Box::new(
            lexer::lines(self.0).map(|l| Ok((l.number, Cow::Borrowed(l.text)))),
        ))
    }
}

/// The lines of a regular file, read again from its start each time (the same file, as
/// long as it does not change).
struct FileLines {
    stream: TextStream,
    /// Whether the file was read before.
    read: bool,
}

impl LineSource for FileLines {
    fn lines(&mut self) -> Result<Lines<'_>, ModelError> {
        if self.read {
            self.stream.rewind()?;
        }
        self.read = true;
        Ok(Box::new(
            StreamLines::new(&mut self.stream).map(|l| l.map(|(n, t)| (n, Cow::Owned(t)))),
        ))
    }
}

/// A row of the matrix: how many fields it has, and whether it is blank.
#[derive(Clone, Copy)]
struct Row {
    fields: usize,
    blank: bool,
}

/// The matrix of a file whose lines `source` gives from the start each time it is asked:
/// the rows are counted first, then their values read into a table of the size found (and
/// read once more between the two only where a row's shape needs its text).
fn matrix_of_lines(path: &Path, source: &mut dyn LineSource) -> Result<LatencyMatrix, ModelError> {
    let err = |line: usize, message: String| ModelError::parse(path, line, message);
    let rows = count_rows(path, source.lines()?)?;
    let n = rows.len();
    if n == 0 {
        return Err(err(
            1,
            "empty file: expected N lines of N comma-separated latencies".to_string(),
        ));
    }
    if n == 1 {
        return Err(err(
            1,
            "only one row: a latency matrix needs at least 2 hardware contexts (N lines of N \
             comma-separated latencies)"
                .to_string(),
        ));
    }
    // Check the shape before allocating N² entries.
    let fits = |i: usize, fields: usize| fields == n || fields == i || fields == i + 1;
    if rows.iter().enumerate().any(|(i, r)| !fits(i, r.fields)) {
        for (i, line) in rows_of(source.lines()?, n).enumerate() {
            let (_, line) = line?;
            let fields = rows.get(i).map_or(0, |r| r.fields);
            let shape_ok = fits(i, fields)
                || (fields > n && line.split(',').skip(n).all(|f| f.trim().is_empty()));
            if !shape_ok {
                return Err(err(i + 1, shape_problem(&line, i, fields, n)));
            }
        }
    }
    let short_row = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.fields < n)
        .map(|(i, r)| (i, r.fields));
    let mut m = LatencyMatrix::empty(n);
    for (a, line) in rows_of(source.lines()?, n).enumerate() {
        let (_, line) = line?;
        for (b, field) in line.split(',').take(n).enumerate() {
            let token = field.trim();
            if token.is_empty() {
                continue;
            }
            let value = parse_latency(token, a == b).map_err(|problem| {
                err(
                    a + 1,
                    format!("field {} (contexts {a} and {b}): {problem}", b + 1),
                )
            })?;
            m.set(a, b, value);
        }
    }
    complete(m, short_row, path)
}

/// The rows among `lines`: every line but the blank ones after the first (which only end
/// the file once [`count_rows`] has read it), at most `n`.
fn rows_of<'a>(
    lines: Lines<'a>,
    n: usize,
) -> impl Iterator<Item = Result<(usize, Cow<'a, str>), ModelError>> {
    lines
        .filter(|l| !matches!(l, Ok((number, text)) if *number > 1 && text.trim().is_empty()))
        .take(n)
}

/// The rows of a file and their field counts, counted as they are found (a file of
/// millions of lines is refused at its row past the limit, not held as a list first). A
/// blank line inside the matrix would shift every later row: name it rather than blame
/// the shape of row 1. (Row 1 of a lower-triangle file may be blank: it has no entry below
/// the diagonal.) Blank lines may end the file. A file that is not text is refused as
/// such whatever else it holds, as when it is read whole.
fn count_rows(path: &Path, lines: Lines<'_>) -> Result<Vec<Row>, ModelError> {
    let err = |line: usize, message: String| ModelError::parse(path, line, message);
    let mut rows: Vec<Row> = Vec::new();
    let mut blank: Option<usize> = None;
    let mut first_text = true;
    let mut problem: Option<ModelError> = None;
    for line in lines {
        let (number, text) = line?;
        if problem.is_some() {
            continue;
        }
        let is_blank = text.trim().is_empty();
        if first_text && !is_blank {
            first_text = false;
            if let Some(other) = other_format(&text) {
                problem = Some(err(1, other));
                continue;
            }
        }
        if number > 1 && is_blank {
            blank.get_or_insert(number);
            continue;
        }
        if let Some(blank) = blank {
            problem = Some(err(
                blank,
                format!(
                    "line {blank} is blank: a matrix has one line per context, and blank lines \
                     may only end the file"
                ),
            ));
            continue;
        }
        if rows.len() == MAX_CONTEXTS {
            problem = Some(err(
                number,
                format!(
                    "more than {MAX_CONTEXTS} rows: a matrix may have at most {MAX_CONTEXTS} \
                     contexts (see docs/LIMITS.md)"
                ),
            ));
            continue;
        }
        let fields = text.bytes().filter(|&b| b == b',').count() + 1;
        rows.push(Row {
            fields,
            blank: is_blank,
        });
    }
    if let Some(problem) = problem {
        return Err(problem);
    }
    if rows.len() == 1 && rows[0].blank {
        rows.clear();
    }
    Ok(rows)
}

/// The matrix once its values are read: nothing above the diagonal where a row is as
/// short as a lower triangle's (`short_row`: its index and field count), one-sided entries
/// mirrored, every context with a latency.
fn complete(
    mut m: LatencyMatrix,
    short_row: Option<(usize, usize)>,
    path: &Path,
) -> Result<LatencyMatrix, ModelError> {
    let err = |line: usize, message: String| ModelError::parse(path, line, message);
    let n = m.len();
    // Short rows belong to a lower-triangle file: nothing may stand above the diagonal.
    if let Some((short, fields)) = short_row {
        if let Some((a, b)) = (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .find(|&(a, b)| m.has(a, b))
        {
            return Err(err(
                a + 1,
                format!(
                    "field {} (contexts {a} and {b}) lies above the diagonal, but row {} has only \
                     {}, as in a lower-triangle file: the rows mix a full and a triangular layout",
                    b + 1,
                    short + 1,
                    plural(fields, "field")
                ),
            ));
        }
    }
    // Mirror one-sided entries (triangle-only files, partial measurements).
    for a in 0..n {
        for b in a + 1..n {
            match (m.has(a, b), m.has(b, a)) {
                (true, false) => m.set(b, a, m.get(a, b)),
                (false, true) => m.set(a, b, m.get(b, a)),
                _ => {}
            }
        }
    }
    for a in 0..n {
        if m.row(a).all(|v| v.is_none()) {
            return Err(err(
                a + 1,
                format!(
                    "context {a} (row {}) has no latency at all: its row and its column are empty",
                    a + 1
                ),
            ));
        }
    }
    Ok(m)
}

/// Why row `i` (with `fields` fields, in a file of `n` rows) does not fit a square matrix.
fn shape_problem(line: &str, i: usize, fields: usize, n: usize) -> String {
    if !line.contains(',') && (line.contains(';') || line.contains('\t')) {
        return format!(
            "row {} has 1 field: fields must be separated by commas, not semicolons or tabs",
            i + 1
        );
    }
    // A word where a number belongs explains more than the field count does.
    if let Some((j, token)) = line
        .split(',')
        .map(str::trim)
        .enumerate()
        .find(|(_, t)| !t.is_empty() && t.parse::<f64>().is_err())
    {
        let hint = if i == 0 {
            " (a header line? the file must hold only numbers)"
        } else {
            ""
        };
        return format!("field {}: not a number: {}{hint}", j + 1, shown(token));
    }
    if fields > n {
        return format!(
            "row {} has {fields} fields but the file has {n} rows: a latency matrix must be \
             square (N lines of N values)",
            i + 1
        );
    }
    let what = if line.trim().is_empty() {
        "blank line inside the matrix".to_string()
    } else {
        format!("row {} has {}", i + 1, plural(fields, "field"))
    };
    format!(
        "{what}: expected {n} fields, one per row of the file (or {i} or {} in a lower-triangle \
         file)",
        i + 1
    )
}

/// Parses one non-empty field; `Ok(None)` for a diagonal `0`. Off the diagonal a `0` is
/// kept: core-to-core-latency prints it for a pair below its timer's resolution.
fn parse_latency(token: &str, diagonal: bool) -> Result<Option<f64>, String> {
    let value = check_latency(token)?;
    if diagonal {
        if value != 0.0 {
            return Err(format!(
                "diagonal entry is {}: the latency of a context with itself must be empty or 0 \
                 (are the rows shifted?)",
                shown(token)
            ));
        }
        return Ok(None);
    }
    Ok(Some(value))
}

/// What a text that is not a matrix is, from its first character: JSON or a `.mct` file.
fn other_format(text: &str) -> Option<String> {
    match text.trim_start().chars().next() {
        Some('{' | '[') => Some(
            "this is JSON, not a latency matrix: a JSON description is read with --topology"
                .to_string(),
        ),
        Some('#') => Some(
            "this looks like a libmctop .mct file, not a latency matrix: read it with \
             --from-mct or --topology"
                .to_string(),
        ),
        _ => None,
    }
}

/// Writes a matrix as CSV: one line per row, every line with N fields, empty on the
/// diagonal and for missing entries, values in their shortest form that reads back to the
/// same `f64`, in exponent form where the decimal would take more than
/// [`MAX_ENTRY_CHARS`](crate::MAX_ENTRY_CHARS) characters. [`parse_matrix`] reads the output back to an equal matrix unless an entry
/// `(a, b)` is present while `(b, a)` is missing (the reader mirrors it).
///
/// # Errors
///
/// Returns the error of the writer.
pub fn write_matrix(m: &LatencyMatrix, w: &mut impl Write) -> std::io::Result<()> {
    let mut line = String::new();
    for a in 0..m.len() {
        line.clear();
        for (b, v) in m.row(a).enumerate() {
            if b > 0 {
                line.push(',');
            }
            if let Some(v) = v {
                crate::matrix::push_entry(&mut line, v, false);
            }
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LatencyMatrix, ModelError> {
        parse_matrix(text, Path::new("t.csv"))
    }

    fn parse_err(text: &str) -> (usize, String) {
        match parse(text) {
            Err(ModelError::Parse {
                path,
                line,
                message,
            }) => {
                assert_eq!(path, Path::new("t.csv"));
                (line, message)
            }
            other => panic!("expected a parse error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn full_square_with_empty_diagonal() {
        let m = parse(",10,20\n10,,30\n20,30,\n").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.get(0, 2), Some(20.0));
        assert_eq!(m.get(2, 1), Some(30.0));
        assert_eq!(m.get(1, 1), None);
    }

    #[test]
    fn a_blank_line_inside_the_matrix_is_named() {
        let (line, message) = parse_err("0,10,20\n\n10,0,20\n20,20,0\n");
        assert_eq!(line, 2, "{message}");
        assert!(message.contains("line 2 is blank"), "{message}");
        let (line, _) = parse_err("0,10,20\n10,0,20\n \r\n20,20,0\n");
        assert_eq!(line, 3);
    }

    #[test]
    fn layout_leniency() {
        let reference = parse(",10,20\n10,,30\n20,30,\n").unwrap();
        for text in [
            ",10,20\r\n10,,30\r\n20,30,\r\n",
            " , 10 , 20 \n10,,30\n20,30,",
            ",10,20\n10,,30\n20,30,\n\n  \n\r\n",
            "\u{feff},10,20\n10,,30\n20,30,\n",
            "0,10,20\n10,0,30\n20,30,0\n",
            ",10,20,,\n10,,30,\n20,30,\n",
            // lower triangle, N fields per row (core-to-core-latency --csv)
            ",,\n10,,\n20,30,\n",
            // lower triangle, i fields per row
            "\n10\n20,30\n",
            // lower triangle, i + 1 fields per row
            "\n10,\n20,30,",
            // upper triangle
            ",10,20\n,,30\n,,\n",
            // classic Mac OS line ends (a lone carriage return)
            ",10,20\r10,,30\r20,30,\r",
        ] {
            assert_eq!(parse(text).unwrap(), reference, "{text:?}");
        }
    }

    #[test]
    fn zero_off_the_diagonal_is_below_resolution_and_kept() {
        let m = parse(",0,20\n0,,30\n20,30,\n").unwrap();
        assert_eq!(m.get(0, 1), Some(0.0));
        assert_eq!(m.get(1, 0), Some(0.0));
        assert_eq!(m.get(0, 2), Some(20.0));
        // Lower triangle, as core-to-core-latency prints it.
        let m = parse(",,\n0,,\n51.7,26.7,\n").unwrap();
        assert_eq!(m.get(0, 1), Some(0.0));
        assert_eq!(m.get(2, 1), Some(26.7));
    }

    #[test]
    fn directed_matrix_kept() {
        let m = parse(",10\n12,\n").unwrap();
        assert_eq!(m.get(0, 1), Some(10.0));
        assert_eq!(m.get(1, 0), Some(12.0));
    }

    #[test]
    fn partial_entries_are_mirrored() {
        let m = parse(",10,\n,,30\n20,,\n").unwrap();
        assert_eq!(m.get(1, 0), Some(10.0));
        assert_eq!(m.get(2, 1), Some(30.0));
        assert_eq!(m.get(0, 2), Some(20.0));
    }

    #[test]
    fn errors_name_line_and_problem() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "empty file"),
            ("\n \n", 1, "empty file"),
            ("5\n", 1, "at least 2"),
            (",1,2\n", 1, "at least 2"),
            (",1\nabc,\n", 2, "not a number: \"abc\""),
            (",1\nNaN,\n", 2, "NaN"),
            (",1\ninf,\n", 2, "infinite"),
            (",1\n-3,\n", 2, "negative"),
            (",1\n1e13,\n", 2, "implausibly large"),
            (",1,2\n1,,3\n", 1, "square"),
            (",1\n1,,4\n", 2, "square"),
            (
                ",1,2,3\n1,,2,3\n1\n1,2,3,\n",
                3,
                "row 3 has 1 field: expected 4",
            ),
            (",1,2,3\n1,,3,4\n", 1, "square"),
            (",1,2,3\n1,,3,4\n\n3,4,5,\n", 3, "blank line"),
            ("5,1\n1,\n", 1, "diagonal"),
            (",1,\n1,,\n,,\n", 3, "context 2"),
            (
                "0,2,3\n2,0\n3,3,0\n",
                1,
                "mix a full and a triangular layout",
            ),
        ];
        for &(text, line, needle) in cases {
            let (l, message) = parse_err(text);
            assert_eq!(l, line, "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn long_tokens_are_truncated() {
        let long = "x".repeat(1000);
        let (_, message) = parse_err(&format!(",1\n{long},\n"));
        assert!(message.len() < 200, "{message}");
        assert!(message.contains('…'));
    }

    #[test]
    fn writes_shortest_round_trip_form() {
        let m = LatencyMatrix::from_fn(3, |a, b| match (a, b) {
            (0, 1) | (1, 0) => Some(0.1),
            (0, 2) => Some(1e-7),
            (2, 0) => Some(1_234.5),
            _ => None,
        });
        let mut out = Vec::new();
        write_matrix(&m, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, ",0.1,0.0000001\n0.1,,\n1234.5,,\n");
        assert_eq!(parse(&text).unwrap(), m);
        // A table keeps 5 significant digits (its stated resolution).
        let long = LatencyMatrix::from_fn(2, |_, _| Some(123_456_789.5));
        assert_eq!(long.get(0, 1), Some(123_460_000.0));
        assert_eq!(
            LatencyMatrix::from_fn(2, |_, _| Some(123.456)).get(1, 0),
            Some(123.46)
        );
        assert_eq!(
            LatencyMatrix::from_fn(2, |_, _| Some(21.3)).get(1, 0),
            Some(21.3)
        );
    }
}
