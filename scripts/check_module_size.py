"""Fail when a module passes the 600-line hard limit of DESIGN.md (migrations excepted)."""

from __future__ import annotations

import sys
from pathlib import Path

HARD_LIMIT = 600


def main(root: str) -> int:
    too_long = [
        (path, count)
        for path in sorted(Path(root).rglob("*.py"))
        if "migrations" not in path.parts and (count := len(path.read_text(encoding="utf-8").splitlines())) > HARD_LIMIT
    ]
    for path, count in too_long:
        print(f"{path}: {count} lines (the limit is {HARD_LIMIT}; split it by idea)")
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
