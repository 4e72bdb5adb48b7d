"""What a grounding judge can see, what its request costs, and how well the anchor check decides.

On the corpus (`benchmarks/corpus/`, format in its FORMAT.md) — realistic SRE investigations with
the full text of every tool result and labelled claims — for each set (`tuning`, and `held-out`,
`held-out-2` and `held-out-3`, which the code was never tuned on) this measures:

- **visible evidence**: the share of true claims whose every evidence string appears whole in the
  judge's transcript at a budget of `grounding.max_trace_chars` per entry, with plain head
  truncation and with evidence windows; overall and per tool family (the family of the result that
  holds the claim's evidence);
- **judge request size**: the judge's instructions plus the prompt VectorStep sends, per trace;
- **the anchor check** (`grounding: {executor: local}` and the verdict beside every judged claim):
  per claim kind, how often it says supported for true claims (TPR) and unsupported for false ones
  (TNR, decoys included), their mean (balanced accuracy, with `undecidable` counted as a miss), how
  often it decides at all, and the balanced accuracy of the claims it decides;
- **the ceiling of matching**: per claim kind, how many false claims are decoys that look exactly
  like true claims to any checker that matches a claim's anchors and words against a record, and
  the balanced accuracy such a checker cannot exceed even when it backs every true claim;
- **speed**: milliseconds to build one judge transcript.

    python benchmarks/bench_grounding.py [--budget 1500]
    python benchmarks/bench_grounding.py --misses [--family loki]   # the tuning set's missed true claims

`--misses` prints, for the tuning set only (never a held-out one), each true claim whose evidence
the windows hide, with what the judge is shown of the result that holds it; it writes no results.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from vectorstep.domain.trace import TraceEvent
from vectorstep.grounding.anchors import statement_anchors
from vectorstep.grounding.evidence import StepEvidence, ToolResult
from vectorstep.grounding.local_check import check_claim
from vectorstep.grounding.transcript import build_transcript
from vectorstep.prompts import prompt_template
from vectorstep.templating import render_strict

CORPUS = Path(__file__).parent / "corpus"
SETS = ("tuning", "held-out", "held-out-2", "held-out-3")
JUDGE_INSTRUCTIONS = Path(__file__).parents[1] / "samples" / "agents" / "grounding-judge" / "instructions.md"
DECIDED_KINDS = ("number", "id", "timestamp")


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted((CORPUS / name).glob("*.json"))]


def trace_of(case: dict[str, Any]) -> tuple[list[TraceEvent], dict[str, str]]:
    events: list[TraceEvent] = []
    whole: dict[str, str] = {}
    for number, call in enumerate(case["tool_calls"]):
        call_id = f"c{number}"
        events.append(
            TraceEvent("tool_call", len(events) + 1, "", call_id=call_id, name=call["name"], args=call["args"])
        )
        events.append(
            TraceEvent(
                "tool_result",
                len(events) + 1,
                "",
                call_id=call_id,
                name=call["name"],
                content=call["result"],
                is_error=call.get("is_error", False),
            )
        )
        whole[call_id] = call["result"]
    return events, whole


def family_of(case: dict[str, Any], claim: dict[str, Any]) -> str:
    first = claim["evidence"][0]
    return next(call["family"] for call in case["tool_calls"] if first in call["result"])


def visibility(cases: list[dict[str, Any]], budget: int, windows: bool) -> dict[str, Any]:
    seen: Counter[str] = Counter()
    total: Counter[str] = Counter()
    requests: list[int] = []
    timings: list[float] = []
    instructions = JUDGE_INSTRUCTIONS.read_text(encoding="utf-8")
    for case in cases:
        events, whole = trace_of(case)
        answer = {key: value for key, value in case["answer"].items() if key not in ("raw_response", "artifacts")}
        started = time.perf_counter()
        transcript = build_transcript(events, whole, answer, max_chars=budget, evidence_windows=windows)
        timings.append((time.perf_counter() - started) * 1000)
        requests.append(len(instructions) + len(_judge_prompt(case, answer, transcript)))
        for claim in case["claims"]:
            if claim["supported"] and claim["evidence"]:
                family = family_of(case, claim)
                total[family] += 1
                seen[family] += all(evidence in transcript.text for evidence in claim["evidence"])
    return {
        "visible": _share(sum(seen.values()), sum(total.values())),
        "true_claims": sum(total.values()),
        "per_family": {family: _share(seen[family], total[family]) for family in sorted(total)},
        "judge_request_chars_median": int(statistics.median(requests)),
        "judge_request_chars_max": max(requests),
        "transcript_ms_median": round(statistics.median(timings), 2),
        "transcript_ms_max": round(max(timings), 2),
    }


def print_misses(cases: list[dict[str, Any]], budget: int, family: str | None) -> None:
    """Each true claim of `cases` whose evidence the windows hide, with the window of its result."""
    missed = 0
    for case in cases:
        events, whole = trace_of(case)
        answer = {key: value for key, value in case["answer"].items() if key not in ("raw_response", "artifacts")}
        transcript = build_transcript(events, whole, answer, max_chars=budget, evidence_windows=True)
        for claim in case["claims"]:
            if not (claim["supported"] and claim["evidence"]):
                continue
            hidden = [evidence for evidence in claim["evidence"] if evidence not in transcript.text]
            if not hidden or (family is not None and family_of(case, claim) != family):
                continue
            missed += 1
            print(f"=== {case['name']} [{family_of(case, claim)}] {claim['claim']}")
            print(f"    hidden: {hidden}")
            for number, call in enumerate(case["tool_calls"]):
                if any(evidence in call["result"] for evidence in claim["evidence"]):
                    entry = next(e for e in transcript.entries if f" of [{2 * number + 1}] " in e)
                    print(f"--- result c{number} ({len(call['result'])} chars):\n{entry}\n")
    print(f"{missed} true claims missed")


def _judge_prompt(case: dict[str, Any], answer: dict[str, Any], transcript: Any) -> str:
    return render_strict(
        prompt_template("grounding_judge"),
        {
            "task": case["task"],
            "answer": json.dumps(answer, ensure_ascii=False, separators=(",", ":")),
            "entries": len(transcript.entries),
            "truncated_events": transcript.truncated_events,
            "transcript": transcript.text,
        },
    )


def anchor_check(cases: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes: dict[str, Counter[tuple[bool, str]]] = defaultdict(Counter)
    for case in cases:
        arguments = [" ".join(f"{key}={value}" for key, value in call["args"].items()) for call in case["tool_calls"]]
        results = [
            ToolResult(f"c{n}", call["name"], call["result"], call.get("is_error", False), True, arguments[n])
            for n, call in enumerate(case["tool_calls"])
        ]
        evidence = StepEvidence(case["task"], results, arguments)
        for claim in case["claims"]:
            outcomes[claim["kind"]][(claim["supported"], check_claim(claim["claim"], evidence).verdict)] += 1
    return {kind: _accuracy(outcomes[kind]) for kind in sorted(outcomes)}


def matching_ceiling(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """How far any checker that decides by matching can go, per claim kind.

    A decoy whose record (with the path and the identifying fields that lead to it) holds every
    anchor and every word of the claim that its result holds at all looks, to matching, exactly like
    a true claim. A checker that decides by which of a claim's anchors and words a record holds must
    back it or refuse true claims just as well, so even backing every true claim its balanced
    accuracy is at most (1 + the share of false claims it can refuse) / 2.
    """
    false: Counter[str] = Counter()
    alike: Counter[str] = Counter()
    for case in cases:
        for claim in case["claims"]:
            if claim["supported"] or claim["kind"] not in DECIDED_KINDS:
                continue
            false[claim["kind"]] += 1
            alike[claim["kind"]] += _looks_true(case, claim)
    return {
        kind: {
            "false_claims": false[kind],
            "decoys_alike_to_matching": alike[kind],
            "balanced_accuracy_ceiling": _round(1 - alike[kind] / false[kind] / 2) if false[kind] else None,
        }
        for kind in DECIDED_KINDS
    }


def _looks_true(case: dict[str, Any], claim: dict[str, Any]) -> bool:
    call = next((call for call in case["tool_calls"] if claim.get("decoy") and claim["decoy"] in call["result"]), None)
    if call is None:
        return False
    result = ToolResult("c0", call["name"], call["result"], False, True)
    record = result.shape.leaf_at(call["result"].index(claim["decoy"])).nearest_record()
    spans = [(record.start, record.end), *record.context()]
    for anchor in statement_anchors(claim["claim"]):
        found = result.find(anchor)
        if not found and anchor.hard:
            return False  # a figure or id the result does not hold: matching refuses it
        if found and not any(low <= start and end <= high for start, end in found for low, high in spans):
            return False
    return True


def _accuracy(counts: Counter[tuple[bool, str]]) -> dict[str, Any]:
    true = sum(count for (supported, _), count in counts.items() if supported)
    false = sum(count for (supported, _), count in counts.items() if not supported)
    tpr = counts[(True, "supported")] / true if true else None
    tnr = counts[(False, "unsupported")] / false if false else None
    decided_true = counts[(True, "supported")] + counts[(True, "unsupported")]
    decided_false = counts[(False, "supported")] + counts[(False, "unsupported")]
    decided_tpr = counts[(True, "supported")] / decided_true if decided_true else None
    decided_tnr = counts[(False, "unsupported")] / decided_false if decided_false else None
    return {
        "true_claims": true,
        "false_claims": false,
        "tpr": _round(tpr),
        "tnr": _round(tnr),
        "balanced_accuracy": _round((tpr + tnr) / 2) if tpr is not None and tnr is not None else None,
        "decided": _round((decided_true + decided_false) / (true + false)) if true + false else None,
        "balanced_accuracy_decided": _round((decided_tpr + decided_tnr) / 2)
        if decided_tpr is not None and decided_tnr is not None
        else None,
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def corpus_figures(cases: list[dict[str, Any]]) -> dict[str, Any]:
    lengths = [len(call["result"]) for case in cases for call in case["tool_calls"]]
    families = {call["family"] for case in cases for call in case["tool_calls"]}
    decoys = sum(1 for case in cases for claim in case["claims"] if claim.get("decoy"))
    return {
        "traces": len(cases),
        "tool_results": len(lengths),
        "families": len(families),
        "result_chars_median": int(statistics.median(lengths)),
        "result_chars_max": max(lengths),
        "claims": sum(len(case["claims"]) for case in cases),
        "decoys": decoys,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--misses", action="store_true", help="print the tuning set's missed true claims")
    parser.add_argument("--family", help="with --misses: only claims whose evidence is in this family")
    args = parser.parse_args()
    if args.misses:
        print_misses(load("tuning"), args.budget, args.family)
        return
    result: dict[str, Any] = {"budget_chars_per_entry": args.budget}
    for name in SETS:
        cases = load(name)
        result[name] = {
            "corpus": corpus_figures(cases),
            "head_truncation": visibility(cases, args.budget, windows=False),
            "evidence_windows": visibility(cases, args.budget, windows=True),
            "anchor_check": anchor_check(cases),
            "matching_ceiling": matching_ceiling(cases),
        }
    out = Path(__file__).parent / "results" / "grounding.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
