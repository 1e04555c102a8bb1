#!/usr/bin/env bash
# The N² latency tables at the largest size topoprobe reads (4096 contexts): the peak
# resident memory of `infer --from-matrix` of a 4096-context matrix (text view), of the
# same writing its JSON description, and of `show` reading that description back; the
# description's size against the 256 MiB reader limit. The matrix is synthetic (2 sockets,
# CCXs of 8 cores, SMT siblings i and i+2048, 1% noise, one decimal), made once.
#
#   scripts/bench/tables-rss.sh [CONTEXTS]     # log: docs/bench/tables-rss-DATE.log
source "$(dirname "$0")/common.sh" tables-rss
N=${1:-4096}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$N" "$tmp/m.csv" <<'PY'
import random, sys
n, out = int(sys.argv[1]), sys.argv[2]
random.seed(42)
half = n // 2
def lat(a, b):
    ca, cb = a % half, b % half
    if ca == cb: return 8.0
    if ca // 8 == cb // 8: return 25.0
    if (ca < half // 2) == (cb < half // 2): return 120.0
    return 230.0
with open(out, "w") as f:
    for a in range(n):
        f.write(",".join("" if a == b else "%.1f" % (lat(a, b) * (1 + random.gauss(0, 0.01))) for b in range(n)) + "\n")
PY
log "# $N contexts: matrix $(du -h "$tmp/m.csv" | cut -f1); /usr/bin/time -f '%e s %M KiB'"
t() { /usr/bin/time -f '%e s %M KiB' -o "$tmp/t" "$@" > /dev/null; cat "$tmp/t"; }
log "infer --from-matrix (text):        $(t "$TP" infer --from-matrix "$tmp/m.csv")"
log "infer --from-matrix --json -o:     $(t "$TP" infer --from-matrix "$tmp/m.csv" --json -o "$tmp/d.json")"
log "description: $(stat -c %s "$tmp/d.json") bytes (reader limit $((256 << 20)))"
log "show --topology (reads it back):   $(t "$TP" show --topology "$tmp/d.json")"
finish
