"""`make mutation`: run mutmut over the modules that decide, then score each module.

mutmut copies `src/` into `mutants/` and switches one mutant on at a time through the
MUTANT_UNDER_TEST environment variable. Tests that start a subprocess (`vectorstep ...`, a shell
check) inherit that variable, so PYTHONPATH points them at the mutated copy too; otherwise they
would import the untouched package and every mutant they alone could catch would look alive.
mutmut also only tries a mutant against the tests that reached its function, so the functions a
subprocess reached are filed under the test that started it (scripts/mutation_bridge/).

A module passes when at least 90% of its mutants are killed (a timeout counts as killed: the
test noticed). Every survivor must be listed in tests/mutation-survivors.md with a reason; a
survivor not listed there fails the run, and a listed one that is now killed is reported so the
list does not go stale.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
SURVIVORS_LIST = ROOT / "tests" / "mutation-survivors.md"
REQUIRED_SCORE = 0.90
# mutmut's own reading of a mutant's exit code; a status not here (passed, no test ran, skipped,
# suspicious) counts as a survivor.
CAUGHT = {"killed": "killed", "segfault": "killed", "caught by type check": "killed", "timeout": "timeout"}
LISTED = re.compile(r"^- `(?P<name>[\w.]+__mutmut_\d+)`")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report-only", action="store_true", help="score the last run without running again")
    args = parser.parse_args()
    started = time.monotonic()
    if not args.report_only:
        ran = _run_mutmut()
        if ran != 0:
            print(f"mutmut exited with {ran}; its output is in mutants/mutmut.log", file=sys.stderr)
            return ran
    elapsed = time.monotonic() - started
    outcomes = _outcomes()
    if not outcomes:
        print("no mutants found: run `make mutation` first", file=sys.stderr)
        return 2
    listed = _listed_survivors()
    failed = _print_scores(outcomes)
    survivors = {
        name for per_module in outcomes.values() for name, code in per_module.items() if _kind(code) == "survived"
    }
    unlisted = sorted(survivors - listed)
    stale = sorted(listed - survivors)
    for name in unlisted:
        print(f"survivor not in {SURVIVORS_LIST.relative_to(ROOT)}: {name} (see: .venv/bin/mutmut show {name})")
    for name in stale:
        print(f"listed in {SURVIVORS_LIST.relative_to(ROOT)} but not a survivor now: {name}")
    if not args.report_only:
        print(f"ran in {elapsed / 60:.1f} min")
    return 1 if failed or unlisted else 0


def _run_mutmut() -> int:
    env = dict(os.environ)
    bridge = ROOT / "scripts" / "mutation_bridge"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(MUTANTS / "src"), str(bridge), env.get("PYTHONPATH")]))
    env["MUTATION_HITS_FILE"] = str(MUTANTS / "subprocess-hits")
    # Python skips a PYTHONPATH entry that does not exist when it starts: make it exist first.
    (MUTANTS / "src").mkdir(parents=True, exist_ok=True)
    with (MUTANTS / "mutmut.log").open("w", encoding="utf-8") as log:
        # mutmut draws a spinner per mutant; the log keeps it off the terminal.
        return subprocess.call([sys.executable, "-m", "mutmut", "run"], cwd=ROOT, env=env, stdout=log, stderr=log)


def _outcomes() -> dict[str, dict[str, int | None]]:
    outcomes: dict[str, dict[str, int | None]] = {}
    for meta in sorted((MUTANTS / "src").rglob("*.py.meta")):
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        outcomes[module] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return outcomes


def _listed_survivors() -> set[str]:
    if not SURVIVORS_LIST.exists():
        return set()
    lines = SURVIVORS_LIST.read_text(encoding="utf-8").splitlines()
    return {match["name"] for line in lines if (match := LISTED.match(line))}


def _print_scores(outcomes: dict[str, dict[str, int | None]]) -> bool:
    failed = False
    print(f"{'module':45} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'score':>6}")
    for module, per_mutant in outcomes.items():
        counts = Counter(_kind(code) for code in per_mutant.values())
        total = len(per_mutant)
        caught = counts["killed"] + counts["timeout"]
        score = caught / total if total else 1.0
        below = score < REQUIRED_SCORE or counts["unchecked"] > 0
        failed |= below
        flag = "  below 90%" if score < REQUIRED_SCORE else ""
        if counts["unchecked"]:
            flag += f"  ({counts['unchecked']} not run)"
        tally = f"{total:7} {counts['killed']:7} {counts['timeout']:7} {counts['survived']:8}"
        print(f"{module:45} {tally} {score:6.1%}{flag}")
    return failed


def _kind(exit_code: int | None) -> str:
    if exit_code is None:
        return "unchecked"
    return CAUGHT.get(status_by_exit_code[exit_code], "survived")


if __name__ == "__main__":
    sys.exit(main())
