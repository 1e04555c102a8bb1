//! The measured figures of a description as a POSIX shell script that adds them with
//! `hwloc-annotate` to the XML `lstopo` writes of the same machine, so that the OS's view
//! (with its PCI devices, memory-side caches, CPU kinds…) gains what topoprobe measured:
//!
//! ```sh
//! lstopo-no-graphics --of xml > machine.xml
//! topoprobe show --format hwloc-annotate -o annotate.sh
//! sh annotate.sh machine.xml annotated.xml
//! lstopo-no-graphics --input annotated.xml --distances
//! lstopo-no-graphics --input annotated.xml --memattrs
//! ```
//!
//! The script adds the latency matrix as the distances structure between the PUs that
//! the XML export holds, and the memory attributes (see the [parent module](super)), with
//! each socket's CPU set as initiator. hwloc-annotate names objects by logical index: the
//! script finds the logical index of each OS number in the input file with
//! `lstopo-no-graphics --only`, so it fails with a message naming the PU or node when the
//! input file is of another machine. It works on a copy and writes the output file only
//! when every step succeeded; hwloc-annotate reports some failures only on standard
//! error, so any message it prints fails the script.

use std::fmt::Write as _;
use std::io;

use super::{bitmap, exported_nodes, figures, node_os};
use crate::format::sink::{self, TextSink};
use crate::topology::Topology;

/// Keeps a value for a shell comment: printable characters only.
fn comment(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).collect()
}

const PRELUDE: &str = r#"set -eu
if [ "$#" -ne 2 ]; then
  echo "usage: sh $0 IN.xml OUT.xml  (IN.xml: lstopo-no-graphics --of xml of the measured machine)" >&2
  exit 2
fi
command -v hwloc-annotate >/dev/null 2>&1 || { echo "topoprobe: hwloc-annotate not found: install hwloc" >&2; exit 1; }
in=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -- "$in" "$tmp/work.xml"
lstopo-no-graphics --input "$in" --only pu >"$tmp/pu"
lstopo-no-graphics --input "$in" --only numanode >"$tmp/numanode"
# location TYPE OS: hwloc's location (TYPE:LOGICAL) of the object with OS number OS.
location() {
  awk -v type="$1" -v os="$2" '
    match($0, /L#[0-9]+/) {
      l = substr($0, RSTART + 2, RLENGTH - 2)
      if (match($0, /P#[0-9]+/) && substr($0, RSTART + 2, RLENGTH - 2) == os) {
        print type ":" l; found = 1; exit
      }
    }
    END {
      if (!found) {
        print "topoprobe: " type " P#" os " is not in the input file: is it of the measured machine?" > "/dev/stderr"
        exit 1
      }
    }' "$tmp/$1"
}
# annotate ARGS: hwloc-annotate on the copy; any message it prints is a failure.
annotate() {
  if ! hwloc-annotate "$tmp/work.xml" "$tmp/work.xml" "$@" 2>"$tmp/err" || [ -s "$tmp/err" ]; then
    cat "$tmp/err" >&2
    echo "topoprobe: hwloc-annotate $* failed" >&2
    exit 1
  fi
}
"#;

/// Renders the `hwloc-annotate` script of a topology (see the [module
/// documentation](self)).
#[must_use]
pub fn render(topo: &Topology) -> String {
    sink::to_string(|out| write(topo, out))
}

/// Writes the `hwloc-annotate` script of a topology into `out` as it is made: the text of
/// [`render`], never held whole (4096 contexts make 16.8 million distance values).
///
/// # Errors
///
/// The first error of `out`.
pub fn write(topo: &Topology, out: &mut dyn io::Write) -> io::Result<()> {
    let mut out = TextSink::new(out);
    let _ = out.write_str("#!/bin/sh\n");
    let p = topo.provenance();
    let _ = writeln!(
        out,
        "# topoprobe {}: the measurements of {} for hwloc-annotate.",
        comment(&p.version),
        comment(&p.source.to_string())
    );
    if let Some(h) = &topo.machine().hostname {
        let _ = writeln!(out, "# Measured on host {}.", comment(h));
    }
    let _ = out.write_str(
        "# Usage: lstopo-no-graphics --of xml > machine.xml   (on the measured machine)\n\
         #        sh THIS-SCRIPT machine.xml annotated.xml   (the output may be the input)\n\
         #        lstopo-no-graphics --input annotated.xml --distances   (or --memattrs)\n",
    );
    let distances = figures::distances(topo);
    let attrs = figures::memattrs(topo, exported_nodes(topo));
    match &distances {
        Some(d) => {
            let _ = writeln!(
                out,
                "# Adds the distances `{}` between the {} PUs (kind {}: from the user, means latency).",
                d.name,
                d.os_ids.len(),
                d.kind
            );
        }
        None => {
            let _ = out.write_str("# The description has no latency matrix to add.\n");
        }
    }
    if attrs.is_empty() {
        let _ = out.write_str("# The description has no memory figures to add.\n");
    } else {
        let names: Vec<&str> = attrs.iter().map(|a| a.name).collect();
        let _ = writeln!(
            out,
            "# Adds the memory attributes {} (ns; MiB/s) from each socket's CPUs to each node.",
            names.join(", ")
        );
    }
    let _ = out.write_str(PRELUDE);
    if let Some(d) = distances {
        let _ = out.write_str("{\n");
        let _ = writeln!(out, "  echo 'name={}'", d.name);
        let _ = writeln!(out, "  echo {}", d.kind);
        let _ = writeln!(out, "  echo {}", d.os_ids.len());
        let _ = out.write_str("  for cpu in");
        for (i, id) in d.os_ids.iter().enumerate() {
            if i % 16 == 0 {
                let _ = out.write_str(" \\\n   ");
            }
            let _ = write!(out, " {id}");
        }
        let _ = out.write_str("; do\n    location pu \"$cpu\"\n  done\n  cat <<'VALUES'\n");
        for from in 0..d.os_ids.len() {
            for v in d.row(from) {
                let _ = writeln!(out, "{v}");
            }
        }
        let _ = out.write_str("VALUES\n} >\"$tmp/distances\"\n");
        let _ = out.write_str("annotate -- root -- distances \"$tmp/distances\"\n");
    }
    // The location of each target node, looked up once.
    let mut targets: Vec<u32> = attrs
        .iter()
        .flat_map(|a| a.values.iter().map(|v| node_os(topo, v.node)))
        .collect();
    targets.sort_unstable();
    targets.dedup();
    for n in targets {
        let _ = writeln!(out, "node{n}=$(location numanode {n})");
    }
    for attr in attrs {
        if attr.custom {
            let _ = writeln!(
                out,
                "annotate -- root -- memattr {} {}",
                attr.name, attr.flags
            );
        }
        for v in attr.values {
            let _ = writeln!(
                out,
                "annotate -- \"$node{}\" -- memattr {} {} {}",
                node_os(topo, v.node),
                attr.name,
                bitmap(&v.cpus),
                v.value
            );
        }
    }
    let _ = out.write_str("cp -- \"$tmp/work.xml\" \"$out\"\n");
    out.finish()
}
