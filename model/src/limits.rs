//! The limits on every input topoprobe reads, in one place: each reader checks them before
//! it allocates anything that grows with the input, and refuses larger inputs with an error
//! naming the limit. `docs/LIMITS.md` lists them for users; `--help` points there.
//!
//! | limit | value | applies to |
//! |---|---|---|
//! | [`MAX_FILE_BYTES`] | 1 GiB | every file read (matrix CSV, `.mct`, hwloc XML, JSON description, standard input): more than any file topoprobe writes at these limits ([`MAX_DESCRIPTION_WRITTEN_BYTES`], [`MAX_MATRIX_WRITTEN_BYTES`], [`MAX_MCT_WRITTEN_BYTES`], [`MAX_XML_WRITTEN_BYTES`]) |
//! | [`MAX_CONTEXTS`] | 4096 | hardware contexts of a matrix, a `.mct` file or a description |
//! | [`MAX_NODES`] | 1024 | memory nodes (`#Nodes` of a `.mct` file, the nodes of a description) |
//! | [`MAX_CPU`](crate::MAX_CPU) | 1 048 575 | the largest CPU number of a CPU list or mask |
//! | [`MAX_LATENCY`](crate::format::csv::MAX_LATENCY) | 10¹² | a latency, in any unit |
//! | [`MAX_SYSFS_FILE_BYTES`] | 16 MiB | one file of sysfs, procfs or powercap (the OS view, `--root`, `--powercap-root`) |
//! | [`MAX_CAPTURE_BYTES`] | 256 MiB | the files of a sysfs capture archive, unpacked, together |
//! | [`MAX_CAPTURE_ARCHIVE_BYTES`] | 4 GiB | a capture archive as read (compressed or not) |
//! | [`MAX_CAPTURE_FILE_BYTES`] | 16 MiB | one file of a sysfs capture archive |
//! | [`MAX_CAPTURE_ENTRIES`] | 1 000 000 | entries (files, directories, links) of a capture archive |
//! | [`MAX_CAPTURE_DEPTH`] | 32 | folders in the path of a capture archive's entry |
//! | [`MAX_XML_ELEMENTS`] | 1 048 576 | elements of an hwloc XML file |
//! | [`MAX_XML_ATTRIBUTES`] | 4 194 304 | attributes of an hwloc XML file |
//! | [`MAX_XML_DEPTH`] | 256 | nesting of an hwloc XML file's elements |
//! | [`MAX_XML_ELEMENT_ATTRIBUTES`] | 64 | attributes of one element of an hwloc XML file |

/// The largest file (or standard input) a reader accepts: 1 GiB, more than the largest
/// file topoprobe itself writes at the limits of this module, so that every file it
/// writes is read back: a description of 4096 contexts whose three latency tables are at
/// their widest takes at most [`MAX_DESCRIPTION_WRITTEN_BYTES`] (822 MB). The 512-context
/// files of today's largest machines take a few MB. A description is parsed as it is read;
/// the other readers (matrix CSV, `.mct`, hwloc XML, standard input) hold the text whole.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Bytes of one row of a latency table as written at [`MAX_CONTEXTS`] at most: every entry
/// at its widest ([`MAX_ENTRY_CHARS`](crate::MAX_ENTRY_CHARS)) with its separator,
/// the row's brackets, indentation and line end.
pub const MAX_TABLE_ROW_BYTES: u64 = MAX_CONTEXTS as u64 * (crate::MAX_ENTRY_CHARS as u64 + 1) + 16;

/// The most bytes a description topoprobe writes may take: its latency tables (raw,
/// normalized and spread: 3 of [`MAX_CONTEXTS`] rows of [`MAX_TABLE_ROW_BYTES`]), and 256
/// MiB for the rest (contexts, nodes and their distances, caches, memory, warnings: a few
/// tens of MB at the limits).
pub const MAX_DESCRIPTION_WRITTEN_BYTES: u64 =
    3 * MAX_CONTEXTS as u64 * MAX_TABLE_ROW_BYTES + (256 << 20);

/// The most bytes a matrix CSV topoprobe writes may take: [`MAX_CONTEXTS`] rows of at most
/// [`MAX_TABLE_ROW_BYTES`].
pub const MAX_MATRIX_WRITTEN_BYTES: u64 = MAX_CONTEXTS as u64 * MAX_TABLE_ROW_BYTES;

/// Bytes of one line of a `.mct` file's latency or memory-latency table at most: two
/// indexes padded to 4 characters, a whole number of cycles up to
/// [`MAX_LATENCY`](crate::format::csv::MAX_LATENCY) (13 digits), the spaces and the line end.
pub const MAX_MCT_LINE_BYTES: u64 = 4 + 1 + 4 + 1 + 13 + 1;

/// The most bytes a `.mct` file topoprobe writes may take: a line for every pair of
/// contexts and for every context and node, and 64 MiB for the header, the caches,
/// bandwidths and power.
pub const MAX_MCT_WRITTEN_BYTES: u64 = MAX_MCT_LINE_BYTES
    * (MAX_CONTEXTS as u64 * MAX_CONTEXTS as u64 + MAX_CONTEXTS as u64 * MAX_NODES as u64)
    + (64 << 20);

/// The most bytes an hwloc XML file topoprobe writes may take: the latency matrix as
/// `distances2` values (whole picoseconds up to 10¹⁵ for a table in ns: 16 digits and a
/// space), one row an element, and 256 MiB for the objects and memory attributes.
pub const MAX_XML_WRITTEN_BYTES: u64 =
    MAX_CONTEXTS as u64 * (MAX_CONTEXTS as u64 * 17 + 64) + (256 << 20);

const _: () = assert!(MAX_DESCRIPTION_WRITTEN_BYTES <= MAX_FILE_BYTES);
const _: () = assert!(MAX_MATRIX_WRITTEN_BYTES <= MAX_FILE_BYTES);
const _: () = assert!(MAX_MCT_WRITTEN_BYTES <= MAX_FILE_BYTES);
const _: () = assert!(MAX_XML_WRITTEN_BYTES <= MAX_FILE_BYTES);
const _: () = assert!(MAX_CONTEXTS as u64 <= MAX_XML_ELEMENTS as u64 / 4);

/// The most hardware contexts a topology may have: 4096, eight times the largest machine
/// of the measured data (a latency matrix of 4096 contexts takes 256 MiB of memory).
pub const MAX_CONTEXTS: usize = 4096;

/// The most memory nodes a topology may have: 1024, Linux's largest `MAX_NUMNODES`.
pub const MAX_NODES: usize = 1024;

/// The largest file of sysfs, procfs or powercap read (the OS view, `--root`,
/// `--powercap-root`): 16 MiB. `/proc/cpuinfo` of a big machine is a few MiB; the
/// attribute files of sysfs a few bytes. Files whose size reads as 0 or 4096 are bounded
/// while reading.
pub const MAX_SYSFS_FILE_BYTES: u64 = 16 << 20;

/// The largest capture archive read, as it is read (compressed or not): 4 GiB. Its
/// entries are bounded by [`MAX_CAPTURE_ENTRIES`], [`MAX_CAPTURE_FILE_BYTES`] and
/// [`MAX_CAPTURE_BYTES`]; this bounds the headers and padding around them (an entry's
/// header and padding take up to 1 KiB).
pub const MAX_CAPTURE_ARCHIVE_BYTES: u64 = 4 << 30;

/// The most bytes the files of a sysfs capture archive (`hwloc-gather-topology`'s tarball)
/// may hold together once unpacked: 256 MiB. A capture of a 128-CPU machine holds 1.5 MB.
pub const MAX_CAPTURE_BYTES: u64 = 256 << 20;

/// The largest file a sysfs capture archive may hold: 16 MiB, the most the sysfs reader
/// reads of a file (`/proc/cpuinfo` of a big machine is a few MiB).
pub const MAX_CAPTURE_FILE_BYTES: u64 = 16 << 20;

/// The most entries (files, directories, links, and the long-name and extended headers
/// of the tar format) a sysfs capture archive may hold: 1 000 000. A capture of a 128-CPU
/// machine holds 10 000; one of 4096 contexts about 400 000.
pub const MAX_CAPTURE_ENTRIES: usize = 1_000_000;

/// The most components the path of a capture archive's entry may have: 32. A
/// `hwloc-gather-topology` capture goes 9 deep.
pub const MAX_CAPTURE_DEPTH: usize = 32;
/// The most elements (counted as `<` characters, before parsing) an hwloc XML file may
/// have: 1 048 576. lstopo's XML of a 4096-PU machine has about 50 000.
pub const MAX_XML_ELEMENTS: u32 = 1 << 20;

/// The most attributes (counted as `=` characters, before parsing) an hwloc XML file may
/// have: 4 194 304, about 200 bytes of parser memory each at most.
pub const MAX_XML_ATTRIBUTES: usize = 1 << 22;

/// The deepest nesting of elements an hwloc XML file may have: 256 (lstopo's XML nests
/// about 20 deep).
pub const MAX_XML_DEPTH: u32 = 256;

/// The most attributes one element of an hwloc XML file may have: 64 (an hwloc object has
/// about 20). Counted before parsing, as the XML parser checks each attribute of an
/// element against the ones before it: without this limit, 300 000 attributes on one
/// element would take minutes to refuse.
pub const MAX_XML_ELEMENT_ATTRIBUTES: usize = 64;
