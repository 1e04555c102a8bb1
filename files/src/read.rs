//! Opening a file for reading without blocking, and reading it within a size limit.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::FileError;

/// How long a stream (a FIFO, a pipe such as `<(command)`, a terminal) may stay without
/// its first byte before reading it is given up: 10 s.
pub const STREAM_WAIT: Duration = Duration::from_secs(10);

/// What a reader takes at a path: its size limit, and whether a stream (a FIFO, pipe,
/// terminal or character device) is accepted besides a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// The most bytes read; a file larger than this is refused.
    pub limit: u64,
    /// Whether a FIFO, pipe, terminal, socket or character device is read (as a stream,
    /// waiting at most `wait` for its first byte) rather than refused.
    pub streams: bool,
    /// How long a stream may stay without its first byte ([`STREAM_WAIT`]).
    pub wait: Duration,
}

impl Rules {
    /// A regular file of at most `limit` bytes; anything else is refused without reading.
    #[must_use]
    pub const fn file(limit: u64) -> Self {
        Self {
            limit,
            streams: false,
            wait: STREAM_WAIT,
        }
    }

    /// A regular file or a stream, of at most `limit` bytes.
    #[must_use]
    pub const fn file_or_stream(limit: u64) -> Self {
        Self {
            limit,
            streams: true,
            wait: STREAM_WAIT,
        }
    }

    /// These rules, a stream waiting at most `wait` for its first byte.
    #[must_use]
    pub const fn waiting(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// What these rules take, for messages.
    const fn expected(&self) -> &'static str {
        if self.streams {
            "a regular file, a pipe or a FIFO"
        } else {
            "a regular file"
        }
    }
}

/// What a file that is not a regular file is, for messages ("a FIFO", "a directory").
#[must_use]
pub fn kind_of(t: FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Whether `rules` take a file of type `t`; the error when they do not.
fn check_type(path: &Path, t: FileType, rules: &Rules) -> Result<(), FileError> {
    let stream = t.is_fifo() || t.is_char_device() || t.is_socket();
    if t.is_file() || (stream && rules.streams) {
        return Ok(());
    }
    Err(FileError::NotRegular {
        path: path.to_path_buf(),
        what: kind_of(t),
        expected: rules.expected(),
    })
}

/// Opens `path` for reading under `rules`, never blocking: its type is checked before
/// opening (opening some devices has effects) and after (`fstat` of what was opened),
/// and it is opened with `O_NONBLOCK | O_NOCTTY | O_CLOEXEC`, so that a FIFO with no
/// writer opens at once. A regular file larger than the limit is refused here, before
/// anything is read or allocated.
///
/// # Errors
///
/// [`FileError::Io`] when the file cannot be opened (missing, permission, a loop of
/// symbolic links); [`FileError::NotRegular`] for a directory, a block device, or a
/// FIFO, socket or character device the rules do not take; [`FileError::TooLarge`] for a
/// regular file over the limit.
pub fn open(path: &Path, rules: Rules) -> Result<Input, FileError> {
    let io = |e: io::Error| FileError::io(path, e);
    let before = std::fs::metadata(path).map_err(io)?;
    check_type(path, before.file_type(), &rules)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    // The path may have been replaced between the two looks.
    let meta = file.metadata().map_err(io)?;
    check_type(path, meta.file_type(), &rules)?;
    let stream = !meta.is_file();
    if !stream && meta.len() > rules.limit {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            limit: rules.limit,
            found: meta.len(),
            by_size: true,
        });
    }
    Ok(Input {
        kind: kind_of(meta.file_type()),
        meta,
        file,
        path: path.to_path_buf(),
        rules,
        read: 0,
        deadline: Instant::now() + rules.wait,
        started: false,
        failure: None,
    })
}

/// A file opened by [`open`]: reading it ([`Read`]) stops with an error once more than
/// the limit has been read (at most `limit + 1` bytes are ever asked of the OS), and a
/// stream gives up when nothing arrives within its wait. After such an error,
/// [`Input::failure`] says why, naming the path.
#[derive(Debug)]
pub struct Input {
    file: File,
    meta: Metadata,
    kind: &'static str,
    path: PathBuf,
    rules: Rules,
    read: u64,
    /// When a stream with no byte yet is given up.
    deadline: Instant,
    /// Whether a stream gave any byte: before that, "no writer" means "not yet".
    started: bool,
    failure: Option<FileError>,
}

impl Input {
    /// The path opened.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The metadata of what was opened (`fstat`).
    #[must_use]
    pub const fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// Whether this is a stream (a FIFO, pipe, terminal or device) rather than a regular
    /// file.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        !self.meta.is_file()
    }

    /// The bytes expected: a regular file's size (at most the limit, as larger ones are
    /// refused by [`open`]); 0 for a stream. A capacity to allocate before reading.
    #[must_use]
    pub fn expected_len(&self) -> usize {
        if self.is_stream() {
            0
        } else {
            usize::try_from(self.meta.len().min(self.rules.limit)).unwrap_or(0)
        }
    }

    /// Goes back to the start of a regular file, to read it again as it was: the same
    /// file (a file renamed over its path is not read), refused when its size or its time
    /// of modification is no longer what it was when opened.
    ///
    /// # Errors
    ///
    /// [`FileError::Io`] naming the path for a stream, for a file that changed since it
    /// was opened, and when the OS fails the seek.
    pub fn rewind(&mut self) -> Result<(), FileError> {
        let io = |e: io::Error| FileError::io(&self.path, e);
        let now = self.file.metadata().map_err(io)?;
        if self.is_stream() {
            return Err(io(io::Error::other("a stream cannot be read again")));
        }
        if now.len() != self.meta.len() || now.modified().ok() != self.meta.modified().ok() {
            return Err(io(io::Error::other(
                "the file changed while it was read: read it once it is written",
            )));
        }
        io::Seek::rewind(&mut self.file).map_err(io)?;
        self.read = 0;
        self.failure = None;
        Ok(())
    }

    /// Why reading stopped with an error (over the limit, a stream with nothing to read,
    /// what the OS said), naming the path; `None` when it did not.
    pub fn failure(&mut self) -> Option<FileError> {
        self.failure.take()
    }

    /// Reads the whole file.
    ///
    /// # Errors
    ///
    /// [`FileError::TooLarge`] past the limit, [`FileError::Refused`] (kind `TimedOut`)
    /// for a stream with nothing to read within its wait, [`FileError::Io`] when the OS
    /// fails the read.
    pub fn read_all(mut self) -> Result<Vec<u8>, FileError> {
        let mut bytes = Vec::with_capacity(self.expected_len());
        match self.read_to_end(&mut bytes) {
            Ok(_) => Ok(bytes),
            Err(e) => Err(self
                .failure
                .take()
                .unwrap_or_else(|| FileError::io(&self.path, e))),
        }
    }

    /// Records `e` as the failure and returns the [`io::Error`] standing for it.
    fn fail(&mut self, e: FileError) -> io::Error {
        let shown = io::Error::new(e.kind(), e.to_string());
        self.failure = Some(e);
        shown
    }

    /// One read of the OS, waiting as a blocking read would for a stream's data, but at
    /// most the wait for its first byte.
    fn raw_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut nap = Duration::from_millis(1);
        loop {
            match self.file.read(buf) {
                // A FIFO with no writer yet reads as its end: before the first byte, wait.
                Ok(0) if self.is_stream() && !self.started => {}
                Ok(k) => {
                    self.started |= k > 0;
                    return Ok(k);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A writer, no data yet: once data flowed, wait as long as it holds the
                // stream open (a slow program), as a blocking read would.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if !self.started && Instant::now() >= self.deadline {
                let why = format!(
                    "{} that nothing was written to in {} s: is a program writing to it?",
                    self.kind,
                    self.rules.wait.as_secs_f64()
                );
                return Err(self.fail(FileError::refused(
                    &self.path,
                    io::ErrorKind::TimedOut,
                    why,
                )));
            }
            // Sleeps rather than spinning: a slow writer costs no CPU.
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(20));
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = &self.failure {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        // At most one byte past the limit is ever asked for: enough to know it is passed.
        let room = self.rules.limit.saturating_sub(self.read).saturating_add(1);
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        let got = match self.raw_read(&mut buf[..n]) {
            Ok(k) => k,
            Err(e) if self.failure.is_some() => return Err(e),
            Err(e) => {
                let shown = io::Error::new(e.kind(), e.to_string());
                self.failure = Some(FileError::io(&self.path, e));
                return Err(shown);
            }
        };
        self.read += got as u64;
        if self.read > self.rules.limit {
            let e = FileError::TooLarge {
                path: self.path.clone(),
                limit: self.rules.limit,
                found: self.read,
                by_size: false,
            };
            return Err(self.fail(e));
        }
        Ok(got)
    }
}

/// Reads the whole file at `path` under `rules` (see [`open`]).
///
/// # Errors
///
/// As [`open`] and [`Input::read_all`].
pub fn read(path: &Path, rules: Rules) -> Result<Vec<u8>, FileError> {
    open(path, rules)?.read_all()
}

/// [`read`], as text: invalid UTF-8 is replaced (the files of sysfs and procfs).
///
/// # Errors
///
/// As [`read`].
pub fn read_string_lossy(path: &Path, rules: Rules) -> Result<String, FileError> {
    let bytes = read(path, rules)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// [`read`] of a file that may be absent: `None` when it does not exist (or a folder on
/// its path is not a folder).
///
/// # Errors
///
/// As [`read`], for a file that exists.
pub fn read_optional(path: &Path, rules: Rules) -> Result<Option<Vec<u8>>, FileError> {
    match read(path, rules) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.is_absent() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", path.display());
    }

    #[test]
    fn regular_files_are_read_within_their_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read(&path, Rules::file(5)).unwrap(), b"12345");
        let e = read(&path, Rules::file(4)).unwrap_err();
        assert!(
            matches!(e, FileError::TooLarge { by_size: true, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("m.csv") && e.to_string().contains("4 bytes"));
        assert!(read_optional(&dir.path().join("no"), Rules::file(5))
            .unwrap()
            .is_none());
        assert!(read_optional(&path.join("below-a-file"), Rules::file(5))
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_file_is_read_again_as_it_was_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        std::fs::write(&path, "12345").unwrap();
        let mut input = open(&path, Rules::file(5)).unwrap();
        let mut first = Vec::new();
        input.read_to_end(&mut first).unwrap();
        input.rewind().unwrap();
        let mut again = Vec::new();
        input.read_to_end(&mut again).unwrap();
        assert_eq!(first, again);
        // Renamed over: the file opened is the one read again.
        let other = dir.path().join("other.csv");
        std::fs::write(&other, "abc").unwrap();
        std::fs::rename(&other, &path).unwrap();
        input.rewind().unwrap();
        again.clear();
        input.read_to_end(&mut again).unwrap();
        assert_eq!(again, b"12345");
        // Changed in place: refused.
        let mut input = open(&path, Rules::file(10)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"6")
            .unwrap();
        let e = input.rewind().unwrap_err();
        assert!(e.to_string().contains("changed while it was read"), "{e}");
    }

    #[test]
    fn devices_and_folders_are_refused_where_a_file_is_expected() {
        let e = read(Path::new("/dev/zero"), Rules::file(1 << 20)).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), Rules::file_or_stream(1 << 20)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
    }

    #[test]
    fn a_stream_is_read_to_one_byte_past_its_limit() {
        let e = read(Path::new("/dev/zero"), Rules::file_or_stream(1000)).unwrap_err();
        match e {
            FileError::TooLarge { found, by_size, .. } => {
                assert_eq!(found, 1001);
                assert!(!by_size);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn procfs_files_whose_size_reads_zero_are_bounded() {
        // /proc/self/maps reads as 0 bytes long and is longer than 16 bytes.
        let e = read(Path::new("/proc/self/maps"), Rules::file(16)).unwrap_err();
        assert!(matches!(e, FileError::TooLarge { found: 17, .. }), "{e}");
    }

    #[test]
    fn a_fifo_without_a_writer_is_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        mkfifo(&path);
        let e = read(&path, Rules::file(100)).unwrap_err();
        assert!(
            e.to_string().contains("a FIFO, where a regular file"),
            "{e}"
        );
        let rules = Rules::file_or_stream(100).waiting(Duration::from_millis(100));
        let e = read(&path, rules).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            e.to_string().contains("m.csv") && e.to_string().contains("FIFO"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_read_to_its_writers_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        mkfifo(&path);
        let target = path.clone();
        let writer = std::thread::spawn(move || {
            // Blocks until the reader has the FIFO open.
            let mut f = OpenOptions::new().write(true).open(target).unwrap();
            for _ in 0..3 {
                io::Write::write_all(&mut f, b"0,1\n").unwrap();
            }
        });
        let text = read(&path, Rules::file_or_stream(100)).unwrap();
        writer.join().unwrap();
        assert_eq!(text, b"0,1\n0,1\n0,1\n");
    }

    #[test]
    fn a_symbolic_link_loop_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let e = read(&a, Rules::file(10)).unwrap_err();
        assert!(e.to_string().starts_with(&a.display().to_string()), "{e}");
        assert!(!e.is_absent());
    }
}
