"""`vectorstep calibration show`: each bucket's bins, from its marked production history (SYSTEM.md §10)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from vectorstep.cli.common import config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.domain.calibration import Bin, Bucket, estimate
from vectorstep.spec.service import CalibrationSettingsSpec
from vectorstep.spec.settings import Settings
from vectorstep.store.calibration import CalibrationRepository

FAR_OFF = 0.15  # a validated bin whose accuracy is this far from what it predicts earns a recommendation


@click.group("calibration")
def calibration_group() -> None:
    """What agents' confidence is worth, by their marked track record."""


@calibration_group.command("show")
@click.option("--step", help="Only buckets of this step.")
@click.option("--agent", help="Only buckets of this agent.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def show_command(step: str | None, agent: str | None, as_json: bool, config_path: Path | None) -> int:
    """Each bucket (step, agent, model, prompt, agent version): its bins, counts, accuracy and estimate."""
    settings = settings_from(config_path)
    found = run_async(_buckets(settings, step, agent))
    out = Output()
    if as_json:
        out.json(found)
        return 0
    if not found:
        out.line("no marked production history yet — mark runs with `vectorstep mark` or in the UI")
        return 0
    for bucket in found:
        key = bucket["bucket"]
        out.line(
            f"{key['step']}  {key['executor_agent']}  {key['provider']}/{key['model']}  "
            f"prompt {str(key['prompt_hash'])[:8]}  agent {str(key['agent_version'])[:12]}",
            style="bold",
        )
        rows = [
            (
                f"{row['bin'][0]:.2f}–{row['bin'][1]:.2f}",
                str(row["n"]),
                "—" if row["mean"] is None else f"{row['mean']:.2f}",
                "—" if row["estimate"] is None else f"{row['estimate']:.2f}",
                "yes" if row["validated"] else "no",
            )
            for row in bucket["bins"]
        ]
        out.table(["bin", "n", "accuracy", "estimate", "validated"], rows)
        for advice in bucket["recommendations"]:
            out.line(f"  → {advice}", style="yellow")
    return 0


async def _buckets(settings: Settings, step: str | None, agent: str | None) -> list[dict[str, Any]]:
    calibration: CalibrationSettingsSpec = settings.spec.calibration
    runs = await open_runs(settings)
    history = CalibrationRepository(runs.database)
    try:
        buckets = await history.buckets(step=step, agent=agent)
        return [await _bucket(history, bucket, calibration) for bucket in buckets]
    finally:
        await runs.database.dispose()


async def _bucket(history: CalibrationRepository, bucket: Bucket, settings: CalibrationSettingsSpec) -> dict[str, Any]:
    rows, advice = [], []
    low = 0.0
    while low < 1.0 - 1e-9:
        within = Bin.of(low, settings.bin_width)
        labels = await history.labels(bucket, within.low, within.high)
        low = within.high
        if not labels:
            continue
        found = estimate(labels, settings.n_min, settings.estimator, settings.confidence)
        rows.append(
            {
                "bin": [within.low, within.high],
                "n": found.n,
                "mean": found.mean,
                "estimate": found.estimate,
                "validated": found.validated,
            }
        )
        middle = (within.low + within.high) / 2
        if found.validated and found.mean is not None and abs(found.mean - middle) >= FAR_OFF:
            advice.append(
                f"says {within.low:.1f}–{within.high:.1f}, right {found.mean:.0%} of {found.n} times: "
                + ("trust it less or fix the prompt" if found.mean < middle else "it undersells itself")
            )
    return {"bucket": asdict(bucket), "bins": rows, "recommendations": advice}
