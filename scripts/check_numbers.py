"""Check that no measured number got lost when the README was split into README.md + docs/*.md.

    python scripts/check_numbers.py [--rev REV]

Takes README.md as it was at REV (git; default: the last commit before the split), pulls every number
out of it with a regex, and checks that each one occurs in the union of today's README.md and docs/*.md.
It also counts the old README's lines that hold a number and reappear word for word (the benchmark
reports were moved verbatim), and lists any such line that did not. Exit 1 if a number is missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG_README = "5a99cc75c3cf7488672b2d29d1b38455e5116c17"  # last commit with the 72 KB README
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=LONG_README, help="Git revision of the old README.")
    args = parser.parse_args(argv)
    old = subprocess.run(["git", "show", f"{args.rev}:README.md"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    new = "\n".join(f.read_text(encoding="utf-8") for f in files)
    missing = sorted(numbers(old) - numbers(new), key=lambda n: (len(n), n))
    lines = [line for line in old.splitlines() if NUMBER.search(line)]
    moved = [line for line in lines if line in new]
    print(f"old README ({args.rev}): {len(old.encode())} bytes, {len(numbers(old))} distinct numbers, "
          f"{len(lines)} lines with a number")
    print(f"new: {', '.join(str(f.relative_to(ROOT)) for f in files)}")
    print(f"numbers missing: {len(missing)} {' '.join(missing)}".rstrip())
    print(f"lines with a number found verbatim: {len(moved)} of {len(lines)}")
    for line in lines:
        if line not in moved:
            print(f"  not verbatim: {line[:110]}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
