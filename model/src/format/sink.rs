//! Text written as it is made: [`TextSink`] lets a writer built on `write!` (the
//! `fmt::Write` of a `String`) write into any `io::Write` instead, buffered, keeping the
//! first error, so that an export of a 4096-context machine (hundreds of MB of text) is
//! never held whole.

use std::fmt;
use std::io::{self, BufWriter, Write};

/// A `fmt::Write` into an `io::Write`. After the first error every write fails at once;
/// [`TextSink::finish`] returns that error, or flushes.
pub(crate) struct TextSink<'w> {
    out: BufWriter<&'w mut dyn Write>,
    error: Option<io::Error>,
}

impl<'w> TextSink<'w> {
    /// A sink writing into `out` through a 64 KiB buffer.
    pub(crate) fn new(out: &'w mut dyn Write) -> Self {
        Self {
            out: BufWriter::with_capacity(1 << 16, out),
            error: None,
        }
    }

    /// Flushes what is buffered.
    ///
    /// # Errors
    ///
    /// The first error of the writer.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }
}

impl fmt::Write for TextSink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.error.is_some() {
            return Err(fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            fmt::Error
        })
    }
}

/// What `write` writes, as a `String`.
pub(crate) fn to_string(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail, and the writers here write only `str`s.
    let _ = write(&mut bytes);
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// A writer that takes `room` bytes, then fails.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.room {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            self.room -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn text_arrives_whole() {
        let mut v = Vec::new();
        let mut s = TextSink::new(&mut v);
        for i in 0..100_000 {
            let _ = writeln!(s, "{i}");
        }
        s.finish().unwrap();
        let text = String::from_utf8(v).unwrap();
        assert_eq!(text.lines().count(), 100_000);
        assert!(text.ends_with("99999\n"));
    }

    #[test]
    fn the_first_error_is_kept() {
        let mut full = Full { room: 10 };
        let mut s = TextSink::new(&mut full);
        for _ in 0..100_000 {
            let _ = s.write_str("0123456789");
        }
        let e = s.finish().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    }
}
