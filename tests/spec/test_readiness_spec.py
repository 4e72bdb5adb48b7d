"""`readiness:` parses at pipeline, step, group and branch level; tiers inherit, `null` removes; mistakes are located."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from vectorstep.errors import ConfigError
from vectorstep.spec.pipelines import load_pipeline, load_step_library
from vectorstep.spec.readiness import ReadinessSpec
from vectorstep.spec.readiness_subjects import ReadinessSubject, readiness_subjects
from vectorstep.spec.snapshot import spec_from_snapshot, spec_snapshot

GATEWAY = {"executor": "gateway", "executor_config": {"agent": "a"}}
HOUSE = {"operational": {"min_runs": 10}, "confidence": {"min_runs": 5}, "accuracy": {}}


def write(tmp_path: Path, data: dict[str, Any] | str, name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        with path.open("w", encoding="utf-8") as handle:
            YAML(typ="safe", pure=True).dump(data, handle)
    return path


def subjects(tmp_path: Path, steps: list[dict[str, Any]], house: Any = HOUSE) -> dict[str, ReadinessSubject]:
    data: dict[str, Any] = {"name": "p", "steps": steps}
    if house is not None:
        data["readiness"] = house
    spec = load_pipeline(write(tmp_path, data), {}).spec
    return {subject.name: subject for subject in readiness_subjects(spec)}


def tiers_of(subject: ReadinessSubject) -> dict[str, str]:
    return {tier: subject.tiers.origins[tier] for tier in subject.tiers.configured}


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({}, {"operational": "pipeline", "confidence": "pipeline", "accuracy": "pipeline"}),
        ({"readiness": {}}, {"operational": "pipeline", "confidence": "pipeline", "accuracy": "pipeline"}),
        ({"readiness": {"accuracy": None}}, {"operational": "pipeline", "confidence": "pipeline"}),
        (
            {"readiness": {"calibration": {}, "operational": {"min_runs": 3}}},
            {"operational": "step", "confidence": "pipeline", "accuracy": "pipeline", "calibration": "step"},
        ),
        ({"readiness": None}, {}),
        ({"readiness": {"operational": None, "confidence": None, "accuracy": None}}, {}),
    ],
    ids=[
        "absent-inherits",
        "empty-inherits",
        "null-tier-removes",
        "step-tier-replaces-and-adds",
        "null-opts-out",
        "all-removed",
    ],
)
def test_a_step_inherits_the_house_default_tier_by_tier(
    tmp_path: Path, step: dict[str, Any], expected: dict[str, str]
) -> None:
    found = subjects(tmp_path, [{"name": "s", **GATEWAY, **step}])["s"]
    assert tiers_of(found) == expected
    if "operational" in expected:
        assert found.tiers.operational is not None
        assert found.tiers.operational.min_runs == (3 if expected["operational"] == "step" else 10)


def test_a_replaced_tier_is_replaced_whole_not_key_by_key(tmp_path: Path) -> None:
    house = {"operational": {"min_runs": 10, "max_age_days": 30}}
    found = subjects(tmp_path, [{"name": "s", **GATEWAY, "readiness": {"operational": {"min_runs": 3}}}], house)["s"]
    assert found.tiers.operational is not None and found.tiers.operational.max_age_days is None


def test_defaults_are_those_the_docs_promise(tmp_path: Path) -> None:
    house = {"operational": {}, "confidence": {}, "accuracy": {}, "calibration": {}}
    found = subjects(tmp_path, [{"name": "s", **GATEWAY, "confidence_threshold": 0.6}], house)["s"]
    operational, confidence = found.tiers.operational, found.tiers.confidence
    accuracy, calibration = found.tiers.accuracy, found.tiers.calibration
    assert operational is not None and confidence is not None and accuracy is not None and calibration is not None
    assert (operational.min_runs, operational.acceptable_statuses) == (20, ["completed", "stopped"])
    assert (operational.max_age_days, operational.require_current_config) == (None, False)
    assert (confidence.min_confidence, confidence.min_runs) == (0.6, 20)  # the step's own threshold
    assert (accuracy.min_accuracy, accuracy.min_marked, accuracy.min_human_marked) == (0.85, 20, 0)
    assert (calibration.n_min, calibration.bin_width, calibration.max_divergence) == (20, 0.1, 0.15)


def test_groups_branches_fan_outs_and_non_agent_steps(tmp_path: Path) -> None:
    steps = [
        {"name": "tell", "executor": "notify", "executor_config": {"url": "http://x"}},
        {"name": "ask", "executor": "human", "readiness": {"accuracy": {"min_marked": 5}}},
        {
            "parallel": {
                "name": "checks",
                "confidence_threshold": 0.7,
                "readiness": {"operational": {"min_runs": 50}, "confidence": None},
                "steps": [
                    {"name": "db", **GATEWAY},
                    {"name": "net", **GATEWAY, "readiness": None},
                    {"name": "probe", "executor": "webhook", "executor_config": {"url": "http://x"}},
                ],
            }
        },
        {"fan_out": {"name": "per_pod", "over": "[1]", **GATEWAY, "readiness": {"accuracy": None}}},
    ]
    found = subjects(tmp_path, steps, {"confidence": {}, "accuracy": {}})
    assert list(found) == ["tell", "ask", "checks/db", "checks/net", "checks/probe", "per_pod"]
    assert tiers_of(found["tell"]) == {}
    assert "inherits only the operational tier" in found["tell"].unconfigured
    assert tiers_of(found["ask"]) == {"accuracy": "step"}  # written on the step: it applies
    assert tiers_of(found["checks/db"]) == {"operational": "group", "accuracy": "pipeline"}
    assert (
        tiers_of(found["checks/net"]) == {} and found["checks/net"].unconfigured == "opted out with `readiness: null`"
    )
    assert tiers_of(found["checks/probe"]) == {"operational": "group"}
    assert tiers_of(found["per_pod"]) == {"confidence": "pipeline"} and found["per_pod"].fan_out
    assert found["per_pod"].tiers.confidence is not None and found["per_pod"].tiers.confidence.min_confidence == 0.75


def test_nothing_configured_says_so(tmp_path: Path) -> None:
    found = subjects(tmp_path, [{"name": "s", **GATEWAY}], house=None)["s"]
    assert found.tiers.configured == ()
    assert found.unconfigured == "no readiness tier is configured for it (none on the pipeline or the step)"


def test_a_library_steps_readiness_comes_with_it_and_local_keys_win(tmp_path: Path) -> None:
    (tmp_path / "steps").mkdir()
    write(tmp_path / "steps", {**GATEWAY, "readiness": {"accuracy": {"min_marked": 7}}}, "triage.yaml")
    library, problems = load_step_library(tmp_path / "steps")
    assert not problems
    data = {"name": "p", "steps": [{"use": "triage"}, {"use": "triage", "name": "again", "readiness": None}]}
    spec = load_pipeline(write(tmp_path, data), library).spec
    found = {subject.name: subject for subject in readiness_subjects(spec)}
    assert found["triage"].tiers.accuracy is not None and found["triage"].tiers.accuracy.min_marked == 7
    assert found["again"].tiers.configured == ()


def test_a_runs_snapshot_keeps_absent_and_null_apart(tmp_path: Path) -> None:
    steps = [
        {"name": "inherits", **GATEWAY},
        {"name": "removes", **GATEWAY, "readiness": {"accuracy": None}},
        {"name": "opts-out", **GATEWAY, "readiness": None},
    ]
    spec = load_pipeline(write(tmp_path, {"name": "p", "readiness": HOUSE, "steps": steps}), {}).spec
    again = spec_from_snapshot(spec_snapshot(spec))
    before = [tiers_of(subject) for subject in readiness_subjects(spec)]
    assert [tiers_of(subject) for subject in readiness_subjects(again)] == before
    assert before[1] == {"operational": "pipeline", "confidence": "pipeline"} and before[2] == {}
    assert ReadinessSpec().model_dump() == {}


@pytest.mark.parametrize(
    ("block", "line", "key", "message"),
    [
        ("readiness:\n  operational:\n    min_run: 5\n", 4, "readiness.operational.min_run", "did you mean 'min_runs'"),
        (
            "readiness:\n  accuracy: {min_accuracy: 1.5}\n",
            3,
            "readiness.accuracy.min_accuracy",
            "less than or equal to 1",
        ),
        ("readiness:\n  calibration: {bin_width: 0.333}\n", 3, "readiness.calibration.bin_width", "multiple of 0.01"),
        ("readiness:\n  confidence: 5\n", 3, "readiness.confidence", "expected a mapping of the tier's settings"),
        ("readiness:\n  operatonal: {}\n", 3, "readiness.operatonal", "did you mean 'operational'"),
        (
            "readiness:\n  operational: {acceptable_statuses: [complete]}\n",
            3,
            "readiness.operational.acceptable_statuses[0]",
            "did you mean 'completed'",
        ),
        (
            "readiness:\n  accuracy: {min_marked: 3, min_human_marked: 5}\n",
            3,
            "readiness.accuracy",
            "min_human_marked (5) cannot exceed min_marked (3)",
        ),
        (
            "readiness:\n  operational: {min_runs: 5000}\n",
            3,
            "readiness.operational.min_runs",
            "less than or equal to 1000",
        ),
        ("readiness: 3\n", 2, "readiness", "or null to opt out"),
    ],
    ids=[
        "unknown-key",
        "out-of-range",
        "odd-bin-width",
        "not-a-mapping",
        "misspelt-tier",
        "unknown-status",
        "human-above-marked",
        "beyond-the-evidence",
        "block-not-a-mapping",
    ],
)
def test_an_invalid_readiness_block_is_reported_with_file_line_and_key(
    tmp_path: Path, block: str, line: int, key: str, message: str
) -> None:
    text = f"name: p\n{block}steps:\n  - {{name: s, executor: gateway, executor_config: {{agent: a}}}}\n"
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_pipeline(path, {})
    (problem,) = raised.value.problems
    assert (Path(problem.file).name, problem.line, problem.key_path) == ("pipeline.yaml", line, key)
    assert message in problem.message
    assert f"pipeline.yaml:{line}: {key}:" in str(problem)


def test_a_step_level_mistake_points_into_the_step(tmp_path: Path) -> None:
    text = (
        "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - name: b\n          executor: gateway\n"
        "          executor_config: {agent: a}\n          readiness:\n            accuracy: {min_markd: 3}\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_pipeline(write(tmp_path, text), {})
    (problem,) = raised.value.problems
    assert (problem.line, problem.key_path) == (10, "steps[0].parallel.steps[0].readiness.accuracy.min_markd")
    assert "did you mean 'min_marked'" in problem.message
