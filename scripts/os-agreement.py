#!/usr/bin/env python3
"""Agreement of `topoprobe os` with hwloc on a folder of sysfs captures.

For each capture of FOLDER (a `hwloc-gather-topology` `.tar.bz2`, `.tar.gz` or `.tar`, or
a directory holding `sys/`), runs `topoprobe os --root CAPTURE --json` and
`lstopo-no-graphics --of xml` on the unpacked capture (hwloc's Linux backend with
HWLOC_FSROOT, as hwloc's own tests do), and compares what hwloc shows by default (the
allowed CPUs and nodes only; the allowed nodes and HMAT initiators when the JSON has
`allowed_nodes` and `initiators`): packages, cores and their PUs, PUs, NUMA nodes and their
PUs, the PU sets of L2 and L3 caches, and the allowed CPUs. Prints one line per capture
(`agree`, or which counts or sets differ) and the total.

Usage: scripts/os-agreement.py FOLDER [--topoprobe BIN] [--lstopo BIN] [-v]

Standard library only. Exit status: 0 when every capture agrees, 1 when some differ, 2 on
a usage error.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET


def mask_to_set(mask):
    """hwloc's `0x000000ff,0xffffffff` (or `0xf...f,...` infinite) as a set of bits."""
    if not mask:
        return set()
    words = mask.split(",")
    value = 0
    for w in words:
        w = w.strip()
        if w.startswith("0x"):
            w = w[2:]
        value = (value << 32) | int(w or "0", 16)
    out = set()
    i = 0
    while value:
        if value & 1:
            out.add(i)
        value >>= 1
        i += 1
    return out


def hwloc_facts(xml_text):
    """What hwloc's XML says: counts and sets, as comparable values."""
    root = ET.fromstring(xml_text)
    objs = list(root.iter("object"))
    machine = objs[0] if objs else None
    allowed = mask_to_set(machine.get("cpuset")) if machine is not None else set()
    by = {}
    for o in objs:
        by.setdefault(o.get("type"), []).append(o)

    def sets(kind):
        return sorted(
            sorted(s) for s in (mask_to_set(o.get("cpuset")) for o in by.get(kind, [])) if s
        )

    pus = sorted(int(o.get("os_index")) for o in by.get("PU", []))
    return {
        "packages": len(by.get("Package", [])),
        "dies": len(by.get("Die", [])),
        "cores": sets("Core"),
        "pus": pus,
        "nodes": sorted(
            (int(o.get("os_index")), sorted(mask_to_set(o.get("cpuset"))))
            for o in by.get("NUMANode", [])
        ),
        "l2": sets("L2Cache"),
        "l3": sets("L3Cache"),
        "allowed": sorted(allowed),
    }


def topoprobe_facts(view):
    """The same facts of `topoprobe os --json` output, restricted to the allowed CPUs and
    nodes (what hwloc shows by default)."""
    cpus = view.get("cpus") or []
    online = {c["cpu"] for c in cpus}
    cpuset = view.get("cpuset")
    allowed = online if cpuset is None else online & set(cpuset)
    allowed_nodes = view.get("allowed_nodes")
    node_ok = lambda n: allowed_nodes is None or n in allowed_nodes
    # hwloc keeps a package that has an allowed CPU or holds an allowed node.
    packages = {
        c.get("package")
        for c in cpus
        if c["cpu"] in allowed or (allowed_nodes is not None and c.get("node") in allowed_nodes)
    }
    dies = {(c.get("package"), c.get("die")) for c in cpus if c["cpu"] in allowed and "die" in c}
    cores = set()
    for c in cpus:
        if c["cpu"] in allowed:
            cores.add(tuple(sorted(set(c.get("core_cpus") or [c["cpu"]]) & allowed)))
    nodes = []
    for n in view.get("nodes") or []:
        if not node_ok(n["node"]):
            continue
        near = (n.get("cpus") or n.get("near_cpus")
                or (view.get("initiators") or {}).get(str(n["node"])) or [])
        nodes.append((n["node"], sorted(set(near) & allowed)))

    def cache_sets(level):
        out = set()
        for c in view.get("caches") or []:
            if c.get("level") == level and c.get("type") in ("data", "unified"):
                s = tuple(sorted(set(c.get("cpus") or []) & allowed))
                if s:
                    out.add(s)
        return sorted(list(s) for s in out)

    # hwloc shows dies only where the OS gives them; one die per package is still a die.
    return {
        "packages": len(packages),
        "dies": len(dies),
        "cores": sorted(list(c) for c in cores if c),
        "pus": sorted(allowed),
        "nodes": sorted(nodes),
        "l2": cache_sets(2),
        "l3": cache_sets(3),
        "allowed": sorted(allowed),
    }


COMPARED = ["packages", "cores", "pus", "nodes", "l2", "l3", "allowed"]


def describe(key, ours, theirs):
    """One difference, short."""
    if isinstance(ours, int):
        return f"{key} {ours}/{theirs}"
    if key in ("cores", "l2", "l3"):
        return f"{key} {len(ours)}/{len(theirs)} sets" if len(ours) != len(theirs) else f"{key} sets"
    if key == "nodes":
        return f"nodes {len(ours)}/{len(theirs)}" if len(ours) != len(theirs) else "node PUs"
    return f"{key} {len(ours)}/{len(theirs)}" if len(ours) != len(theirs) else f"{key} set"


def capture_root(directory):
    """The folder of an unpacked capture that holds `sys/`."""
    if os.path.isdir(os.path.join(directory, "sys")):
        return directory
    entries = [e for e in os.listdir(directory) if os.path.isdir(os.path.join(directory, e))]
    if len(entries) == 1:
        return capture_root(os.path.join(directory, entries[0]))
    return directory


def unpack(path, into):
    """Unpacks an archive into `into` (links and special files are kept out of the way by
    tarfile's data filter when it exists)."""
    with tarfile.open(path) as t:
        try:
            t.extractall(into, filter="data")
        except TypeError:
            t.extractall(into)
        except tarfile.TarError:
            t.extractall(into, filter="fully_trusted")
    return capture_root(into)


def run_lstopo(lstopo, root):
    env = dict(os.environ)
    env.update(
        HWLOC_COMPONENTS="linux,stop",
        HWLOC_FSROOT=root,
        HWLOC_DUMPED_HWDATA_DIR="/nonexistent",
    )
    r = subprocess.run(
        [lstopo, "--of", "xml", "-"], env=env, capture_output=True, text=True, timeout=120
    )
    if r.returncode != 0:
        raise RuntimeError("lstopo failed: " + r.stderr.strip().splitlines()[-1:][0] if r.stderr.strip() else "lstopo failed")
    return r.stdout


def run_topoprobe(topoprobe, capture):
    r = subprocess.run(
        [topoprobe, "os", "--root", capture, "--json"], capture_output=True, text=True, timeout=120
    )
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        raise RuntimeError("topoprobe failed: " + (lines[-1] if lines else f"status {r.returncode}"))
    return json.loads(r.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--topoprobe", default=os.environ.get("TOPOPROBE", "topoprobe"))
    p.add_argument("--lstopo", default="lstopo-no-graphics")
    p.add_argument("-v", "--verbose", action="store_true", help="print the differing values")
    a = p.parse_args()
    if shutil.which(a.lstopo) is None:
        print(f"{a.lstopo} not found", file=sys.stderr)
        return 2
    if shutil.which(a.topoprobe) is None and not os.access(a.topoprobe, os.X_OK):
        print(f"{a.topoprobe} not found", file=sys.stderr)
        return 2
    captures = sorted(
        e
        for e in os.listdir(a.folder)
        if e.endswith((".tar.bz2", ".tar.gz", ".tar"))
        or os.path.isdir(os.path.join(a.folder, e, "sys"))
    )
    agree = 0
    for name in captures:
        path = os.path.join(a.folder, name)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                root = unpack(path, tmp) if os.path.isfile(path) else path
                theirs = hwloc_facts(run_lstopo(a.lstopo, root))
                ours = topoprobe_facts(run_topoprobe(a.topoprobe, path))
            except (RuntimeError, ET.ParseError, json.JSONDecodeError, tarfile.TarError, OSError) as e:
                print(f"{name}: error: {e}")
                continue
        diffs = [k for k in COMPARED if ours[k] != theirs[k]]
        if not diffs:
            agree += 1
            print(f"{name}: agree")
        else:
            print(f"{name}: differ: " + ", ".join(describe(k, ours[k], theirs[k]) for k in diffs))
            if a.verbose:
                for k in diffs:
                    print(f"    {k}: topoprobe {ours[k]}\n    {k}: hwloc     {theirs[k]}")
    print(f"total: {agree} of {len(captures)} agree")
    return 0 if agree == len(captures) else 1


if __name__ == "__main__":
    sys.exit(main())
