"""Which pipeline an event runs: an explicit name, else priority, then file name, then `trigger.match`."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vectorstep.domain.context import NormalisedContext
from vectorstep.errors import ConfigError
from vectorstep.intake.resolve import resolve
from vectorstep.spec.pipelines import LoadedPipeline, load_pipeline

EVENT = NormalisedContext(
    source="alertmanager",
    received_at=datetime(2026, 1, 1, tzinfo=UTC),
    severity="critical",
    labels={"service": "checkout", "namespace": "shop", "replicas": "3"},
    summary="5xx rate above 2% on checkout",
    metadata={"status": "firing", "values": {"B": 0.042}},
)


def pipeline(tmp_path: Path, file: str, name: str, match: dict[str, Any] | None, priority: int = 0) -> LoadedPipeline:
    step = {"name": "s", "executor": "gateway", "executor_config": {"agent": "a"}}
    data: dict[str, Any] = {"name": name, "priority": priority, "steps": [step]}
    if match is not None:
        data["trigger"] = {"match": match}
    path = tmp_path / file
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_pipeline(path, {})


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        pytest.param({"severity": "critical"}, True, id="plain value equals"),
        pytest.param({"severity": {"eq": "warning"}}, False, id="eq"),
        pytest.param({"severity": {"ne": "warning"}}, True, id="ne"),
        pytest.param({"labels.service": {"in": ["cart", "checkout"]}}, True, id="in"),
        pytest.param({"labels.service": {"not_in": ["cart", "checkout"]}}, False, id="not_in"),
        pytest.param({"summary": {"regex": r"5xx rate above \d+%"}}, True, id="regex"),
        pytest.param({"labels.replicas": {"gt": 2}}, True, id="gt on a label that is a number"),
        pytest.param({"labels.replicas": {"gte": 3, "lt": 3}}, False, id="every operator must hold"),
        pytest.param({"labels.replicas": {"lte": 3}}, True, id="lte"),
        pytest.param({"metadata.values.B": {"gt": 0.02}}, True, id="metadata path"),
        pytest.param({"labels.service": {"gt": 1}}, False, id="a comparison with a word does not hold"),
        pytest.param({"labels.missing": {"ne": "x"}}, True, id="ne holds for a missing key"),
        pytest.param({"labels.missing": {"in": ["x"]}}, False, id="in fails for a missing key"),
        pytest.param({"labels.replicas": 3}, True, id="a YAML number matches the label string"),
        pytest.param({"severity": "critical", "labels.namespace": "payments"}, False, id="all conditions"),
    ],
)
def test_operators(tmp_path: Path, condition: dict[str, Any], holds: bool) -> None:
    loaded = pipeline(tmp_path, "p.yaml", "p", condition)
    assert (resolve(EVENT, [loaded]) is loaded) is holds


def test_priority_then_file_name_decides_between_matches(tmp_path: Path) -> None:
    broad_b = pipeline(tmp_path, "b.yaml", "broad-b", {"severity": "critical"})
    broad_a = pipeline(tmp_path, "a.yaml", "broad-a", {"severity": "critical"})
    assert resolve(EVENT, [broad_b, broad_a]) is broad_a
    urgent = pipeline(tmp_path, "z.yaml", "urgent", {"labels.service": "checkout"}, priority=5)
    assert resolve(EVENT, [broad_b, broad_a, urgent]) is urgent


def test_a_named_pipeline_wins_and_a_pipeline_without_match_is_never_picked_implicitly(tmp_path: Path) -> None:
    manual = pipeline(tmp_path, "a.yaml", "manual-only", None)
    other = pipeline(tmp_path, "b.yaml", "other", {"severity": "warning"})
    assert resolve(EVENT, [manual, other]) is None
    named = NormalisedContext(**{**EVENT.__dict__, "pipeline": "manual-only"})
    assert resolve(named, [manual, other]) is manual
    unknown = NormalisedContext(**{**EVENT.__dict__, "pipeline": "nope"})
    assert resolve(unknown, [manual, other]) is None


def test_a_pattern_that_would_backtrack_runs_in_linear_time_on_a_hostile_value(tmp_path: Path) -> None:
    loaded = pipeline(tmp_path, "p.yaml", "p", {"summary": {"regex": "^(a+)+$"}})
    hostile = NormalisedContext(**{**EVENT.__dict__, "summary": "a" * 100_000 + "!"})
    started = time.monotonic()
    assert resolve(hostile, [loaded]) is None  # Python's re would take longer than the age of the universe
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("pattern", [r"(\w+) \1", r"checkout(?!-canary)", r"(?<=svc-)api"])
def test_a_pattern_that_needs_backtracking_is_refused_where_it_is_written(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(ConfigError) as raised:
        pipeline(tmp_path, "p.yaml", "p", {"summary": {"regex": pattern}})
    (problem,) = raised.value.problems
    assert problem.key_path == "trigger.match.summary.regex" and problem.line is not None
    assert "patterns run in linear time: no backreferences or lookaround" in problem.message


def test_an_explicit_empty_match_catches_every_event_and_no_trigger_catches_none(tmp_path: Path) -> None:
    catch_all = pipeline(tmp_path, "z.yaml", "catch-all", {})
    manual = pipeline(tmp_path, "a.yaml", "manual-only", None)
    assert resolve(EVENT, [manual, catch_all]) is catch_all
    specific = pipeline(tmp_path, "b.yaml", "checkout", {"labels.service": "checkout"}, priority=1)
    assert resolve(EVENT, [manual, catch_all, specific]) is specific  # priority first, then file name
