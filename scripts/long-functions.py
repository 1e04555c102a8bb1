#!/usr/bin/env python3
"""Lists the functions of the workspace's library and binary code longer than a limit.

A function's length is counted from the line of its `fn` to the line of its closing brace.
Test code is left out: `tests/`, `benches/`, `examples/`, and `#[cfg(test)]` modules.

    python3 scripts/long-functions.py             # fail on a function over 200 lines
    python3 scripts/long-functions.py --limit 100 # list those over 100 lines (report only)

Exits 1 when a function is over `--fail-over` (default 200), 0 otherwise.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
SKIP_DIRS = {"tests", "benches", "examples", "target", "fuzz-target"}


def strip_code(text: str) -> list:
    """The lines of `text` with comments, strings and char literals blanked (braces in
    them do not count), keeping the line structure."""
    out = []
    i, n = 0, len(text)
    buf = []
    block = 0
    while i < n:
        c = text[i]
        if block:
            if text.startswith("*/", i):
                block -= 1
                i += 2
                continue
            if text.startswith("/*", i):
                block += 1
                i += 2
                continue
            buf.append("\n" if c == "\n" else " ")
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            block = 1
            i += 2
            continue
        raw = re.match(r'b?r(#*)"', text[i:i + 260])
        if raw:
            end = '"' + raw.group(1)
            j = text.find(end, i + len(raw.group(0)))
            j = n if j < 0 else j + len(end)
            buf.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if c == '"' or (c == "b" and text.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            buf.append("".join("\n" if ch == "\n" else " " for ch in text[i:j + 1]))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                buf.append(" " * len(m.group(0)))
                i += len(m.group(0))
                continue
        buf.append(c)
        i += 1
    return "".join(buf).split("\n")


def functions(path: pathlib.Path):
    """(name, first line, length) of every function outside `#[cfg(test)]` modules."""
    lines = strip_code(path.read_text(encoding="utf-8"))
    depth = 0
    test_depth = None  # brace depth at which a #[cfg(test)] item's body started
    pending_test = False
    open_fns = []  # (name, first line, depth of its body)
    pending_fn = None
    found = []
    for number, line in enumerate(lines, 1):
        if re.search(r"#\[cfg\(test\)\]", line):
            pending_test = True
        m = FN.search(line)
        if m and test_depth is None:
            pending_fn = (m.group(1), number)
        for ch in line:
            if ch == "{":
                depth += 1
                if pending_test and test_depth is None:
                    test_depth = depth
                    pending_test = False
                if pending_fn is not None:
                    open_fns.append((pending_fn[0], pending_fn[1], depth))
                    pending_fn = None
            elif ch == "}":
                if open_fns and open_fns[-1][2] == depth:
                    name, first, _ = open_fns.pop()
                    found.append((name, first, number - first + 1))
                if test_depth is not None and depth == test_depth:
                    test_depth = None
                depth -= 1
            elif ch == ";":
                # A declaration without a body (a trait method, an extern fn).
                pending_fn = None
                if pending_test and test_depth is None:
                    pending_test = False
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="list functions over this many lines")
    parser.add_argument("--fail-over", type=int, default=200, help="exit 1 if one is over this")
    args = parser.parse_args()
    rows = []
    for path in sorted(ROOT.glob("*/src/**/*.rs")):
        rel = path.relative_to(ROOT)
        if SKIP_DIRS & set(rel.parts[1:-1]) or rel.name == "tests.rs" or rel.stem.endswith("_tests"):
            continue
        for name, first, length in functions(path):
            if length > args.limit:
                rows.append((length, f"{rel}:{first}", name))
    rows.sort(reverse=True)
    for length, where, name in rows:
        print(f"{length:5} {where} {name}")
    over = [r for r in rows if r[0] > args.fail_over]
    if over:
        print(f"{len(over)} function(s) over {args.fail_over} lines", file=sys.stderr)
        return 1
    print(f"long-functions: none over {args.fail_over} lines ({len(rows)} over {args.limit})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
