//! libmctop's `.mct` description files.
//!
//! The format is token based, as libmctop reads it with `fscanf`: tokens are separated by
//! white space, and a `#` always starts a new token, even in the middle of a word (libmctop
//! writes its last `Cache_level` line without a newline, straight into
//! `#Power_measurements`). A file holds:
//!
//! - the header `#<host> #HWCs <N> #Nodes <S> SMT <0|1>`;
//! - N² triples `x y latency`, one per ordered pair of contexts (0 on the diagonal);
//! - optional sections, in any order, each a `#Name <count>` header and its data:
//!   - `#Mem_latencies K`: N×K triples `context node latency` (0 where not measured);
//!   - `#Mem_bw-READ K`, `#Mem_bw1-READ K`, `#Mem_bw-WRITE K`, `#Mem_bw1-WRITE K`:
//!     sockets×K triples `socket node GB/s`, measured with every context of the socket
//!     (`bw`) or with one thread (`bw1`);
//!   - `#Cache_levels L`: L lines `Cache_level i Latency l SizeOS s SizeEst e` (sizes in
//!     KiB, 0 when unknown);
//!   - `#Power_measurements K`: for each socket `s` and each of the K load states, a line
//!     `Power_sockt_<s>_<state> cores rest package dram total` (watts), then K lines
//!     `Power_total_<sockets>_<state> ...` for the whole machine.
//!
//! [`read_mct`] and [`parse_mct`] read the format (module `read`, one submodule per kind
//! of section); [`write_mct`] writes a [`Topology`](crate::Topology) in libmctop's layout
//! (module `write`); what both share — the [`MctFile`] and the names and order of the
//! sections — is in module `layout`.

mod layout;
mod read;
mod write;

pub use layout::MctFile;
pub use read::{parse_mct, read_mct};
pub use write::{check_mct_writable, write_mct};
