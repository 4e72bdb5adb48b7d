"""How much supporting evidence a grounding judge can see, and how large its request is.

For every trace of the corpus (`benchmarks/corpus/evidence/*.json`: realistic SRE traces with
the claims their answers make and, for each true claim, the exact text of its evidence), we build
the judge's transcript at a budget of `grounding.max_trace_chars` per entry, twice: with plain
head truncation and with evidence windows. A claim's evidence is *visible* when every one of its
evidence strings appears whole in the transcript. We also render the judge's full request
(instructions + the prompt VectorStep sends) for every trace.

    python benchmarks/bench_grounding.py [--budget 1500]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from vectorstep.domain.trace import TraceEvent
from vectorstep.grounding.transcript import build_transcript
from vectorstep.prompts import prompt_template
from vectorstep.templating import render_strict

CORPUS = Path(__file__).parent / "corpus" / "evidence"
JUDGE_INSTRUCTIONS = Path(__file__).parents[1] / "samples" / "agents" / "grounding-judge" / "instructions.md"


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


def visible_share(
    cases: list[dict[str, Any]], budget: int, windows: bool, *, only_beyond_head: bool = False
) -> tuple[int, int]:
    """(true claims whose evidence the judge sees whole, true claims counted).

    `only_beyond_head` counts only the claims whose evidence head truncation would hide.
    """
    visible = total = 0
    for case in cases:
        events, whole = trace_of(case)
        text = build_transcript(events, whole, case["answer"], max_chars=budget, evidence_windows=windows).text
        for claim in case["claims"]:
            if not claim["supported"]:
                continue
            if only_beyond_head and all(_within_head(case, evidence, budget) for evidence in claim["evidence"]):
                continue
            total += 1
            visible += all(evidence in text for evidence in claim["evidence"])
    return visible, total


def _within_head(case: dict[str, Any], evidence: str, budget: int) -> bool:
    result = next(call["result"] for call in case["tool_calls"] if evidence in call["result"])
    return len(result) <= budget or result.find(evidence) + len(evidence) <= budget - 60


def judge_request_chars(case: dict[str, Any], budget: int, instructions: str) -> int:
    events, whole = trace_of(case)
    answer = {key: value for key, value in case["answer"].items() if key not in ("raw_response", "artifacts")}
    transcript = build_transcript(events, whole, answer, max_chars=budget)
    prompt = render_strict(
        prompt_template("grounding_judge"),
        {
            "task": case["task"],
            "answer": json.dumps(answer, ensure_ascii=False, separators=(",", ":")),
            "entries": len(transcript.entries),
            "truncated_events": transcript.truncated_events,
            "transcript": transcript.text,
        },
    )
    return len(instructions) + len(prompt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1500)
    args = parser.parse_args()
    cases = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(CORPUS.glob("*.json"))]
    instructions = JUDGE_INSTRUCTIONS.read_text(encoding="utf-8") if JUDGE_INSTRUCTIONS.exists() else ""
    head_visible, total = visible_share(cases, args.budget, windows=False)
    window_visible, _ = visible_share(cases, args.budget, windows=True)
    # Traces 16-40 were written after the window selection was designed on 01-15: a hold-out.
    held_out = cases[15:]
    held_head, held_total = visible_share(held_out, args.budget, windows=False)
    held_windows, _ = visible_share(held_out, args.budget, windows=True)
    beyond_windows, beyond_total = visible_share(cases, args.budget, windows=True, only_beyond_head=True)
    requests = [judge_request_chars(case, args.budget, instructions) for case in cases]
    results_longer = sum(len(call["result"]) > args.budget for case in cases for call in case["tool_calls"])
    results = sum(len(case["tool_calls"]) for case in cases)
    result = {
        "budget_chars_per_entry": args.budget,
        "traces": len(cases),
        "tool_results": results,
        "tool_results_longer_than_budget": results_longer,
        "true_claims": total,
        "evidence_visible_head_truncation": round(head_visible / total, 3),
        "evidence_visible_evidence_windows": round(window_visible / total, 3),
        "held_out_true_claims": held_total,
        "held_out_visible_head_truncation": round(held_head / held_total, 3),
        "held_out_visible_evidence_windows": round(held_windows / held_total, 3),
        "claims_with_evidence_past_the_head": beyond_total,
        "of_those_visible_with_windows": round(beyond_windows / beyond_total, 3),
        "judge_request_chars_median": int(statistics.median(requests)),
        "judge_request_chars_max": max(requests),
        "judge_instructions_chars": len(instructions),
    }
    out = Path(__file__).parent / "results" / "grounding.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for key, value in result.items():
        print(f"{key:>42}: {value}")


if __name__ == "__main__":
    main()
