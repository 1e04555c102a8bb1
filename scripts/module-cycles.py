#!/usr/bin/env python3
"""Finds import cycles between the modules of each crate's production code.

A module "imports" another when it names an item of it (`use crate::a::b::Item`,
`use super::x`, or an inline `crate::a::f(...)` path). Names re-exported by a parent
(`pub use a::Item`) are followed to the module that defines them, and the re-export itself
is not counted: a crate's facade is not a dependency. Test code (`#[cfg(test)]` modules,
`tests/`, `benches/`, `examples/`) is left out. Prints each cycle and exits 1 if any.

    scripts/module-cycles.py [CRATE_DIR ...]     (default: every crate of the workspace)
"""
import os
import re
import sys


def strip_comments_and_tests(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    # Drop `#[cfg(test)] mod x { ... }` blocks (brace matching).
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    text = "".join(out)
    # `#[cfg(test)] mod x;` declarations.
    return re.sub(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*;", "", text)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree)]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand_use(prefix + part)]


def modules_of(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(root, f)
    return mods


def crate_cycles(crate_dir):
    src = os.path.join(crate_dir, "src")
    if not os.path.isdir(src):
        return []
    mods = modules_of(src)
    texts = {m: strip_comments_and_tests(open(f, encoding="utf-8").read()) for m, f in mods.items()}
    # Re-exports: (module, name) -> module the name comes from.
    reexports = {}
    uses = {}
    for m, text in texts.items():
        paths = []
        for um in re.finditer(r"\b(pub(\([^)]*\))?\s+)?use\s+([^;]+);", text):
            for p in expand_use(um.group(3)):
                paths.append((bool(um.group(1)), p))
        uses[m] = paths
        for public, p in paths:
            if public:
                segs = p.split("::")
                reexports[(m, segs[-1])] = resolve(m, segs[:-1], mods)
    edges = {m: set() for m in mods}
    for m, text in texts.items():
        refs = [p for public, p in uses[m] if not public]
        refs += re.findall(r"\b((?:crate|super)(?:::\w+)+)", text)
        for p in refs:
            segs = p.split("::")
            if segs[0] not in ("crate", "super", "self"):
                continue
            target = resolve(m, segs, mods)
            if target is None:
                continue
            # Follow a name re-exported by the target module to where it is defined.
            seen = set()
            while True:
                last = segs[-1]
                nxt = reexports.get((target, last))
                if nxt is None or (target, last) in seen:
                    break
                seen.add((target, last))
                target = nxt
            if target != m:
                edges[m].add(target)
    return find_cycles(edges)


def resolve(m, segs, mods):
    """The module a path names (the longest module prefix)."""
    if not segs:
        return m
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] == "super":
        base, rest = m, segs
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif segs[0] == "self":
        base, rest = m, segs[1:]
    else:
        return None
    best = base if base in mods else None
    cur = base
    for s in rest:
        cur = cur + (s,)
        if cur in mods:
            best = cur
        else:
            break
    return best


def find_cycles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            strong(v)
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = sys.argv[1:] or sorted(
        os.path.join(top, d) for d in os.listdir(top) if os.path.isfile(os.path.join(top, d, "Cargo.toml"))
    )
    bad = 0
    for c in crates:
        for comp in crate_cycles(c):
            bad += 1
            names = ["::".join(m) or "(crate root)" for m in comp]
            print(f"{os.path.basename(c)}: import cycle between {', '.join(names)}")
    if bad == 0:
        print(f"module-cycles: no import cycle in {len(crates)} crates")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
