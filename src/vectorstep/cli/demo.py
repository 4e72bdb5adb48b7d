"""`vectorstep demo`: run the offline sample pipelines and say what happened and where to look."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

import vectorstep
from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.demo_history import generate_history
from vectorstep.cli.output import STATUS_STYLES, Output
from vectorstep.cli.run import read_context, runnable_pipeline, session
from vectorstep.cli.show import print_run
from vectorstep.cli.trust_panel import print_trust_panel
from vectorstep.domain.records import RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.errors import ConfigError
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import Settings, load_settings, redact_url


@dataclass(frozen=True)
class Scenario:
    title: str
    pipeline: str
    payload: str
    expected: RunStatus
    history: float | None = None  # first, 20 marked production runs right this share of the time


SCENARIOS = (
    Scenario(
        "A checkout 5xx alert: triage → investigate with tools → propose a remediation → notify",
        "checkout-5xx",
        "payloads/checkout-5xx.json",
        RunStatus.COMPLETED,
    ),
    Scenario(
        "A cart latency alert through the same pipeline: the evidence does not add up",
        "checkout-5xx",
        "payloads/cart-latency.json",
        RunStatus.ESCALATED,
    ),
    Scenario(
        "The trust vector: a rollback is authorised only when grounding backs every claim",
        "trust-vector-remediation",
        "payloads/trust-grounded.json",
        RunStatus.COMPLETED,
    ),
    Scenario(
        "The same authorisation, confidently argued but not backed by its tool results",
        "trust-vector-remediation",
        "payloads/trust-ungrounded.json",
        RunStatus.ESCALATED,
    ),
    Scenario(
        "Deterministic checks: a shell query, a webhook and a person confirm the investigation",
        "deterministic-checks-step-context",
        "payloads/checkout-5xx.json",
        RunStatus.COMPLETED,
    ),
    Scenario(
        "Calibration: an agent says 0.9, but people marked it right in only 12 of its last 20 runs",
        "calibration-oversold",
        "payloads/disk-full.json",
        RunStatus.ESCALATED,
        history=0.6,
    ),
    Scenario(
        "The same 0.9 from an agent marked right in 18 of its last 20 runs",
        "calibration-honest",
        "payloads/disk-full.json",
        RunStatus.COMPLETED,
        history=0.9,
    ),
)
SERVICE_ENV = "VECTORSTEP_DEMO_SERVICE"


def samples_dir() -> Path:
    """The samples shipped in the wheel, or those of the source checkout."""
    package = Path(vectorstep.__file__).parent
    for candidate in (package / "samples", package.parents[1] / "samples"):
        if (candidate / "vectorstep.yaml").is_file():
            return candidate
    raise ConfigError.single(str(package), "the demo samples are missing from this installation")


@click.command("demo")
@config_option
@reports_errors
def demo_command(config_path: Path | None) -> int:
    """Run the offline demo: scripted agents, real tools, no API keys. Runs are recorded in your database."""
    out = Output()
    samples = samples_dir()
    database_url = settings_from(config_path).database_url
    with demo_service(samples) as service_url:
        os.environ[SERVICE_ENV] = service_url  # the sample pipelines' webhook checks call it
        try:
            settings = dataclasses.replace(load_settings(samples / "vectorstep.yaml"), database_url=database_url)
            return _play(out, samples, settings, database_url)
        finally:
            del os.environ[SERVICE_ENV]


@contextmanager
def demo_service(samples: Path) -> Iterator[str]:
    """The samples' small dashboards service, on a free local port, for as long as the demo runs."""
    process = subprocess.Popen(
        [sys.executable, str(samples / "tools" / "dashboards_service.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        first = process.stdout.readline() if process.stdout else ""
        if process.stdout:
            process.stdout.close()  # only its first line is read: it must never block on a full pipe
        if not first.startswith("listening on "):
            raise ConfigError.single(str(samples / "tools"), "the demo's dashboards service did not start")
        yield first.removeprefix("listening on ").strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


def _play(out: Output, samples: Path, settings: Settings, database_url: str) -> int:
    project = load_project(settings)
    out.line("VectorStep demo — offline: scripted agents calling real tools over MCP, no API keys.", style="bold")
    out.line(f"Samples: {samples}")
    out.line(f"Runs are recorded in {redact_url(database_url).removeprefix('sqlite:///')}")
    jobs = [
        (scenario, runnable_pipeline(project, scenario.pipeline), read_context(samples / scenario.payload, None))
        for scenario in SCENARIOS
    ]

    async def play() -> list[RunRecord]:
        records: list[RunRecord] = []
        async with session(settings, project) as active:
            for number, (scenario, loaded, context) in enumerate(jobs, start=1):
                out.line()
                out.line(f"{number}/{len(SCENARIOS)}  {scenario.title}", style="bold cyan")
                if scenario.history is not None:
                    right = await generate_history(project, active.runs, loaded, context, accuracy=scenario.history)
                    out.line(
                        f"  (history: 20 production runs recorded and marked, {right} of them correct)", style="dim"
                    )
                record = await active.run(loaded, context)
                print_run(record, out)
                for step in record.steps:
                    if step.trust_report and step.trust_report.get("mode") == "enforced":
                        print_trust_panel(step, out)
                out.line(_explain(record), style=STATUS_STYLES.get(record.status.value))
                records.append(record)
        return records

    records = run_async(play())
    _next_steps(out, samples, records)
    unexpected = [
        (scenario, record)
        for scenario, record in zip(SCENARIOS, records, strict=True)
        if record.status != scenario.expected
    ]
    for scenario, record in unexpected:
        out.line(
            f"unexpected: {scenario.pipeline} ended {record.status.value}, not {scenario.expected.value}", style="red"
        )
    return 1 if unexpected else 0


def _explain(record: RunRecord) -> str:
    if record.status is RunStatus.COMPLETED:
        notified = [step.name for step in record.steps if step.executor == "notify"]
        muted = " The notify step was logged, not sent: the pipeline is in stage `testing`." if notified else ""
        return f"→ Every step's trust cleared its threshold, so the run went all the way.{muted}"
    if record.status is RunStatus.ESCALATED:
        return f"→ Escalated to a person instead of acting: {record.error}."
    return f"→ The run ended {record.status.value}: {record.error}"


def _next_steps(out: Output, samples: Path, records: list[RunRecord]) -> None:
    out.line()
    out.line("Where to look next", style="bold")
    example = records[-1].run_id[:12] if records else "<run id>"
    command = _command()
    if command != "vectorstep":
        out.line(f"(`vectorstep` is not on your PATH here: run it as {command}, or `source .venv/bin/activate` first)")
    config = samples / "vectorstep.yaml"
    rows = [
        (f"{command} runs list", "every run, newest first"),
        (f"{command} runs show {example}", "one run: its steps, trust and log"),
        (f"{command} runs show {example} --json", "the whole record, with each agent's tool calls"),
        (
            f"{command} serve --config {config} --database sqlite:///./vectorstep.db",
            "these runs and the sample pipelines in the browser, Trust panels and all: http://127.0.0.1:8080/ui/",
        ),
        (f"{command} calibration show", "each agent's track record: reliability per bin, ECE, Brier, AUROC per signal"),
        (f"{samples / 'pipelines'}/", "the pipelines; agents/ holds the scripted agents"),
        (f"{command} run checkout-5xx --config {config} --payload <file>", "your own alert"),
        (f"{command} init my-project", "a project of your own that runs offline at once"),
    ]
    for line, purpose in rows:
        out.line(f"  {line}")
        out.line(f"      {purpose}", style="dim")


def _command() -> str:
    """How to call `vectorstep` from this shell: its name when it is on the PATH, else its path."""
    if shutil.which("vectorstep"):
        return "vectorstep"
    beside = Path(sys.executable).parent / "vectorstep"
    if not beside.exists():
        return "vectorstep"
    with contextlib.suppress(ValueError):
        return str(beside.relative_to(Path.cwd()))
    return str(beside)
