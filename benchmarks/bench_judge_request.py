"""The size of the grounding judge's whole request on the demo's grounded steps.

Runs `samples/pipelines/trust-vector-remediation.yaml` on both of its payloads, in process, with
the samples' real MCP tool server, and reports for every grounded step the characters the judge
receives: its instructions (system prompt) plus the prompt VectorStep renders (task, answer,
transcript, contract). Also the fixed part: instructions plus the template with nothing in it.

    python benchmarks/bench_judge_request.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from vectorstep.engine.services import Engine
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.prompts import prompt_template
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.templating import render_strict
from vectorstep.testing import FakeClock

SAMPLES = Path(__file__).parents[1] / "samples"
PAYLOADS = ("trust-grounded.json", "trust-ungrounded.json")


async def measure() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        settings = replace(load_settings(SAMPLES / "vectorstep.yaml"), database_url=f"sqlite:///{folder}/b.db")
        project = load_project(settings)
        instructions = project.agents["grounding-judge"].instructions
        steps: list[dict[str, object]] = []
        async with Engine(project) as engine:
            for payload in PAYLOADS:
                context = normalise_alertmanager(
                    json.loads((SAMPLES / "payloads" / payload).read_text()), FakeClock().now()
                )
                run = await engine.run(project.pipelines["trust-vector-remediation"].spec, context)
                for step in run.steps:
                    grounding = (step.trust_report or {}).get("grounding") or {}
                    if grounding.get("prompt"):
                        steps.append(
                            {
                                "payload": payload,
                                "step": step.name,
                                "tool_results": sum(1 for event in step.trace if event.type == "tool_result"),
                                "max_trace_chars": grounding["max_trace_chars"],
                                "truncated_events": grounding["truncated_events"],
                                "request_chars": len(instructions) + len(grounding["prompt"]),
                            }
                        )
    empty = render_strict(
        prompt_template("grounding_judge"),
        {"task": "", "answer": "", "entries": 0, "truncated_events": 0, "transcript": ""},
    )
    return {"fixed_chars": len(instructions) + len(empty), "steps": steps}


def main() -> None:
    result = asyncio.run(measure())
    out = Path(__file__).parent / "results" / "judge_request.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"fixed part (instructions + empty template): {result['fixed_chars']} characters")
    for step in result["steps"]:  # type: ignore[attr-defined]
        print(
            f"{step['payload']:24} {step['step']:24} {step['tool_results']} results, "
            f"{step['truncated_events']} shortened at {step['max_trace_chars']}: {step['request_chars']:,} characters"
        )


if __name__ == "__main__":
    main()
