#!/usr/bin/env bash
# Peak memory (RSS) of topoprobe refusing an input just over each limit of docs/LIMITS.md:
# every reader must refuse before it allocates, so each figure stays far below the input's
# own size (the goal: at most 64 MiB). Prints a Markdown table.
#
#   scripts/limits-rss.sh [TOPOPROBE]     (default: target/release/topoprobe, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/topoprobe}
if [ ! -x "$bin" ]; then
    cargo build --release --locked -p topoprobe-cli >&2
fi
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A small valid description, the base of the JSON cases.
printf ',50\n50,\n' > "$dir/m2.csv"
"$bin" infer --from-matrix "$dir/m2.csv" --json -o "$dir/d2.json" 2>/dev/null

python3 - "$dir" <<'PY'
import json, sys, os
d = sys.argv[1]
base = json.load(open(f"{d}/d2.json"))
def dump(name, v):
    with open(f"{d}/{name}", "w") as f:
        json.dump(v, f)
# 4097 contexts (a list just over the context limit).
v = json.loads(json.dumps(base)); v["contexts"] = [v["contexts"][0]] * 4097; dump("contexts.json", v)
# 1025 nodes.
v = json.loads(json.dumps(base)); v["nodes"] = [{"id": 0, "os_id": 0, "local_sockets": []}] * 1025; dump("nodes.json", v)
# A latency row of 4097 entries, then 60 million more (a 200 MB row).
v = json.loads(json.dumps(base)); v["latency"]["raw"][1] = [1.5] * 4097; dump("row.json", v)
with open(f"{d}/longrow.json", "w") as f:
    s = json.dumps(base)
    i = s.index('"raw": [') + len('"raw": [')
    f.write(s[:i]); f.write("[" + ",".join(["1.5"] * 60_000_000) + "],"); f.write(s[i:])
# An OS CPU number above 1048575, and a latency above 1e12.
v = json.loads(json.dumps(base)); v["contexts"][1]["os_id"] = 1048576; dump("osid.json", v)
# Matrix CSV: a first row of 4097 columns; a latency of 1e13.
with open(f"{d}/wide.csv", "w") as f:
    f.write(",".join(["50"] * 4097) + "\n")
with open(f"{d}/big.csv", "w") as f:
    f.write(",1e13\n1e13,\n")
# .mct headers over the limits.
with open(f"{d}/hwcs.mct", "w") as f:
    f.write("#h #HWCs 4097 #Nodes 1 SMT 0\n0 0 0\n")
with open(f"{d}/nodes.mct", "w") as f:
    f.write("#h #HWCs 2 #Nodes 1025 SMT 0\n0 0 0\n")
# hwloc XML: one element over the limit (1048577 empty elements), and nesting of 257.
with open(f"{d}/elements.xml", "w") as f:
    f.write('<?xml version="1.0"?>\n<topology version="2.0">\n')
    f.write("<info/>\n" * 1048577)
    f.write("</topology>\n")
with open(f"{d}/deep.xml", "w") as f:
    f.write('<?xml version="1.0"?>\n<topology version="2.0">\n')
    f.write('<object type="Group">' * 257 + "</object>" * 257)
    f.write("</topology>\n")
# Capture archives: one file over 16 MiB; files over 256 MiB together (17 x 16 MiB).
import tarfile, io
class Zeros(io.RawIOBase):
    def __init__(self, n): self.left = n
    def readable(self): return True
    def readinto(self, b):
        k = min(len(b), self.left); b[:k] = bytes(k); self.left -= k; return k
def capture(name, sizes):
    with tarfile.open(f"{d}/{name}", "w:gz", compresslevel=1) as t:
        for i, n in enumerate(sizes):
            info = tarfile.TarInfo(f"cap/sys/devices/system/cpu/f{i}"); info.size = n
            t.addfile(info, io.BufferedReader(Zeros(n)))
capture("bigfile.tar.gz", [16 * 2**20 + 1])
with open(f"{d}/attributes.xml", "w") as f:
    f.write('<?xml version="1.0"?>\n<topology version="2.0">\n<info name="')
    f.write("=" * (4 * 2**20 + 1))
    f.write('"/>\n</topology>\n')
def entries(name, paths):
    with tarfile.open(f"{d}/{name}", "w:gz", compresslevel=1) as t:
        for p in paths:
            info = tarfile.TarInfo(p); info.size = 0
            t.addfile(info, io.BytesIO())
entries("deep.tar.gz", ["cap/" + "d/" * 32 + "f"])
entries("longname.tar.gz", ["cap/" + "n" * 4097])
entries("entries.tar.gz", (f"cap/f{i}" for i in range(1_000_001)))
capture("bigtotal.tar.gz", [16 * 2**20] * 17)
PY
# A file just over 1 GiB (sparse: no disk used).
truncate -s $((1024 * 1024 * 1024 + 1)) "$dir/huge.json"
# A sysfs tree whose `online` file is over 16 MiB.
mkdir -p "$dir/sys/sys/devices/system/cpu"
truncate -s $((16 * 1024 * 1024 + 1)) "$dir/sys/sys/devices/system/cpu/online"

row() { # what, limit, input size, command...
    local what=$1 limit=$2 file=$3
    shift 3
    local size=-
    [ -n "$file" ] && size=$(du -h --apparent-size "$file" | cut -f1)
    local out rc rss
    out=$( { /usr/bin/time -f '%M' "$@" >/dev/null 2>"$dir/err"; } 2>&1 ) || true
    rss=$(tail -1 "$dir/err" | tr -dc 0-9)
    rc=$(grep -c 'error' "$dir/err" || true)
    printf '| %s | %s | %s | %s MiB | %s |\n' "$what" "$limit" "$size" \
        "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" \
        "$( [ "$rc" -gt 0 ] && echo refused || echo ACCEPTED )"
}
# /usr/bin/time writes its figure after the command's own standard error.
echo "| input | limit | input size | peak RSS | result |"
echo "|---|---|---|---|---|"
row "a file" "1 GiB" "$dir/huge.json" "$bin" show --topology "$dir/huge.json"
row "contexts of a description" "4096" "$dir/contexts.json" "$bin" show --topology "$dir/contexts.json"
row "nodes of a description" "1024" "$dir/nodes.json" "$bin" show --topology "$dir/nodes.json"
row "a latency row of a description" "4096 entries" "$dir/row.json" "$bin" show --topology "$dir/row.json"
row "a 60-million-entry latency row" "4096 entries" "$dir/longrow.json" "$bin" show --topology "$dir/longrow.json"
row "an OS CPU number of a description" "1 048 575" "$dir/osid.json" "$bin" show --topology "$dir/osid.json"
row "columns of a matrix CSV" "4096" "$dir/wide.csv" "$bin" show --from-matrix "$dir/wide.csv"
row "a latency of a matrix CSV" "10¹²" "$dir/big.csv" "$bin" show --from-matrix "$dir/big.csv"
row "#HWCs of a .mct header" "4096" "$dir/hwcs.mct" "$bin" show --topology "$dir/hwcs.mct"
row "#Nodes of a .mct header" "1024" "$dir/nodes.mct" "$bin" show --topology "$dir/nodes.mct"
row "a CPU number in --cpus" "1 048 575" "" "$bin" cpus 1048576
row "a CPU list repeating 0-1048575 1000 times" "linear time" "" "$bin" cpus "$(printf '0-1048575,%.0s' $(seq 999))0-1048575"
row "a sysfs file" "16 MiB" "$dir/sys/sys/devices/system/cpu/online" "$bin" cpus --topology "$dir/sys" all
row "elements of an hwloc XML file" "1 048 576" "$dir/elements.xml" "$bin" show --topology "$dir/elements.xml"
row "nesting of an hwloc XML file" "256 levels" "$dir/deep.xml" "$bin" show --topology "$dir/deep.xml"
row "attributes of an hwloc XML file" "4 194 304" "$dir/attributes.xml" "$bin" show --topology "$dir/attributes.xml"
row "folders in a capture entry's path" "32" "$dir/deep.tar.gz" "$bin" os --root "$dir/deep.tar.gz"
row "a long name in a capture archive" "4096 bytes" "$dir/longname.tar.gz" "$bin" os --root "$dir/longname.tar.gz"
row "entries of a capture archive" "1 000 000" "$dir/entries.tar.gz" "$bin" os --root "$dir/entries.tar.gz"
row "one file of a capture archive" "16 MiB" "$dir/bigfile.tar.gz" "$bin" os --root "$dir/bigfile.tar.gz"
row "the files of a capture archive, together" "256 MiB" "$dir/bigtotal.tar.gz" "$bin" os --root "$dir/bigtotal.tar.gz"
row "mem --size" "memory available now" "" "$bin" mem --latency-only --size 512T
