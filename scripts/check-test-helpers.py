#!/usr/bin/env python3
"""Checks that no integration-test module re-defines a shared helper of its crate's
`tests/it/common` (or `tests/it/support`): a helper is written once and imported.

Prints each re-definition as `FILE:LINE: fn NAME re-defines common::NAME` and exits 1 if
there is any; exits 0 otherwise.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)\b")


def helpers(shared_dir: pathlib.Path) -> dict:
    """The public functions of the shared helper files: name -> the module that holds it."""
    found = {}
    for path in sorted(shared_dir.rglob("*.rs")):
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^pub\s+fn\s+([A-Za-z_][A-Za-z0-9_]*)\b", line)
            if m:
                found[m.group(1)] = path.relative_to(ROOT)
    return found


def main() -> int:
    problems = []
    for it_dir in sorted(ROOT.glob("*/tests/it")):
        shared = {}
        for name in ("common", "support"):
            if (it_dir / name).is_dir():
                shared.update(helpers(it_dir / name))
        if not shared:
            continue
        for path in sorted(it_dir.glob("*.rs")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = FN.match(line)
                if m and m.group(1) in shared:
                    problems.append(
                        f"{path.relative_to(ROOT)}:{number}: fn {m.group(1)} re-defines "
                        f"the shared helper of {shared[m.group(1)]}"
                    )
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} re-definition(s) of shared test helpers", file=sys.stderr)
        return 1
    print("no test module re-defines a shared helper")
    return 0


if __name__ == "__main__":
    sys.exit(main())
