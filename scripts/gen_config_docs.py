"""Regenerate the key tables of docs/configuration.md from the spec models (`make docs`).

With `--check`, change nothing and exit 1 when the tables are out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vectorstep.spec.reference import regenerate
from vectorstep.spec.reference_blocks import config_blocks

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report whether the tables are up to date")
    args = parser.parse_args()
    current = DOC.read_text(encoding="utf-8")
    fresh = regenerate(current, config_blocks())
    if fresh == current:
        print(f"{DOC.name}: the key tables are up to date")
        return 0
    if args.check:
        print(f"{DOC.name}: the key tables differ from the models; run `make docs`", file=sys.stderr)
        return 1
    DOC.write_text(fresh, encoding="utf-8")
    print(f"{DOC.name}: key tables regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
