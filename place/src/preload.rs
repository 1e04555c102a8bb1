//! Where the pinning library of `topoprobe run` (`libtopoprobe_preload.so`) is found
//! ([`find_preload`]), in this order:
//!
//! 1. `$TOPOPROBE_PRELOAD` ([`PRELOAD_VAR`]), when set and not empty: that file, which
//!    must exist (a development build, or a library of one's own).
//! 2. On disk, near the running executable: beside it, in `../lib`, in
//!    `../lib/topoprobe` (the layouts `scripts/install.sh` and distributions use), or in
//!    `deps/` below it (cargo's build directory).
//! 3. The copy carried inside the binary: the build compiles the library's one source
//!    file (`preload/src/lib.rs`) and embeds it, so that `cargo install --path cli` gives
//!    a working `run` with no other file. It is written once, atomically, to a per-user
//!    cache file named by a hash of its contents, `libtopoprobe_preload-HASH.so`, in the
//!    first directory that can be used of `$XDG_CACHE_HOME/topoprobe`,
//!    `~/.cache/topoprobe`, `$XDG_RUNTIME_DIR/topoprobe` and `/tmp/topoprobe-UID`.
//!
//! The library is loaded into every program `run` starts, so a cached copy is trusted only
//! when its directory belongs to this user and no one else may write to it (the one
//! under `/tmp`, created `0700`, must be private), the file is a regular file of this
//! user that no one else may write, and its bytes are those carried; otherwise it is
//! written again, or the next directory is tried.

use std::fs::{DirBuilder, File, Metadata};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use topoprobe_sys::pin_env::PRELOAD_LIBRARY;

use crate::error::PlaceError;

/// The environment variable that names the pinning library, overriding the search.
pub const PRELOAD_VAR: &str = "TOPOPROBE_PRELOAD";

/// The largest library accepted as a cached copy, in bytes (the carried one is a few
/// hundred KiB): a bound on what is read back to compare.
const MAX_LIBRARY: u64 = 64 << 20;

/// The library carried inside this binary (empty when the build had no source for it).
#[cfg(topoprobe_embedded_preload)]
const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtopoprobe_preload.so"));
#[cfg(not(topoprobe_embedded_preload))]
const EMBEDDED: &[u8] = &[];

/// The pinning library carried inside this binary, `None` when it was built without one.
#[must_use]
pub fn embedded() -> Option<&'static [u8]> {
    Some(EMBEDDED).filter(|b| !b.is_empty())
}

/// Where the pinning library is: `$TOPOPROBE_PRELOAD`, else beside this executable, in
/// `../lib` or `../lib/topoprobe` from it, or in `deps/` below it, else the copy carried
/// inside the binary, written to a per-user cache (see the [module](self) docs).
///
/// # Errors
///
/// [`PlaceError::Preload`] when `$TOPOPROBE_PRELOAD` is not a file, or when no place has
/// the library and the carried copy cannot be written anywhere (the message says where
/// it looked and why each cache directory was refused).
pub fn find_preload() -> Result<PathBuf, PlaceError> {
    if let Some(p) = std::env::var_os(PRELOAD_VAR).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(PlaceError::Preload(format!(
                "{PRELOAD_VAR}={} is not a file",
                p.display()
            )));
        }
        return Ok(p);
    }
    let exe = std::env::current_exe()
        .map_err(|e| PlaceError::Preload(format!("cannot find this executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    if let Some(p) = beside(dir).into_iter().find(|p| p.is_file()) {
        // `/opt/x/lib/topoprobe/…` rather than `/opt/x/bin/../lib/topoprobe/…`.
        return Ok(p.canonicalize().unwrap_or(p));
    }
    let looked = format!(
        "looked beside {}, in ../lib, ../lib/topoprobe and deps/",
        exe.display()
    );
    let Some(bytes) = embedded() else {
        return Err(PlaceError::Preload(format!(
            "cannot find {PRELOAD_LIBRARY} ({looked}; this binary carries no copy): build it \
             with `cargo build -p topoprobe-preload` or set {PRELOAD_VAR}"
        )));
    };
    cached_copy(bytes, &cache_dirs()).map_err(|why| {
        PlaceError::Preload(format!(
            "cannot find {PRELOAD_LIBRARY} ({looked}) nor write the copy this binary \
             carries ({why}); set {PRELOAD_VAR} to the library"
        ))
    })
}

/// The places on disk near an executable in `dir`, in the order they are tried.
fn beside(dir: &Path) -> [PathBuf; 4] {
    let lib = dir.join("..").join("lib");
    [
        dir.join(PRELOAD_LIBRARY),
        lib.join(PRELOAD_LIBRARY),
        lib.join("topoprobe").join(PRELOAD_LIBRARY),
        dir.join("deps").join(PRELOAD_LIBRARY),
    ]
}

/// A directory the carried library may be written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheDir {
    /// The directory (created when missing, mode `0700`).
    pub(crate) path: PathBuf,
    /// Whether it must be private (no access for group and others): a directory in a
    /// place every user may write to, such as `/tmp`.
    pub(crate) private: bool,
}

/// The cache directories, in order: `$XDG_CACHE_HOME/topoprobe` (an absolute path) or
/// `~/.cache/topoprobe`, `$XDG_RUNTIME_DIR/topoprobe`, `/tmp/topoprobe-UID`.
fn cache_dirs() -> Vec<CacheDir> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let shared = |path: PathBuf| CacheDir {
        path,
        private: false,
    };
    let mut dirs = Vec::new();
    if let Some(cache) = absolute("XDG_CACHE_HOME") {
        dirs.push(shared(cache.join("topoprobe")));
    } else if let Some(home) = absolute("HOME") {
        dirs.push(shared(home.join(".cache").join("topoprobe")));
    }
    if let Some(run) = absolute("XDG_RUNTIME_DIR") {
        dirs.push(shared(run.join("topoprobe")));
    }
    dirs.push(CacheDir {
        path: std::env::temp_dir().join(format!("topoprobe-{}", effective_uid())),
        private: true,
    });
    dirs
}

/// This process's effective user id.
fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The file name of a cached copy of `bytes`: `libtopoprobe_preload-HASH.so`.
pub(crate) fn cache_name(bytes: &[u8]) -> String {
    format!("libtopoprobe_preload-{:016x}.so", fnv1a(bytes))
}

/// The 64-bit FNV-1a hash (a name for the contents; the bytes themselves are compared
/// before a cached copy is used).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The path of a trusted copy of `bytes` in the first of `dirs` that can be used: an
/// existing one, else one written there now.
///
/// # Errors
///
/// Why each directory was refused, when none could be used.
pub(crate) fn cached_copy(bytes: &[u8], dirs: &[CacheDir]) -> Result<PathBuf, String> {
    let mut why = Vec::new();
    for dir in dirs {
        match copy_in(bytes, dir) {
            Ok(p) => return Ok(p),
            Err(e) => why.push(format!("{}: {e}", dir.path.display())),
        }
    }
    Err(why.join("; "))
}

/// A trusted copy of `bytes` in `dir`.
fn copy_in(bytes: &[u8], dir: &CacheDir) -> Result<PathBuf, String> {
    let uid = effective_uid();
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir.path)
        .map_err(|e| format!("cannot create it: {e}"))?;
    let meta = std::fs::symlink_metadata(&dir.path).map_err(|e| e.to_string())?;
    check_dir(&meta, uid, dir.private)?;
    let path = dir.path.join(cache_name(bytes));
    if trusted(&path, bytes, uid)? {
        return Ok(path);
    }
    write_atomically(&dir.path, &path, bytes).map_err(|e| format!("cannot write a copy: {e}"))?;
    if trusted(&path, bytes, uid)? {
        Ok(path)
    } else {
        Err(format!("{} changed as it was written", path.display()))
    }
}

/// Checks that a cache directory is a directory of `uid` that no one else may write to
/// (nor, when `private`, read).
fn check_dir(meta: &Metadata, uid: u32, private: bool) -> Result<(), String> {
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    if meta.uid() != uid {
        return Err(format!("owned by user {}, not {uid}", meta.uid()));
    }
    let refused = if private { 0o077 } else { 0o022 };
    if meta.mode() & refused != 0 {
        return Err(format!(
            "mode {:o} lets other users {} it",
            meta.mode() & 0o777,
            if private { "into" } else { "write to" }
        ));
    }
    Ok(())
}

/// Whether `path` is a copy of `bytes` to trust: `Ok(false)` when it is missing or
/// differs (it is written again then).
///
/// # Errors
///
/// A file that is not this user's regular file, or that others may write to, is refused.
fn trusted(path: &Path, bytes: &[u8], uid: u32) -> Result<bool, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} belongs to user {} with mode {:o}: not trusted",
            path.display(),
            meta.uid(),
            meta.mode() & 0o777
        ));
    }
    if meta.len() != bytes.len() as u64 || meta.len() > MAX_LIBRARY {
        return Ok(false);
    }
    let have = topoprobe_files::read(path, topoprobe_files::Rules::file(MAX_LIBRARY))
        .map_err(|e| format!("cannot read {e}"))?;
    Ok(have == bytes)
}

/// Writes `bytes` to `path` through a temporary file of `dir` renamed over it, so that
/// no program ever loads a partial library. `dir` is this user's cache directory, checked
/// private by [`check_dir`]; the temporary file is new (`create_new`), executable, and
/// the library in place is only ever replaced by the bytes carried.
// A new file in a directory only this user may write, not a file a user named: the
// rules of `topoprobe_files::replace` (for results) do not apply.
#[allow(clippy::disallowed_methods)]
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let tmp = dir.join(format!(
        ".{PRELOAD_LIBRARY}.{}.{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn dir(path: &Path, private: bool) -> CacheDir {
        CacheDir {
            path: path.to_path_buf(),
            private,
        }
    }

    #[test]
    fn this_build_carries_the_library() {
        let lib = embedded().expect("the build carries the pinning library");
        assert_eq!(&lib[..4], b"\x7fELF");
    }

    #[test]
    fn a_copy_is_written_once_and_reused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = tmp.path().join("a").join("topoprobe");
        let bytes = b"\x7fELF library";
        let p = cached_copy(bytes, &[dir(&cache, false)]).expect("written");
        assert_eq!(p, cache.join(cache_name(bytes)));
        assert_eq!(std::fs::read(&p).expect("read"), bytes);
        let mode = std::fs::metadata(&cache).expect("dir").mode() & 0o777;
        assert_eq!(mode, 0o700);
        let ino = std::fs::metadata(&p).expect("file").ino();
        let again = cached_copy(bytes, &[dir(&cache, false)]).expect("reused");
        assert_eq!(again, p);
        assert_eq!(
            std::fs::metadata(&p).expect("file").ino(),
            ino,
            "not rewritten"
        );
        // Nothing else is left in the directory.
        assert_eq!(std::fs::read_dir(&cache).expect("dir").count(), 1);
    }

    #[test]
    fn a_copy_that_differs_is_written_again() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bytes = b"\x7fELF library";
        let p = tmp.path().join(cache_name(bytes));
        std::fs::write(&p, b"\x7fELF librarz").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let got = cached_copy(bytes, &[dir(tmp.path(), false)]).expect("rewritten");
        assert_eq!(got, p);
        assert_eq!(std::fs::read(&p).expect("read"), bytes);
    }

    #[test]
    fn a_directory_others_may_write_to_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let open = tmp.path().join("open");
        let private = tmp.path().join("private");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let bytes = b"lib";
        let p = cached_copy(bytes, &[dir(&open, false), dir(&private, true)]).expect("next one");
        assert_eq!(p.parent(), Some(private.as_path()));
        assert!(!open.join(cache_name(bytes)).exists());
        // Alone, the refusal is said.
        let e = cached_copy(bytes, &[dir(&open, false)]).expect_err("refused");
        assert!(e.contains("mode 777"), "{e}");
        // A readable directory is fine in a user's cache, not under /tmp.
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).expect("mkdir");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(cached_copy(bytes, &[dir(&shared, false)]).is_ok());
        assert!(cached_copy(bytes, &[dir(&shared, true)]).is_err());
    }

    #[test]
    fn a_file_others_may_write_or_a_link_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bytes = b"lib";
        let p = tmp.path().join(cache_name(bytes));
        std::fs::write(&p, bytes).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let e = cached_copy(bytes, &[dir(tmp.path(), false)]).expect_err("refused");
        assert!(e.contains("not trusted"), "{e}");
        std::fs::remove_file(&p).expect("rm");
        let elsewhere = tmp.path().join("elsewhere.so");
        std::fs::write(&elsewhere, bytes).expect("write");
        std::os::unix::fs::symlink(&elsewhere, &p).expect("symlink");
        let e = cached_copy(bytes, &[dir(tmp.path(), false)]).expect_err("refused");
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn names_follow_the_contents() {
        assert_ne!(cache_name(b"a"), cache_name(b"b"));
        assert_eq!(cache_name(b"a"), cache_name(b"a"));
        assert!(cache_name(b"").starts_with("libtopoprobe_preload-"));
        // FNV-1a's published value for "a".
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_installed_layouts_are_searched() {
        let places = beside(Path::new("/opt/x/bin"));
        let shown: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            shown,
            [
                "/opt/x/bin/libtopoprobe_preload.so",
                "/opt/x/bin/../lib/libtopoprobe_preload.so",
                "/opt/x/bin/../lib/topoprobe/libtopoprobe_preload.so",
                "/opt/x/bin/deps/libtopoprobe_preload.so",
            ]
        );
    }
}
