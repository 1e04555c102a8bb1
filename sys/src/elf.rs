//! Whether a program is dynamically linked: an `LD_PRELOAD` library (the pinning of
//! `topoprobe run`) has no effect on a statically linked one.

use std::io::Read;
use std::path::{Path, PathBuf};

/// How a program file is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linking {
    /// An ELF program with a dynamic loader (`PT_INTERP`): preloading works.
    Dynamic,
    /// An ELF program without a dynamic loader (static, or static-pie): preloading does
    /// nothing.
    Static,
    /// Not an ELF program (a script, or unreadable): its interpreter decides.
    Other,
}

/// The most bytes read from a program to find its program headers.
const MAX_HEADER_BYTES: u64 = 64 << 10;

/// How the ELF image `bytes` (its first bytes at least) is linked.
#[must_use]
pub fn linking_of(bytes: &[u8]) -> Linking {
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Linking::Other;
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Linking::Other,
    };
    let big = match bytes.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Linking::Other,
    };
    let read = |at: usize, len: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(len)?)?;
        let mut v = 0_u64;
        for i in 0..len {
            let byte = if big { b[i] } else { b[len - 1 - i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let (phoff, phentsize, phnum) = if wide {
        (read(0x20, 8), read(0x36, 2), read(0x38, 2))
    } else {
        (read(0x1c, 4), read(0x2a, 2), read(0x2c, 2))
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (phoff, phentsize, phnum) else {
        return Linking::Other;
    };
    // A table that does not fit in the bytes read is not trusted, even in part.
    let end = phnum
        .checked_mul(phentsize)
        .and_then(|len| len.checked_add(phoff));
    if end.is_none_or(|end| end > bytes.len() as u64) {
        return Linking::Other;
    }
    for i in 0..phnum {
        let Some(at) = phoff
            .checked_add(i * phentsize)
            .and_then(|a| usize::try_from(a).ok())
        else {
            return Linking::Other;
        };
        match read(at, 4) {
            Some(3) => return Linking::Dynamic, // PT_INTERP
            Some(_) => {}
            None => return Linking::Other,
        }
    }
    Linking::Static
}

/// The file a command name runs: `name` itself when it contains a `/`, else the first
/// executable file of that name in `$PATH`.
#[must_use]
pub fn resolve_program(name: &Path) -> Option<PathBuf> {
    if name.as_os_str().is_empty() {
        return None;
    }
    if name.components().count() > 1 || name.to_string_lossy().contains('/') {
        return Some(name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// How the program `name` runs (see [`resolve_program`]) is linked; [`Linking::Other`]
/// when it cannot be found or read.
#[must_use]
pub fn program_linking(name: &Path) -> Linking {
    let Some(path) = resolve_program(name) else {
        return Linking::Other;
    };
    let mut bytes = Vec::new();
    // Only the headers are read: the rest of a large program is not.
    let rules = topoprobe_files::Rules::file(u64::MAX);
    match topoprobe_files::open(&path, rules) {
        Ok(f) => match f.take(MAX_HEADER_BYTES).read_to_end(&mut bytes) {
            Ok(_) => linking_of(&bytes),
            Err(_) => Linking::Other,
        },
        Err(_) => Linking::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert_eq!(linking_of(b"#!/bin/sh\n"), Linking::Other);
        assert_eq!(linking_of(b"\x7fELF"), Linking::Other);
        assert_eq!(linking_of(&[]), Linking::Other);
        // A 64-bit little-endian header with one PT_LOAD program header: static.
        let mut elf = vec![0_u8; 0x40 + 0x38];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[0x20] = 0x40;
        elf[0x36] = 0x38;
        elf[0x38] = 1;
        elf[0x40] = 1;
        assert_eq!(linking_of(&elf), Linking::Static);
        elf[0x40] = 3;
        assert_eq!(linking_of(&elf), Linking::Dynamic);
        elf[0x38] = 0xff;
        assert_eq!(linking_of(&elf), Linking::Other);
    }

    #[test]
    fn this_system() {
        if Path::new("/bin/sh").exists() {
            assert_eq!(program_linking(Path::new("sh")), Linking::Dynamic);
        }
        assert_eq!(
            program_linking(Path::new("no-such-program-here")),
            Linking::Other
        );
    }
}
