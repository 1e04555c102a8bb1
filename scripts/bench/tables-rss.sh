#!/usr/bin/env bash
# The N² latency tables at the largest size topoprobe reads (4096 contexts): the peak
# resident memory of `infer --from-matrix` of three 4096-context matrices (text view), of
# the same writing its JSON description and its hwloc XML, and of `show` reading the
# description back; the description's size against the reader's limit. The matrices are synthetic, made once:
# - structured: 2 sockets, CCXs of 8 cores, SMT siblings i and i+2048, 1% noise, one
#   decimal;
# - unstructured: every pair its own latency between 50 and 300 ns (no structure to find:
#   the inference compares every profile and clusters every context);
# - directed: both directions of every pair, different, with 5 significant digits;
# - widest: the widest file the reader accepts (185 MB), every entry 10 characters
#   (latencies of about 10⁻²⁰ with 5 significant digits), directed.
#
#   scripts/bench/tables-rss.sh [CONTEXTS]     # log: docs/bench/tables-rss-DATE.log
source "$(dirname "$0")/common.sh" tables-rss
N=${1:-4096}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$N" "$tmp" <<'PY'
import random, sys
n, out = int(sys.argv[1]), sys.argv[2]
random.seed(42)
half = n // 2
def structured(a, b):
    ca, cb = a % half, b % half
    if ca == cb: base = 8.0
    elif ca // 8 == cb // 8: base = 25.0
    elif (ca < half // 2) == (cb < half // 2): base = 120.0
    else: base = 230.0
    return "%.1f" % (base * (1 + random.gauss(0, 0.01)))
def unstructured(a, b):
    lo, hi = min(a, b), max(a, b)
    return "%.1f" % (50 + ((lo * 2654435761 + hi * 40503) % 25000) / 100.0)
def directed(a, b):
    return "%.4f" % ((1.0 + ((a * 7919 + b * 104729) % 9000 + 1000) / 1e4) * 100)
def widest(a, b):
    return "%.4e" % ((1.0 + ((a * 7919 + b * 104729) % 9000 + 1000) / 1e4) * 1e-20)
for name, lat in [("structured", structured), ("unstructured", unstructured), ("directed", directed), ("widest", widest)]:
    with open("%s/%s.csv" % (out, name), "w") as f:
        for a in range(n):
            f.write(",".join("" if a == b else lat(a, b) for b in range(n)) + "\n")
PY
t() { /usr/bin/time -f '%e s %M KiB' -o "$tmp/t" "$@" > /dev/null; cat "$tmp/t"; }
for m in structured unstructured directed widest; do
    log "# $m: $N contexts, matrix $(du -h "$tmp/$m.csv" | cut -f1); /usr/bin/time -f '%e s %M KiB'"
    log "$m infer --from-matrix (text):        $(t "$TP" infer --from-matrix "$tmp/$m.csv")"
    log "$m infer --from-matrix --json -o:     $(t "$TP" infer --from-matrix "$tmp/$m.csv" --json -o "$tmp/d.json")"
    log "$m description: $(stat -c %s "$tmp/d.json") bytes (reader limit $((1 << 30)))"
    log "$m infer --from-matrix --format hwloc-xml -o: $(t "$TP" infer --from-matrix "$tmp/$m.csv" --format hwloc-xml -o "$tmp/d.xml")"
    log "$m hwloc XML: $(stat -c %s "$tmp/d.xml") bytes"
    log "$m show --topology (reads it back):   $(t "$TP" show --topology "$tmp/d.json")"
done
finish
