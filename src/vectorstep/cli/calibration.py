"""`vectorstep calibration show`: each bucket's bins, from its marked production history (SYSTEM.md §10)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.spec.settings import Settings
from vectorstep.store.calibration import CalibrationRepository


@click.group("calibration")
def calibration_group() -> None:
    """What agents' confidence is worth, by their marked track record."""


@calibration_group.command("show")
@click.option("--pipeline", help="Only buckets of steps of this pipeline.")
@click.option("--step", help="Only buckets of this step.")
@click.option("--agent", help="Only buckets of this agent.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def show_command(
    pipeline: str | None, step: str | None, agent: str | None, as_json: bool, config_path: Path | None
) -> int:
    """Each bucket (step, agent, model, prompt, agent version): reliability per bin, ECE and Brier, and
    how well S, V, G and combined trust tell correct work from incorrect."""
    settings = settings_from(config_path, only=HISTORY_KEYS)
    found = run_async(_buckets(settings, pipeline, step, agent))
    out = Output()
    if as_json:
        out.json(found)
        return 0
    if not found:
        out.line("no marked production history yet — mark runs with `vectorstep mark` or in the UI")
        return 0
    for bucket in found:
        _print_bucket(out, bucket)
    return 0


def _print_bucket(out: Output, bucket: dict[str, Any]) -> None:
    key, report = bucket["bucket"], bucket["report"]
    out.line(
        f"{key['step']}  {key['executor_agent']}  {key['provider']}/{key['model']}  "
        f"prompt {str(key['prompt_hash'])[:8]}  agent {str(key['agent_version'])[:12]}  ({report['n']} marked)",
        style="bold",
    )
    rows = [
        (
            f"{row['low']:.2f}–{row['high']:.2f}",
            str(row["n"]),
            f"{row['predicted']:.2f}",
            f"{row['accuracy']:.2f} ({row['accuracy_low']:.2f}–{row['accuracy_high']:.2f})",
            "—" if row["estimate"] is None else f"{row['estimate']:.2f}",
            "yes" if row["validated"] else "no",
        )
        for row in report["bins"]
    ]
    out.table(["bin", "n", "says", "right (90% interval)", "estimate", "validated"], rows)
    out.line(f"  ECE {_interval(report['ece'])}   Brier {_interval(report['brier'])}")
    signals = [
        (NAMES[row["signal"]], str(row["n"]), _figure(row["auroc"]), _figure(row["brier"]))
        for row in report["signals"]
        if row["n"]
    ]
    if signals:
        out.table(["signal", "n", "AUROC", "Brier"], signals)
    for advice in report["recommendations"]:
        out.line(f"  → {advice}", style="yellow")


NAMES = {"self_reported": "S (self-report)", "verifier": "V (verifier)", "grounding": "G (grounding)"}
NAMES["combined_trust"] = "combined trust"


def _interval(found: dict[str, Any]) -> str:
    if found["value"] is None:
        return "—"
    return f"{found['value']:.3f} (90% interval {found['low']:.3f}–{found['high']:.3f})"


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


async def _buckets(
    settings: Settings, pipeline: str | None, step: str | None, agent: str | None
) -> list[dict[str, Any]]:
    runs = await open_runs(settings)
    try:
        found = await CalibrationRepository(runs.database).reports(
            settings.spec.calibration, step=step, agent=agent, pipeline=pipeline
        )
        return [{"bucket": asdict(bucket), "report": asdict(report)} for bucket, report in found]
    finally:
        await runs.database.dispose()
