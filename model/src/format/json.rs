//! The description file: a [`Topology`] as JSON, `"format": "topoprobe/1"`.
//!
//! Reading validates the description: the structure must be consistent and every derived
//! field (a context's socket, a group's contexts, the interconnects, the facts...) must
//! agree with the structure, so that a hand-edited file cannot contradict itself.
//! Writing is atomic: the file is written under a temporary name in the same directory,
//! synced, and renamed over the target, so a crash never leaves a half-written description.
//!
//! ```
//! use std::path::Path;
//! use topoprobe_model::format::json::{from_json_str, to_json_string};
//! use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
//!
//! let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
//! let c0 = b.core(vec![ContextId(0)]);
//! let c1 = b.core(vec![ContextId(1)]);
//! b.socket(vec![Member::Core(c0), Member::Core(c1)]);
//! let lat = LatencyMatrix::from_fn(2, |_, _| Some(30.0));
//! b.latencies(lat.clone(), lat);
//! let topo = b.build().unwrap();
//! let text = to_json_string(&topo);
//! assert!(text.contains("\"format\": \"topoprobe/1\""));
//! assert_eq!(from_json_str(&text, Path::new("m.json")).unwrap(), topo);
//! ```

use std::io::BufRead;
use std::path::Path;

use super::lexer::{open_text, read_text, strip_bom};
use crate::error::ModelError;
use crate::limits::MAX_FILE_BYTES;
use crate::topology::{Topology, TopologyData};

/// The description of a topology as pretty-printed JSON, ending with a newline; its
/// figures keep 10 significant digits ([`super::rounding::to_description_json`]).
///
/// # Panics
///
/// Never: a topology is plain data with string map keys, which always serializes.
#[must_use]
pub fn to_json_string(topo: &Topology) -> String {
    // A topology has only string map keys and plain data: serializing it cannot fail.
    super::rounding::to_description_json(topo).expect("a topology always serializes")
}

/// Writes the description of a topology into `w` as it is made: the text of
/// [`to_json_string`], never held whole (the two latency tables of 4096 contexts take
/// about 200 MB as text).
///
/// # Errors
///
/// The errors of `w`.
pub fn write_json(topo: &Topology, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, w);
    super::rounding::write_description_json(topo, &mut buffered).map_err(std::io::Error::from)?;
    std::io::Write::flush(&mut buffered)
}

/// Parses a description; `path` is only used in error messages.
///
/// # Errors
///
/// Returns [`ModelError::Parse`] naming `path`: at the line serde_json reports when the
/// text is not JSON or does not have the shape of a description (a missing field, a value
/// of the wrong type, a non-square latency table...), and at line 0 when the description
/// is well formed but inconsistent (an unsupported `format`, a context in two cores, a
/// derived field that disagrees with the structure...), with the model's explanation.
pub fn from_json_str(text: &str, path: &Path) -> Result<Topology, ModelError> {
    let text = strip_bom(text);
    match text.trim_start().chars().next() {
        Some('{') | None => {}
        Some(c) => {
            // Whether the text is JSON at all, checked without building it.
            let (line, what) = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => (
                    1,
                    match c {
                        '[' => "a JSON array".to_string(),
                        '"' => "a JSON string".to_string(),
                        'n' => "JSON null".to_string(),
                        't' | 'f' => "a JSON boolean".to_string(),
                        _ => "a JSON number".to_string(),
                    },
                ),
                Err(_) if c == '#' => (1, "a libmctop .mct file".to_string()),
                Err(e) if c == '-' || c.is_ascii_digit() => (
                    e.line().max(1),
                    format!(
                        "not JSON: {} (a latency matrix is read from a .csv file)",
                        json_problem(&e)
                    ),
                ),
                Err(e) => (e.line().max(1), format!("not JSON: {}", json_problem(&e))),
            };
            return Err(ModelError::parse(
                path,
                line,
                format!("a description is a JSON object (`{{ \"format\": \"topoprobe/1\", … }}`); this is {what}"),
            ));
        }
    }
    let data: TopologyData = serde_json::from_str(text)
        .map_err(|e| ModelError::parse(path, e.line().max(1), json_problem(&e)))?;
    checked(data, path)
}

/// serde_json's message without its position, and the column: `expected value (column 1)`.
fn json_problem(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&position).unwrap_or(&full);
    format!("{message} (column {})", e.column())
}

/// Reads a description file.
///
/// # Errors
///
/// Returns [`ModelError::Io`] when the file cannot be read, and [`ModelError::Parse`]
/// naming the file when it is not UTF-8 text or not a valid description (see
/// [`from_json_str`]).
pub fn read_description(path: &Path) -> Result<Topology, ModelError> {
    if path.as_os_str() == "-" {
        let text = read_text(path, MAX_FILE_BYTES)?;
        return from_json_str(&text, path);
    }
    // Streamed: a list or a latency row over its limit is refused when the parser reaches
    // it, before the rest of the file is read (a 229 MB file with a 60-million-entry row
    // held the whole text before).
    let mut reader = std::io::BufReader::with_capacity(64 << 10, open_text(path, MAX_FILE_BYTES)?);
    let starts_an_object = match reader.fill_buf() {
        Ok(head) => {
            let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
            head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        }
        Err(e) => {
            return Err(reader
                .get_mut()
                .failure()
                .unwrap_or_else(|| ModelError::io(path, e)))
        }
    };
    if !starts_an_object {
        // Not a description (or one whose first 64 KiB are blank): read whole, for the
        // message that says what it is.
        let mut text = String::new();
        let read = std::io::Read::read_to_string(&mut reader, &mut text);
        if let Some(failure) = reader.get_mut().failure() {
            return Err(failure);
        }
        read.map_err(|e| ModelError::io(path, e))?;
        return from_json_str(&text, path);
    }
    if reader
        .fill_buf()
        .is_ok_and(|b| b.starts_with(b"\xef\xbb\xbf"))
    {
        reader.consume(3);
    }
    let parsed: Result<TopologyData, _> = serde_json::from_reader(&mut reader);
    if let Some(failure) = reader.get_mut().failure() {
        return Err(failure);
    }
    let data = parsed.map_err(|e| ModelError::parse(path, e.line().max(1), json_problem(&e)))?;
    checked(data, path)
}

/// The topology of parsed description data, its consistency checked.
fn checked(data: TopologyData, path: &Path) -> Result<Topology, ModelError> {
    Topology::from_data(data).map_err(|e| match e {
        ModelError::Structure(message) => {
            ModelError::parse(path, 0, format!("inconsistent description: {message}"))
        }
        other => other,
    })
}

/// Writes a description file atomically.
///
/// Missing parent directories are created; the description is written to a temporary
/// file in the target's directory, flushed and synced to disk, then renamed over the
/// target, so that readers see either the old file or the complete new one. The new file
/// gets the permissions a newly created file gets (`0o666` less the umask on Unix).
///
/// # Errors
///
/// Returns [`ModelError::Io`] naming the directory when it cannot be created, and naming
/// `path` when the temporary file cannot be created, written, synced or renamed.
pub fn write_description(topo: &Topology, path: &Path) -> Result<(), ModelError> {
    super::create_parent(path)?;
    super::write_atomic(path, to_json_string(topo).as_bytes())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;
    use crate::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};

    fn small() -> Topology {
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0), ContextId(2)]);
        let c1 = b.core(vec![ContextId(1), ContextId(3)]);
        b.socket(vec![Member::Core(c0), Member::Core(c1)]);
        let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.5 } else { 40.25 }));
        b.latencies(lat.clone(), lat);
        b.build().unwrap()
    }

    #[test]
    fn a_file_is_read_as_its_text_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let text = to_json_string(&small());
        let file = dir.path().join("m.json");
        std::fs::write(&file, format!("\u{feff}{text}")).unwrap();
        assert_eq!(read_description(&file).unwrap(), small());
        // A NUL byte stops the stream, named at its line.
        let broken = text.replacen("\"units\"", "\"u\0nits\"", 1);
        let line = broken.lines().position(|l| l.contains('\0')).unwrap() + 1;
        std::fs::write(&file, &broken).unwrap();
        match read_description(&file) {
            Err(ModelError::Parse {
                line: l, message, ..
            }) => {
                assert_eq!(l, line, "{message}");
                assert!(message.contains("binary data"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Errors of the stream name the line as those of the text do.
        let bad = text.replacen("\"units\"", "\"units\" oops", 1);
        std::fs::write(&file, &bad).unwrap();
        assert_eq!(
            read_description(&file).unwrap_err().to_string(),
            from_json_str(&bad, &file).unwrap_err().to_string()
        );
        for other in ["null", "[1, 2]", "0,1\n1,0\n", "// c\n{}"] {
            std::fs::write(&file, other).unwrap();
            assert_eq!(
                read_description(&file).unwrap_err().to_string(),
                from_json_str(other, &file).unwrap_err().to_string(),
                "{other}"
            );
        }
    }

    #[test]
    fn round_trip() {
        let t = small();
        let text = to_json_string(&t);
        assert!(text.ends_with("}\n"));
        assert_eq!(from_json_str(&text, Path::new("x.json")).unwrap(), t);
    }

    #[test]
    fn syntax_error_has_line() {
        let text = to_json_string(&small());
        let broken = text.replacen("\"units\"", "\"units\" oops", 1);
        let line = broken.lines().position(|l| l.contains("oops")).unwrap() + 1;
        match from_json_str(&broken, Path::new("x.json")) {
            Err(ModelError::Parse {
                line: l,
                message,
                path,
            }) => {
                assert_eq!(l, line, "{message}");
                assert_eq!(path, Path::new("x.json"));
                assert!(!message.contains(" at line "), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_that_is_no_object_and_text_that_is_no_json_say_which() {
        let err = |text: &str| {
            from_json_str(text, Path::new("m.json"))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("null").ends_with("this is JSON null"),
            "{}",
            err("null")
        );
        assert!(err(" [1]").ends_with("this is a JSON array"));
        let comment = err("// note\n{}");
        assert!(
            comment.starts_with("m.json:1: ")
                && comment.ends_with("not JSON: expected value (column 1)"),
            "{comment}"
        );
        let matrix = err("\n1,2\n3,4\n");
        assert!(matrix.starts_with("m.json:2: "), "{matrix}");
        assert!(
            matrix.contains("a latency matrix is read from a .csv file"),
            "{matrix}"
        );
    }

    #[test]
    fn empty_text_is_an_error_at_line_1() {
        match from_json_str("", Path::new("e.json")) {
            Err(ModelError::Parse { line, .. }) => assert_eq!(line, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn inconsistent_description_is_a_parse_error_at_line_0() {
        let text = to_json_string(&small()).replacen("topoprobe/1", "topoprobe/9", 1);
        match from_json_str(&text, Path::new("x.json")) {
            Err(ModelError::Parse { line, message, .. }) => {
                assert_eq!(line, 0);
                assert!(message.contains("unsupported format"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
