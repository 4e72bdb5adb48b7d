"""Calibration acts: an agent's stated confidence is replaced by what its marked history says it is worth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run_cli
from vectorstep.domain.calibration import Bin, estimate
from vectorstep.domain.records import RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.intake.generic import manual_context
from vectorstep.spec.settings import load_settings
from vectorstep.store.feedback import Mark
from vectorstep.store.migrate import upgrade
from vectorstep.testing import ProjectDir, answer
from vectorstep.web.service import Service


def calibrated_project(root: Path, stage: str = "production") -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent("assessor", answer(0.9, "looks fine"))
    project.pipeline(
        "assess",
        {
            "name": "assess",
            "stage": stage,
            "steps": [
                {
                    "name": "assess",
                    "executor": "gateway",
                    "executor_config": {"agent": "assessor"},
                    "confidence_threshold": 0.75,
                    "calibration": {"enforce": True, "on_uncalibrated": "escalate"},
                }
            ],
        },
    )
    project.settings({"database": {"url": f"sqlite:///{root / 'vectorstep.db'}"}})
    return project


async def history(service: Service, labels: list[str]) -> RunRecord:
    """One run per label, each marked by a person; then one more run, judged by that history."""
    spec = service.project.pipelines["assess"].spec
    for label in labels:
        run = await service.engine.run(spec, manual_context(service.clock.now(), summary="x"))
        await service.feedback.mark(Mark(run.run_id, "assess", label, None, "alice", service.clock.now()))
    return await service.engine.run(spec, manual_context(service.clock.now(), summary="x"))


@pytest.mark.parametrize(
    ("labels", "outcome", "validated", "wilson"),
    # The lower end of the one-sided 90% Wilson interval, worked by hand: z = 1.2816.
    [
        (["correct"] * 12 + ["incorrect"] * 8, RunStatus.ESCALATED, True, 0.457243),  # says 0.9, right 60% of the time
        (["correct"] * 20, RunStatus.COMPLETED, True, 0.924113),  # says 0.9 and is
        (["correct"] * 10, RunStatus.ESCALATED, False, 0.858931),  # too few marks: on_uncalibrated escalates
    ],
    ids=["over-confident", "well-calibrated", "not-enough-history"],
)
async def test_enforced_calibration_replaces_the_stated_confidence(
    tmp_path: Path, labels: list[str], outcome: RunStatus, validated: bool, wilson: float
) -> None:
    service = Service(load_settings(calibrated_project(tmp_path).config))
    await upgrade(service.database)
    try:
        run = await history(service, labels)
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    (step,) = run.steps
    report: dict[str, Any] = step.trust_report["calibration"]  # type: ignore[index]
    assert run.status is outcome and step.confidence == 0.9
    assert report["n"] == len(labels) and report["bin"] == [0.9, 1.0] and report["validated"] is validated
    assert report["estimator"] == "lower_bound" and report["estimate"] == pytest.approx(wilson, abs=1e-6)
    assert step.combined_trust == (pytest.approx(wilson, abs=1e-6) if validated else 0.0)
    operations = [entry["operation"] for entry in step.trust_report["derivation"]]  # type: ignore[index]
    assert "calibration" in operations


async def test_testing_runs_neither_count_nor_are_calibrated(tmp_path: Path) -> None:
    service = Service(load_settings(calibrated_project(tmp_path, stage="testing").config))
    await upgrade(service.database)
    try:
        run = await history(service, ["incorrect"] * 25)
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    assert run.status is RunStatus.COMPLETED and run.steps[0].combined_trust == 0.9


@given(labels=st.lists(st.sampled_from([0.0, 0.5, 1.0]), max_size=80), n_min=st.integers(1, 40))
def test_the_lower_bound_never_exceeds_the_mean_and_a_small_bin_is_never_validated(
    labels: list[float], n_min: int
) -> None:
    cautious, plain = estimate(labels, n_min, "lower_bound"), estimate(labels, n_min, "mean")
    if labels:
        assert cautious.estimate is not None and plain.estimate is not None
        assert cautious.estimate <= plain.estimate + 1e-9
    assert cautious.validated is (len(labels) >= n_min) and plain.validated is (len(labels) >= n_min)


@given(predicted=st.floats(0, 1), width=st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.5]))
def test_every_prediction_falls_in_exactly_its_bin(predicted: float, width: float) -> None:
    found = Bin.of(predicted, width)
    assert found.low <= predicted + 1e-9 and (predicted < found.high or found.high == 1.0)


async def test_calibration_show_lists_each_buckets_bins_and_says_when_an_agent_oversells(tmp_path: Path) -> None:
    project = calibrated_project(tmp_path)
    service = Service(load_settings(project.config))
    await upgrade(service.database)
    try:
        await history(service, ["correct"] * 12 + ["incorrect"] * 8)
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    shown = run_cli("calibration", "show", "--json", cwd=project.root)
    plain = run_cli("calibration", "show", cwd=project.root)
    other = run_cli("calibration", "show", "--step", "nope", cwd=project.root)
    (bucket,) = json.loads(shown.stdout)
    assert bucket["bucket"]["step"] == "assess" and bucket["bucket"]["executor_agent"] == "gateway:assessor"
    report = bucket["report"]
    assert [(row["low"], row["high"], row["n"], row["accuracy"], row["validated"]) for row in report["bins"]] == [
        (0.9, 1.0, 20, 0.6, True)  # the judged run at the end is not marked: not counted
    ]
    assert report["ece"]["value"] == 0.3 and report["brier"]["value"] == 0.33
    assert report["recommendations"] == [
        "says 0.9, right 60% of 20 times: trust it less (enforce calibration or raise the threshold) or fix the prompt"
    ]
    assert "0.90–1.00" in plain.stdout and "→ says 0.9, right 60% of 20 times" in plain.stdout
    assert "ECE 0.300" in plain.stdout and "S (self-report)" in plain.stdout
    assert other.stdout.startswith("no marked production history yet")
    elsewhere = run_cli("calibration", "show", "--pipeline", "other", cwd=project.root)
    assert elsewhere.stdout.startswith("no marked production history yet")
