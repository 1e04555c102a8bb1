#!/usr/bin/env python3
"""Judges what scripts/vm/checks.sh collected in a directory: topoprobe against the OS
(hwloc's lstopo and hwloc-calc, which read the same sysfs) and against itself.

    scripts/vm/compare.py DIR [--shape NAME] [--json] [--strict]

Prints one line per check, `agree` or `DISAGREE` with both answers (the reference, from
the OS or hwloc, first), or `unjudged` where hwloc cannot answer (its own limits); --json prints them as a JSON list of objects {shape, check, ok,
reference, topoprobe, detail} instead. Exit status: 0 when it could judge (disagreements
included; with --strict, 1 when any check disagrees), 2 when DIR lacks checks.sh's files.

Checks (a missing input makes its check disagree, naming the file):
  os.counts            packages, cores, PUs, NUMA nodes of `topoprobe os --json` vs lstopo's XML
  os.packages/.cores   the PU set of every package / core
  os.nodes             every NUMA node's CPUs (nodes without CPUs: both say none), memory
  os.l2/.l3            every L2 / L3 cache's PU set and size
  os.distances         the node distance table (hwloc's NUMALatency)
  os.memory-side-caches  the memory-side caches of every node (HMAT)
  os.offline/.cpuset   offline CPUs vs /sys; the allowed CPUs vs hwloc's allowed_cpuset
  cpus-os.NAME         `topoprobe cpus NAME` before any description was saved vs hwloc-calc
  cpus.NAME            `topoprobe cpus NAME` after `infer` saved one vs hwloc-calc
  infer.exit/.sockets/.cores/.smt   infer's exit status; its socket and core partitions
                       and SMT against the OS's packages, cores and SMT
  mem.exit/.nodes      mem's exit status; every OS node appears in its results (or in
                       its plan, left out by the budget, said)
  mem.hmat             mem shows ACPI HMAT's figures beside its own for every node the OS
                       view has them for
  plans, place, export, export-load   exit statuses of the plans, place, the hwloc-XML
                       export of infer's description and lstopo loading it
  place.allowed        `place --policy rr_core -n 8` picks allowed CPUs, one per core first
  run.pin              `run --pin package:0.core:1` runs the program on that core's first
                       PU (hwloc-calc's answer)
  run.allowed, autopin.allowed, balance.allowed   `run`, `autopin` and `balance` never
                       use a CPU outside the process's cpuset (Cpus_allowed_list)
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def cpulist(cpus):
    """[0,1,2,3,8] -> '0-3,8'; an empty set -> '(none)'."""
    cpus = sorted(set(cpus))
    if not cpus:
        return "(none)"
    parts, lo, prev = [], cpus[0], cpus[0]
    for c in cpus[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(str(lo) if lo == prev else f"{lo}-{prev}")
        if c is not None:
            lo = prev = c
    return ",".join(parts)


def parse_list(text):
    """'0-3,8' or '0,1,2' or '0 1' -> set of ints; None when it is not a CPU list."""
    text = text.strip()
    out = set()
    if not text:
        return out
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.update(range(int(lo), int(hi) + 1))
            else:
                out.add(int(part))
        except ValueError:
            return None
    return out


def parse_mask(mask):
    """hwloc's '0x000000ff,0x00000001' -> set of bits."""
    if not mask or "f...f" in mask:
        return set()
    words = mask.split(",")
    value = 0
    for w in words:
        value = (value << 32) | int(w, 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


def fmt_sets(sets):
    return "[" + " ".join(sorted((cpulist(s) for s in sets), key=lambda x: (len(x), x))) + "]"


class Report:
    def __init__(self, shape):
        self.shape = shape
        self.rows = []

    def add(self, check, ok, reference, topoprobe, detail="", judged=True):
        self.rows.append({"shape": self.shape, "check": check, "ok": bool(ok),
                          "reference": str(reference), "topoprobe": str(topoprobe),
                          "detail": detail, "judged": judged})


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def steps(d):
    """checks.tsv -> {name: (status, seconds)}."""
    out = {}
    for line in (read(os.path.join(d, "checks.tsv")) or "").splitlines():
        f = line.split("\t")
        if len(f) >= 3:
            out[f[0]] = (int(f[1]), float(f[2]))
    return out


def err_of(d, name):
    e = (read(os.path.join(d, name + ".err")) or "").strip().splitlines()
    return e[0] if e else ""


def hwloc_objects(root):
    """Every object of lstopo's XML with its type, os_index, attributes and the PUs below it."""
    objs = []

    def walk(el):
        pus = set()
        if el.get("type") == "PU":
            pus.add(int(el.get("os_index")))
        for child in el.findall("object"):
            pus |= walk(child)
        objs.append((el.get("type"), el.attrib, pus, el))
        return pus

    for top in root.findall("object"):
        walk(top)
    return objs


def compare_os(d, r, st):
    osj = None
    text = read(os.path.join(d, "os.out"))
    try:
        osj = json.loads(text) if text else None
    except ValueError as e:
        r.add("os.exit", False, "valid JSON", f"unparsable os --json: {e}")
    if osj is None:
        r.add("os.exit", False, "exit 0 and JSON", f"exit {st.get('os', ('missing',))[0]}: {err_of(d, 'os')}")
    xml_text = read(os.path.join(d, "lstopo-xml.out"))
    try:
        xml = ET.fromstring(xml_text) if xml_text else None
    except ET.ParseError as e:
        xml = None
        r.add("lstopo.exit", False, "valid XML", f"unparsable lstopo XML: {e}")
    if osj is None or xml is None:
        if xml is None:
            r.add("lstopo.exit", False, "exit 0 and XML", "lstopo-xml.out missing or empty")
        return osj, None
    objs = hwloc_objects(xml)

    def of(t):
        return [o for o in objs if o[0] == t]

    # Counts
    hw = {"packages": len(of("Package")), "cores": len(of("Core")), "pus": len(of("PU")),
          "numa_nodes": len(of("NUMANode"))}
    tp = {k: osj.get("counts", {}).get(k) for k in hw}
    r.add("os.counts", hw == tp, hw, tp)

    cpus = osj.get("cpus") or []
    # Packages and cores
    pk = {}
    for c in cpus:
        pk.setdefault(c.get("package"), set()).add(c["cpu"])
    tp_p = {frozenset(s) for s in pk.values()}
    hw_p = {frozenset(o[2]) for o in of("Package")}
    r.add("os.packages", tp_p == hw_p, fmt_sets(hw_p), fmt_sets(tp_p))
    tp_c = {frozenset(c.get("core_cpus") or [c["cpu"]]) for c in cpus}
    hw_c = {frozenset(o[2]) for o in of("Core")}
    r.add("os.cores", tp_c == hw_c, fmt_sets(hw_c), fmt_sets(tp_c))
    r.add("os.smt", bool(osj.get("smt")) == any(len(s) > 1 for s in hw_c),
          "SMT" if any(len(s) > 1 for s in hw_c) else "no SMT", "SMT" if osj.get("smt") else "no SMT")

    # Nodes: CPUs (a CPU-less node has its locality as hwloc cpuset: compared as "none"
    # when the OS lists no CPU) and memory.
    tp_n, hw_n, tp_m, hw_m = {}, {}, {}, {}
    for n in osj.get("nodes") or []:
        tp_n[n["node"]] = set(n.get("cpus") or [])
        tp_m[n["node"]] = n.get("memory_bytes")
    for o in of("NUMANode"):
        i = int(o[1].get("os_index"))
        hw_n[i] = parse_mask(o[1].get("cpuset"))
        hw_m[i] = int(o[1].get("local_memory", 0))
    for i in hw_n:
        if not tp_n.get(i) and i in tp_n:
            # hwloc gives a CPU-less node the CPUs it is local to; the OS lists none.
            hw_n[i] = set()
    fmt = lambda m: " ".join(f"{k}:{cpulist(v)}" for k, v in sorted(m.items()))
    r.add("os.nodes", tp_n == hw_n, fmt(hw_n), fmt(tp_n))
    mem_ok = set(tp_m) == set(hw_m) and all(
        tp_m[k] is not None and abs(tp_m[k] - hw_m[k]) <= 0.01 * max(hw_m[k], 1) for k in hw_m)
    fmtm = lambda m: " ".join(f"{k}:{(v or 0) // 1048576}MiB" for k, v in sorted(m.items()))
    r.add("os.node-memory", mem_ok, fmtm(hw_m), fmtm(tp_m))

    # Caches L2, L3: (size, PUs)
    for level in (2, 3):
        tp_k = {(c.get("size_bytes"), frozenset(c.get("cpus") or []))
                for c in osj.get("caches") or [] if c.get("level") == level and c.get("type") in ("unified", None)}
        hw_k = {(int(o[1].get("cache_size", 0)), frozenset(o[2])) for o in of(f"L{level}Cache")}
        f = lambda s: "[" + " ".join(sorted(f"{cpulist(p)}={(z or 0) // 1024}K" for z, p in s)) + "]"
        r.add(f"os.l{level}", tp_k == hw_k, f(hw_k), f(tp_k))

    # Distances
    hw_d = {}
    for dist in xml.iter("distances2"):
        if dist.get("type") != "NUMANode" or "Latency" not in (dist.get("name") or "NUMALatency"):
            continue
        idx = [int(x) for x in " ".join(e.text or "" for e in dist.findall("indexes")).split()]
        vals = [int(x) for x in " ".join(e.text or "" for e in dist.findall("u64values")).split()]
        n = len(idx)
        for a in range(n):
            for b in range(n):
                if a * n + b < len(vals):
                    hw_d[(idx[a], idx[b])] = vals[a * n + b]
    tp_d = {}
    nodes = sorted(n["node"] for n in osj.get("nodes") or [])
    for n in osj.get("nodes") or []:
        for b, v in zip(nodes, n.get("distances") or []):
            tp_d[(n["node"], b)] = v
    if hw_d or len(nodes) > 1:
        diff = sorted(k for k in set(hw_d) | set(tp_d) if hw_d.get(k) != tp_d.get(k))
        show = lambda m: " ".join(f"{a}>{b}:{m.get((a, b))}" for a, b in diff[:6])
        r.add("os.distances", not diff, show(hw_d) if diff else f"{len(hw_d)} entries",
              show(tp_d) if diff else f"{len(tp_d)} entries")

    # Memory-side caches
    hw_ms = set()
    for o in of("MemCache"):
        below = [int(c.get("os_index")) for c in o[3].iter("object") if c.get("type") == "NUMANode"]
        for n in below:
            hw_ms.add((n, int(o[1].get("cache_size", 0))))
    tp_ms = {(c.get("node", n["node"]), c.get("size_bytes"))
             for n in osj.get("nodes") or [] for c in n.get("memory_side_caches") or []}
    fm = lambda s: " ".join(f"node{n}:{(z or 0) // 1048576}MiB" for n, z in sorted(s)) or "(none)"
    r.add("os.memory-side-caches", hw_ms == tp_ms, fm(hw_ms), fm(tp_ms))

    # Offline CPUs and the cpuset
    online = (read(os.path.join(d, "cpus-online.txt")) or "").splitlines()
    sys_off = parse_list(online[2]) if len(online) > 2 else set()
    r.add("os.offline", set(osj.get("offline") or []) == (sys_off or set()),
          cpulist(sys_off or []), cpulist(osj.get("offline") or []))
    machine = next((o for o in objs if o[0] == "Machine"), None)
    if machine is not None and machine[1].get("allowed_cpuset"):
        allowed = parse_mask(machine[1]["allowed_cpuset"])
        tp_allowed = set(osj["cpuset"]) if osj.get("cpuset") is not None else {c["cpu"] for c in cpus}
        tp_allowed -= set(osj.get("offline") or [])
        r.add("os.cpuset", allowed == tp_allowed, cpulist(allowed), cpulist(tp_allowed))
    return osj, objs


def compare_cpus(d, r, st):
    names = (read(os.path.join(d, "names.txt")) or "").split()
    for name in names:
        ref_text = read(os.path.join(d, f"hwloc-calc.{name}.out"))
        ref = parse_list(ref_text or "")
        ref_s = cpulist(ref) if ref is not None else repr(ref_text)
        # hwloc-calc has its own limits (within a cpuset that leaves a core one PU it
        # cannot resolve `core:N`): no reference, so nothing to judge.
        unanswered = st.get(f"hwloc-calc.{name}", (1,))[0] != 0 or (
            not ref and bool(err_of(d, f"hwloc-calc.{name}")))
        if unanswered:
            ref_s = f"hwloc-calc cannot answer: {err_of(d, 'hwloc-calc.' + name)}"
        for kind, label in (("cpus-os", "before infer"), ("cpus", "after infer")):
            key = f"{kind}.{name}"
            if key not in st:
                continue
            status = st[key][0]
            got = parse_list(read(os.path.join(d, key + ".out")) or "")
            if unanswered:
                said = f"exit {status}: {err_of(d, key)}" if status else cpulist(got or [])
                r.add(key, True, ref_s, said, label + "; not judged", judged=False)
            elif status != 0:
                r.add(key, False, ref_s, f"exit {status}: {err_of(d, key)}", label)
            else:
                r.add(key, got == ref, ref_s, cpulist(got) if got is not None else "unparsable", label)


def exit_and_json(d, r, st, step, name):
    """Adds STEP.exit (exit 0) and returns the JSON file NAME that the step wrote, or None."""
    status = st.get(step, (None,))[0]
    r.add(f"{step}.exit", status == 0, "exit 0", f"exit {status}" + (f": {err_of(d, step)}" if status else ""))
    return json_of(d, name)


def compare_infer(d, r, st, osj):
    inf = exit_and_json(d, r, st, "infer", "infer.json")
    if inf is None or osj is None:
        r.add("infer.sockets", False, "a description", "infer.json missing or unparsable")
        return
    ctx = {c["id"]: c.get("os_id", c["id"]) for c in inf.get("contexts") or []}
    tp_s = {frozenset(ctx.get(i, i) for i in s.get("contexts") or []) for s in inf.get("sockets") or []}
    tp_c = {frozenset(ctx.get(i, i) for i in c.get("contexts") or []) for c in inf.get("cores") or []}
    pk = {}
    for c in osj.get("cpus") or []:
        pk.setdefault(c.get("package"), set()).add(c["cpu"])
    # infer measures the CPUs this process may use: the OS's sets within them.
    allowed = allowed_list(read(os.path.join(d, "allowed.out")))
    inside = (lambda c: c in allowed) if allowed else (lambda c: True)
    os_s = {frozenset(x for x in s if inside(x)) for s in pk.values()} - {frozenset()}
    os_c = {frozenset(x for x in (c.get("core_cpus") or [c["cpu"]]) if inside(x))
            for c in osj.get("cpus") or [] if inside(c["cpu"])}
    r.add("infer.sockets", tp_s == os_s, f"{len(os_s)} {fmt_sets(os_s)}", f"{len(tp_s)} {fmt_sets(tp_s)}")
    r.add("infer.cores", tp_c == os_c, f"{len(os_c)} {fmt_sets(os_c)}", f"{len(tp_c)} {fmt_sets(tp_c)}")
    smt = inf.get("facts", {}).get("smt", {}).get("value")
    r.add("infer.smt", bool(smt) == bool(osj.get("smt")), "SMT" if osj.get("smt") else "no SMT",
          "SMT" if smt else "no SMT")


def compare_mem(d, r, st, osj):
    m = exit_and_json(d, r, st, "mem", "mem.json")
    if m is None or osj is None:
        r.add("mem.nodes", False, "every node", "mem.json missing or unparsable")
        return
    named = {x.get("node") for key in ("results", "latency") for x in m.get(key) or []}
    # A node the budget left out is named in the cost's steps or its left-out notes
    # ("left out: socket 0 -> nodes 1-4"), with why.
    cost = m.get("cost") or {}
    for step in cost.get("steps") or []:
        for word in re.findall(r"node (\d+)", json.dumps(step)):
            named.add(int(word))
    for note in cost.get("left_out") or []:
        for lst in re.findall(r"-> nodes? ([0-9,-]+)", note.split("left out:", 1)[-1]):
            named |= parse_list(lst) or set()
    want = {n["node"] for n in osj.get("nodes") or []}
    mems = None
    for line in (read(os.path.join(d, "allowed.out")) or "").splitlines():
        if line.startswith("Mems_allowed_list:"):
            mems = parse_list(line.split(":", 1)[1])
    if mems is not None:
        # A cpuset's other nodes are not to be touched.
        r.add("mem.allowed", not (named - mems - {None}), f"nodes {cpulist(mems)}",
              f"nodes {cpulist(n for n in named if n is not None)}")
        want &= mems
    # HMAT: what the firmware says stands beside the measurement, for every node the
    # OS view has figures for and mem measured.
    os_hmat = {n["node"] for n in osj.get("nodes") or [] if n.get("hmat")}
    measured = {x.get("node") for x in m.get("results") or []}
    shown = {h.get("node") for h in m.get("hmat") or []}
    if os_hmat:
        expect = os_hmat & measured
        r.add("mem.hmat", expect <= shown, f"HMAT of nodes {cpulist(expect)}",
              f"HMAT of nodes {cpulist(n for n in shown if n is not None)}")
    r.add("mem.nodes", want <= named, f"nodes {cpulist(want)}", f"nodes {cpulist(n for n in named if n is not None)}",
          "missing: " + cpulist(want - named) if want - named else "")


def allowed_list(text):
    """The CPUs of a `Cpus_allowed_list:` line, or None."""
    for line in (text or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return parse_list(line.split(":", 1)[1])
    return None


def json_of(d, name):
    try:
        return json.loads(read(os.path.join(d, name)) or "")
    except ValueError:
        return None


def cpus_in(value):
    """Every CPU number a JSON value of CPUs holds (a list of numbers or a list string)."""
    if isinstance(value, int):
        return {value}
    if isinstance(value, str):
        return parse_list(value) or set()
    if isinstance(value, list):
        return set().union(*(cpus_in(v) for v in value)) if value else set()
    return set()


def compare_placement(d, r, st, osj):
    if "allowed" not in st:
        return
    allowed = allowed_list(read(os.path.join(d, "allowed.out"))) or set()
    shown = cpulist(allowed)

    def status(name):
        return st.get(name, (None,))[0]

    # place (RR_CORE): allowed CPUs only, each once, the first of each package first.
    got = [int(x) for x in (read(os.path.join(d, "place-rr.out")) or "").replace(",", " ").split()
           if x.isdigit()]
    package_of = {c["cpu"]: c.get("package") for c in (osj or {}).get("cpus") or []}
    packages = {package_of.get(c) for c in allowed if c in package_of}
    first = got[:len(packages)]
    ok = (status("place-rr") == 0 and got and set(got) <= allowed and len(set(got)) == len(got)
          and len(got) == min(8, len(allowed))
          and len({package_of.get(c) for c in first}) == len(first))
    r.add("place.allowed", ok, f"{min(8, len(allowed))} of {shown}, one per package first",
          f"exit {status('place-rr')}: {err_of(d, 'place-rr')}" if status("place-rr") else " ".join(map(str, got)))
    # run --pin: the core's first PU, as hwloc-calc names it.
    ref = parse_list(read(os.path.join(d, "hwloc-calc.package:0.core:1.out")) or "")
    pinned = allowed_list(read(os.path.join(d, "run-pin.out")))
    if ref:
        r.add("run.pin", status("run-pin") == 0 and pinned == {min(ref)}, cpulist({min(ref)}),
              cpulist(pinned) if pinned is not None else f"exit {status('run-pin')}: {err_of(d, 'run-pin')}")
    ran = allowed_list(read(os.path.join(d, "run-policy.out")))
    r.add("run.allowed", status("run-policy") == 0 and ran is not None and ran <= allowed,
          f"within {shown}", cpulist(ran) if ran is not None else f"exit {status('run-policy')}: {err_of(d, 'run-policy')}")
    # autopin and balance: every CPU they tried or moved a thread to.
    a = json_of(d, "autopin.json")
    used = set().union(*(cpus_in(c.get("cpus")) for c in (a or {}).get("candidates") or [])) if a else None
    r.add("autopin.allowed", status("autopin") == 0 and used is not None and used <= allowed,
          f"within {shown}", cpulist(used) if used is not None else f"exit {status('autopin')}: {err_of(d, 'autopin')}")
    b = json_of(d, "balance.json")
    moved = set().union(*(cpus_in(m.get("to")) for m in (b or {}).get("moves") or [])) if b else None
    r.add("balance.allowed", status("balance") == 0 and moved is not None and moved <= allowed,
          f"within {shown}", (cpulist(moved) if moved else "no move") if moved is not None
          else f"exit {status('balance')}: {err_of(d, 'balance')}")


def compare_exits(d, r, st):
    for name in ("infer-plan", "mem-full-plan", "place", "export", "export-load"):
        status = st.get(name, (None,))[0]
        r.add(name, status == 0, "exit 0",
              "not run" if status is None else f"exit {status}" + (f": {err_of(d, name)}" if status else ""))


def main():
    args = sys.argv[1:]
    as_json = "--json" in args
    strict = "--strict" in args
    shape = None
    if "--shape" in args:
        i = args.index("--shape")
        shape = args[i + 1]
        del args[i:i + 2]
    rest = [a for a in args if not a.startswith("--")]
    if len(rest) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    d = rest[0]
    st = steps(d)
    if not st:
        print(f"compare.py: {d}/checks.tsv is missing or empty (did scripts/vm/checks.sh run?)", file=sys.stderr)
        return 2
    r = Report(shape or os.path.basename(os.path.normpath(d)))
    osj, _ = compare_os(d, r, st)
    compare_cpus(d, r, st)
    compare_infer(d, r, st, osj)
    compare_mem(d, r, st, osj)
    compare_placement(d, r, st, osj)
    compare_exits(d, r, st)
    if as_json:
        json.dump(r.rows, sys.stdout, indent=1)
        print()
    else:
        for row in r.rows:
            if not row["judged"]:
                print(f"unjudged  {row['check']} ({row['detail']}): OS/hwloc: {row['reference']} | topoprobe: {row['topoprobe']}")
            elif row["ok"]:
                print(f"agree     {row['check']}")
            else:
                extra = f" ({row['detail']})" if row["detail"] else ""
                print(f"DISAGREE  {row['check']}{extra}: OS/hwloc: {row['reference']} | topoprobe: {row['topoprobe']}")
    return 1 if strict and not all(row["ok"] for row in r.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
