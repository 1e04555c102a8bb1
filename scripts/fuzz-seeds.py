#!/usr/bin/env python3
"""Builds the curated seeds of every fuzz target (fuzz/seeds/<target>/, committed and replayed
by `cargo test -p topoprobe-fuzz`) from the shared data (../shared/data), the repository's
data/ and the test fixtures, and the templates of the description generator
(fuzz/templates/, committed: rewritten only with --templates). The JSON seeds are written by
the binary: target/debug/topoprobe, or the one named by $TOPOPROBE. Usage:
scripts/fuzz-seeds.py [--templates] [SHARED_DATA_DIR]; see docs/FUZZING.md."""
import glob, io, json, os, shutil, subprocess, sys, tarfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [a for a in sys.argv[1:] if a != "--templates"]
shared = args[0] if args else os.path.join(root, "..", "shared", "data")
out = os.path.join(root, "fuzz", "seeds")
shutil.rmtree(out, ignore_errors=True)
for t in ["mct", "csv", "json", "sysfs", "args", "json_gen", "args_gen", "hwloc_xml", "capture"]:
    os.makedirs(os.path.join(out, t))

def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

# .mct: libmctop's files, the fixtures, the bad examples.
for p in glob.glob(os.path.join(shared, "mct", "*.mct")) + glob.glob(os.path.join(root, "data", "examples", "*.mct")) \
        + glob.glob(os.path.join(root, "model", "tests", "bad", "*.mct")):
    put("mct", os.path.basename(p), open(p, "rb").read())
put("mct", "small.mct", "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n1 0 10\n1 1 0\n#Mem_latencies 1\n0 0 90\n1 0 91\n"
    "#Mem_bw-READ 1\n0 0 5.5\n#Cache_levels 1\nCache_level 1 Latency 4 SizeOS 32 SizeEst 0#Power_measurements 1\n"
    "Power_sockt_0_idle 1 2 3 4 5\nPower_total_1_idle 1 2 3 4 5\n")

# Matrix CSV: the small shared matrices (at most 4 KB: AFL works best on small inputs).
for p in glob.glob(os.path.join(shared, "latency", "matrices", "*.csv")) + glob.glob(os.path.join(root, "model", "tests", "bad", "*.csv")):
    data = open(p, "rb").read()
    if len(data) <= 4096:
        put("csv", os.path.basename(p), data)
put("csv", "lower.csv", ",,\n40,,\n90,91,\n")

# JSON descriptions: inferred from two small matrices by the binary, and the bad examples.
exe = os.environ.get("TOPOPROBE") or os.path.join(root, "target", "debug", "topoprobe")
for m in ["kc-i3-4150.csv", "hy-apple-m1pro-10c.csv"]:
    p = os.path.join(shared, "latency", "matrices", m)
    if os.path.exists(exe) and os.path.exists(p):
        r = subprocess.run([exe, "infer", "--from-matrix", p, "--json"], capture_output=True)
        if r.returncode == 0:
            put("json", m.replace(".csv", ".json"), r.stdout)
for p in glob.glob(os.path.join(root, "model", "tests", "bad", "*.json")):
    put("json", os.path.basename(p), open(p, "rb").read())

# sysfs: the files of fuzz/src/lib.rs's SYSFS_FILES taken from each capture, joined by 0xFF.
lib = open(os.path.join(root, "fuzz", "src", "lib.rs")).read()
start = lib.index("pub const SYSFS_FILES")
files = [l.strip().strip('",') for l in lib[start:lib.index("];", start)].splitlines()[1:]]
for tb in glob.glob(os.path.join(shared, "sysfs", "*.tar.bz2")):
    with tarfile.open(tb) as t:
        members = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name and m.isfile()}
        pieces = []
        for f in files:
            m = members.get(f)
            pieces.append(t.extractfile(m).read() if m else b"")
        put("sysfs", os.path.basename(tb).replace(".tar.bz2", ""), b"\xff".join(pieces))

# Arguments: first byte 0 CPU list, 1 CPU mask, 2 size.
for i, s in enumerate(["0-7,16-23", "0-15:2/4", "1,3,5\n\0", ""]):
    put("args", f"list{i}", b"\x00" + s.encode())
for i, s in enumerate(["00000000,0000000f", "fffff", "00000100,00000001\n"]):
    put("args", f"mask{i}", b"\x01" + s.encode())
for i, s in enumerate(["4096", "64K", "1.5GiB", "2g"]):
    put("args", f"size{i}", b"\x02" + s.encode())
# Templates of the description generator (json_gen): real descriptions inferred by the
# binary, minified, with a fixed creation time and no local path. The generator numbers
# their nodes, so a new template changes what the json_gen corpus means: rewritten only
# when asked (--templates).
templates = os.path.join(root, "fuzz", "templates")
if "--templates" in sys.argv:
    os.makedirs(templates, exist_ok=True)
    for name, flag, src in [("i3-4150", "--from-matrix", os.path.join(shared, "latency", "matrices", "kc-i3-4150.csv")),
                            ("m1pro", "--from-matrix", os.path.join(shared, "latency", "matrices", "hy-apple-m1pro-10c.csv")),
                            ("pc4", "--from-mct", os.path.join(shared, "mct", "lpdpc4.mct")),
                            ("xeon-2s", "--from-mct", os.path.join(root, "data", "examples", "xeon-e5-2680v2-2s.mct"))]:
        r = subprocess.run([exe, "infer", flag, src, "--json"], capture_output=True, check=True)
        d = json.loads(r.stdout)
        d["provenance"]["created"] = "2026-01-01T00:00:00Z"
        d["provenance"]["duration_s"] = 0.01
        d["provenance"]["source"]["path"] = os.path.basename(src)
        with open(os.path.join(templates, name + ".json"), "w") as f:
            f.write(json.dumps(d, separators=(",", ":")) + "\n")

# json_gen: each template unedited, and with one edit of each kind (byte 0: template |
# policy << 2; then op, node (16 bits, big-endian), arg per edit; see
# fuzz/src/json_gen.rs). The reproducers aimed at named nodes are in fuzz/regressions/json_gen/
# (fuzz/tests/it/reproducers.rs), and scripts/fuzz.sh starts from them beside these seeds.
for t in range(4):
    put("json_gen", f"template{t}", bytes([t]))
    for op, arg in [(0, 8), (0, 20), (1, 9), (2, 1), (3, 100)]:
        put("json_gen", f"template{t}-{op}-{arg}", bytes([t, op, 0, 40 + 7 * t, arg]))

# args_gen: a form byte (list, online file, mask), then items of 3 bytes (see
# fuzz/src/args_gen.rs).
for mode in range(3):
    put("args_gen", f"mode{mode}", bytes([mode, 0, 1, 2, 3, 0x41, 7, 8, 0x82, 5, 6, 1]))
print("seeds in", out)

# hwloc XML: lstopo's files of the measured machines. Capture archives: the
# hwloc-gather-topology tarballs of data/sysfs, as they are.
for p in glob.glob(os.path.join(root, "data", "machines", "*", "lstopo.xml")):
    put("hwloc_xml", os.path.basename(os.path.dirname(p)) + ".xml", open(p, "rb").read())
for p in glob.glob(os.path.join(root, "data", "sysfs", "*.tar.bz2")):
    put("capture", os.path.basename(p), open(p, "rb").read())
