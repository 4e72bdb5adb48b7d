"""Check grounding-corpus files against `corpus/FORMAT.md`; print each problem with its file and place.

    python benchmarks/check_corpus.py benchmarks/corpus/held-out-3          # a folder
    python benchmarks/check_corpus.py benchmarks/corpus/tuning/01-*.json    # files

Exit 0 when every file is well formed, 1 otherwise. It checks the shape, not the truth of a label:
valid JSON with the keys FORMAT.md names, known families and kinds, result lengths, evidence on
supported claims (every string an exact substring of one of the file's results), none on
unsupported ones, and every `decoy` an exact substring of a result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_FAMILY_NAMES = """prometheus_instant prometheus_range loki k8s_json kubectl_describe kubectl_get kubectl_events
deploy_history grafana issues postgres app_logs ndjson_logs kafka cert_manager node_journal yaml_config"""
FAMILIES = frozenset(_FAMILY_NAMES.split())
KINDS = frozenset({"number", "id", "timestamp", "causal", "entity", "given"})
MIN_RESULT_CHARS, MAX_RESULT_CHARS = 150, 20_000
MIN_EVIDENCE_CHARS = 8


def problems_of(case: Any) -> list[str]:
    if not isinstance(case, dict):
        return ["the file is not a JSON object"]
    found = [f"missing key `{key}`" for key in ("name", "task", "tool_calls", "answer", "claims") if key not in case]
    if found:
        return found
    results = [call.get("result") for call in case["tool_calls"] if isinstance(call.get("result"), str)]
    for number, call in enumerate(case["tool_calls"]):
        found += [f"tool_calls[{number}]: {problem}" for problem in _call_problems(call)]
    if not isinstance(case["answer"], dict) or "summary" not in case["answer"]:
        found.append("answer: not an object with a `summary`")
    for number, claim in enumerate(case["claims"]):
        found += [f"claims[{number}]: {problem}" for problem in _claim_problems(claim, results)]
    return found


def _call_problems(call: dict[str, Any]) -> list[str]:
    found = [f"missing key `{key}`" for key in ("name", "family", "args", "result") if key not in call]
    if call.get("family") not in FAMILIES:
        found.append(f"unknown family {call.get('family')!r}")
    result = call.get("result", "")
    if not isinstance(result, str):
        found.append("`result` is not a string")
    elif not call.get("is_error") and not MIN_RESULT_CHARS <= len(result) <= MAX_RESULT_CHARS:
        found.append(f"result of {len(result)} characters (expected {MIN_RESULT_CHARS}-{MAX_RESULT_CHARS})")
    return found


def _claim_problems(claim: dict[str, Any], results: list[str]) -> list[str]:
    found = []
    if claim.get("kind") not in KINDS:
        found.append(f"unknown kind {claim.get('kind')!r}")
    evidence = claim.get("evidence", [])
    if claim.get("supported") is True:
        if not evidence and claim.get("kind") != "given":
            found.append("supported, but no evidence")
        for text in evidence:
            if not any(text in result for result in results):
                found.append(f"evidence {text!r} is in no result")
            elif len(text) < MIN_EVIDENCE_CHARS:
                found.append(f"evidence {text!r} is shorter than {MIN_EVIDENCE_CHARS} characters")
    elif claim.get("supported") is False:
        if evidence:
            found.append("unsupported, but it lists evidence")
        decoy = claim.get("decoy")
        if decoy is not None and not any(decoy in result for result in results):
            found.append(f"decoy {decoy!r} is in no result")
    else:
        found.append("`supported` is neither true nor false")
    return found


def main(arguments: list[str]) -> int:
    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        paths += sorted(path.glob("*.json")) if path.is_dir() else [path]
    failed = 0
    for path in paths:
        try:
            case = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(f"{path}: {error}")
            failed += 1
            continue
        problems = problems_of(case)
        failed += bool(problems)
        for problem in problems:
            print(f"{path}: {problem}")
    print(f"{len(paths)} file(s) checked, {failed} with problems")
    return 1 if failed or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
