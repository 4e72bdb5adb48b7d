"""`vectorstep replay`: a candidate model, agent or prompt answers a step's marked history again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vectorstep.cli.common import config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.dispatch.replay import (
    ReplayOutcome,
    ReplayRequest,
    candidate_of,
    prepare_replay,
    run_replay,
    split_address,
)
from vectorstep.domain.replay import Candidate, Sample
from vectorstep.engine.services import Engine
from vectorstep.errors import ConfigError, PayloadError
from vectorstep.spec.project import Project, load_project
from vectorstep.store.replay import ReplayRepository


@click.command("replay")
@click.argument("address", metavar="PIPELINE/STEP")
@click.option("--candidate-model", help="Answer with this model instead of the agent's (`openai/gpt-4o-mini`).")
@click.option("--candidate-agent", help="Answer with this agent instead of the step's.")
@click.option(
    "--candidate-prompt",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Render this prompt template file instead of the step's (implies --mode rerender).",
)
@click.option(
    "--mode",
    type=click.Choice(["rendered", "rerender"]),
    default=None,
    help="rendered: send the recorded prompt verbatim; rerender: render the template against the stored context.",
)
@click.option("-k", "k", type=int, default=20, show_default=True, help="How many of the newest marked executions.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@config_option
@reports_errors
def replay_command(  # noqa: PLR0917 - click passes each option by position
    address: str,
    candidate_model: str | None,
    candidate_agent: str | None,
    candidate_prompt: Path | None,
    mode: str | None,
    k: int,
    as_json: bool,
    config_path: Path | None,
) -> int:
    """Replay PIPELINE/STEP's newest marked production executions with a candidate, as a testing run
    (`source: replay`) that notifies nobody; report accuracy, trust, escalations, cost and latency of
    recorded against candidate."""
    candidate = _candidate(candidate_model, candidate_agent, candidate_prompt)
    pipeline, step = split_address(address)
    settings = settings_from(config_path)
    project = load_project(settings)
    if project.problems:
        raise ConfigError(project.problems)
    request = ReplayRequest(pipeline, step, candidate, mode, k)  # type: ignore[arg-type]
    outcome = run_async(_replay(project, request, Output(stderr=True)))
    out = Output()
    if as_json:
        out.json(outcome.document)
    else:
        print_report(out, outcome)
    return 0


def _candidate(model: str | None, agent: str | None, prompt: Path | None) -> Candidate:
    text = None
    if prompt is not None:
        try:
            text = prompt.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PayloadError(f"{prompt}: cannot read the candidate prompt: {error}") from None
    return candidate_of(model, agent, text, prompt_label=str(prompt))


async def _replay(project: Project, request: ReplayRequest, progress: Output) -> ReplayOutcome:
    runs = await open_runs(project.settings)
    store = ReplayRepository(runs.database)
    try:
        prepared = await prepare_replay(project, store, request)
        total = len(prepared.history.samples)
        done = 0

        def answered(sample: Sample) -> None:
            nonlocal done
            done += 1
            result = sample.candidate
            trust = "—" if result.combined_trust is None else f"{result.combined_trust:.2f}"
            progress.line(f"  [{done}/{total}] {sample.recorded.run_id[:12]}: {result.status}, trust {trust}")

        progress.line(f"replaying {request.pipeline}/{request.step} on {total} marked execution(s)…")
        async with Engine(project) as engine:
            return await run_replay(
                prepared, engine, store, concurrency=project.settings.spec.replay.max_concurrency, on_sample=answered
            )
    finally:
        await runs.database.dispose()


def _figure(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, interval: list[float] | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    spread = f" [{interval[0]:+.{digits}f}, {interval[1]:+.{digits}f}]" if interval else ""
    return f"{value:+.{digits}f}{spread}"


def print_report(out: Output, outcome: ReplayOutcome) -> None:
    document = outcome.document
    out.line(
        f"replay {document['run_id']}: {document['pipeline']}/{document['step']}, candidate "
        f"{document['candidate']['kind']} {document['candidate']['name']}, mode {document['mode']}",
        style="bold",
    )
    rows = [
        (
            sample["run_id"][:12],
            _figure(sample["recorded"]["label"]),
            f"{_figure(sample['recorded']['self_reported'])}/{_figure(sample['recorded']['grounding'])}/"
            f"{_figure(sample['recorded']['combined_trust'])}",
            sample["candidate"]["status"],
            f"{_figure(sample['candidate']['self_reported'])}/{_figure(sample['candidate']['grounding'])}/"
            f"{_figure(sample['candidate']['combined_trust'])}",
            _check(sample["candidate"]["deterministic_passed"]),
            {True: "agrees", False: "differs", None: "—"}[sample["agreement"]],
        )
        for sample in document["samples"]
    ]
    out.table(["run", "label", "recorded S/G/trust", "candidate", "candidate S/G/trust", "D", "answer"], rows)
    for sample in document["samples"]:
        if sample["candidate"]["error"]:
            out.line(f"  {sample['run_id'][:12]}: {sample['candidate']['error']}", style="yellow")
    out.line()
    totals = document["totals"]
    names = {
        "accuracy": ("accuracy", 2),
        "mean_trust": ("mean trust", 2),
        "escalation_rate": (f"escalation rate (threshold {document['threshold']:.2f})", 2),
        "escalation_on_incorrect": ("  of answers marked incorrect (higher is better)", 2),
        "escalation_on_correct": ("  of answers marked correct (lower is better)", 2),
        "cost": ("cost per sample (USD)", 4),
        "latency_ms": ("latency per sample (ms)", 0),
    }
    out.table(
        ["measure", "recorded", "candidate", "difference [95% bootstrap]", "pairs"],
        [_total_row(label, totals[key], digits) for key, (label, digits) in names.items()],
    )
    out.line(
        f"Each measure compares both sides on the same samples (pairs). Accuracy counts the "
        f"{document['labelled']} of {len(document['samples'])} samples whose candidate answer could be labelled: "
        "one that agrees with a marked answer takes its mark, one that departs from an answer marked correct is "
        "incorrect, any other is unknown. Recorded accuracy over all samples: "
        f"{_figure(document['recorded_accuracy'])}. Candidate failures: {document['failed']}."
    )
    if document["human_checks_left_out"]:
        out.line(f"human checks not asked in a replay: {', '.join(document['human_checks_left_out'])}")
    out.line(f"stored as testing run {document['run_id']} (`vectorstep runs show {document['run_id']}`)")


def _total_row(label: str, total: dict[str, Any], digits: int) -> tuple[str, ...]:
    return (
        label,
        _figure(total["recorded"], digits),
        _figure(total["candidate"], digits),
        _signed(total["difference"], total["interval"], digits),
        str(total["n"]),
    )


def _check(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "—"}[passed]
