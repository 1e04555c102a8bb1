//! The examples at the end of each command's `--help`.

/// After the top-level help: where the limits are.
pub(crate) const TOP: &str = "Examples:
  topoprobe infer                                  measure this machine, save and print it
  topoprobe show --topology m.json                 show a saved description
  topoprobe place --policy rr_core -n 8            where 8 threads go

Inputs are limited (files 1 GiB, 4096 contexts, 1024 nodes): see docs/LIMITS.md.
Exit status: 0 success, 1 runtime failure, 2 usage error.";

/// `infer`.
pub(crate) const INFER: &str = "Examples:
  topoprobe infer                                   measure this machine, save and print it
  topoprobe infer --cpus 0-15 --full --json         only these CPUs, every pair, JSON
  topoprobe infer --from-matrix m.csv -o m.json     infer from a matrix, write JSON (by extension)
  cat m.csv | topoprobe infer --from-matrix -       a matrix on standard input
  topoprobe infer --from-mct lpdxeon2680.mct --format tsv";

/// `show`.
pub(crate) const SHOW: &str = "Examples:
  topoprobe show                                    this machine's description (topoprobe infer)
  topoprobe show --topology m.json -v               the tree, one line per core
  topoprobe show --from-matrix m.csv -o m.json      the topology inferred from a matrix
  topoprobe show --topology m.json -o m.mct --ghz 2.8   libmctop's format (cycles at 2.8 GHz)
  topoprobe show --topology m.json -o g.svg         the graphs, rendered by Graphviz
  topoprobe show --topology m.json -o m.xml         hwloc XML for lstopo --input m.xml";

/// `matrix`.
pub(crate) const MATRIX: &str = "Examples:
  topoprobe matrix                                  a table of every pair
  topoprobe matrix --format csv -o m.csv            CSV for --from-matrix (also: -o m.csv)
  topoprobe matrix --cpus 0-7 --json                the matrix, its CPUs and flagged pairs";

/// `latency`.
pub(crate) const LATENCY: &str = "Examples:
  topoprobe latency 0 1                             median, min, spread, samples
  topoprobe latency 0 1 --smt --json";

/// `cache`.
pub(crate) const CACHE: &str = "Examples:
  topoprobe cache                                   sizes and latencies beside the OS's
  topoprobe cache --cpus 3 --max-size 512M --curve --json
  topoprobe cache --format csv -o caches.csv        one line per level";

/// `mem`.
pub(crate) const MEM: &str = "Examples:
  topoprobe mem                                     latency and bandwidth, socket to node
  topoprobe mem -n 4 --size 2G --json
  topoprobe mem --format csv -o mem.csv             the socket -> node table";

/// `contention`.
pub(crate) const CONTENTION: &str = "Examples:
  topoprobe contention --size 256M --json";

/// `heatmap`.
pub(crate) const HEATMAP: &str = "Examples:
  topoprobe heatmap -o m.svg                        this machine's description (topoprobe infer)
  topoprobe heatmap --from-matrix m.csv -o m.png
  topoprobe heatmap --topology m.json --png > m.png
  topoprobe heatmap --topology m.json --json        the ordered matrix, its levels and colours";

/// `report`.
pub(crate) const REPORT: &str = "Examples:
  topoprobe report -o report.html                   this machine's description (topoprobe infer)
  topoprobe report --topology m.json -o report.html
  topoprobe report --from-matrix m.csv -o report.html";

/// `place`.
pub(crate) const PLACE: &str = "Examples:
  topoprobe place --policy con_hwc -n 12 --topology m.json
  topoprobe place --policy rr_core -n 8 --format omp
  topoprobe place --policy balance_core --use-sockets 2 --format numactl
  topoprobe place --policy rr_core -n 8 -o placement.json   where, why, and the OpenMP variables";

/// `cpus`.
pub(crate) const CPUS: &str = "Examples:
  topoprobe cpus package:1.core:0-3                 hwloc-calc's logical locations
  topoprobe cpus S1:0-3 --format likwid             likwid-pin's domain, in its order
  topoprobe cpus all ~core:0 --format hwloc         set arithmetic; hwloc's mask
  topoprobe cpus -N core package:0                  how many cores (hwloc-calc --number-of)
  topoprobe cpus -I core 0x3c0f --topology m.json   which cores (hwloc-calc --intersect)

The set is resolved on --topology, else this machine's description, else the operating
system's view of this machine. The grammar, with hwloc-calc and likwid-pin equivalents:
docs/PLACEMENT.md.";

/// `os`.
pub(crate) const OS: &str = "Examples:
  topoprobe os                                      this machine
  topoprobe os --root node17.tar.bz2                a hwloc-gather-topology capture
  topoprobe os --root /mnt/capture --json           a sysfs root, as JSON

The JSON lists, per OS CPU, its package, die, cluster, core, NUMA node and every cache it
uses, and per node its CPUs, memory and distances: docs/OS_VIEW.md.";

/// `run`.
pub(crate) const RUN: &str = "Examples:
  topoprobe run --policy rr_core -n 8 -- ./prog args
  topoprobe run --policy con_hwc --mem interleave --skip 0x1 -- ./omp_prog
  topoprobe run --policy rr_core --json -o run.json -- ./prog   the report in run.json

The program's output is left alone; the report of the run is written only when
--format, --json or -o asks for it, when the program has ended: on standard error, in
the -o file, or on standard output with -o -. Exit status: the program's.";

/// `power`.
pub(crate) const POWER: &str = "Examples:
  topoprobe power --duration 1 --json               exits 1 where there are no RAPL counters";

/// `completions`.
pub(crate) const COMPLETIONS: &str = "Examples:
  topoprobe completions bash > ~/.local/share/bash-completion/completions/topoprobe
  topoprobe completions zsh -o ~/.zfunc/_topoprobe       (with fpath+=(~/.zfunc) in .zshrc)
  topoprobe completions fish > ~/.config/fish/completions/topoprobe.fish
scripts/install.sh installs them, and the man pages, for bash, zsh and fish.";
