"""Replay: a candidate answers a step's marked production history again, as a testing run that notifies nobody."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RecordingServer, run_cli
from tests.fixtures.served_app import ServedApp
from vectorstep.domain.replay import (
    CandidateResult,
    RecordedExecution,
    Sample,
    agreement,
    bootstrap_interval,
    inferred_label,
    replay_report,
)
from vectorstep.intake.generic import manual_context
from vectorstep.spec.settings import load_settings
from vectorstep.store.feedback import Mark
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunRepository
from vectorstep.testing import ProjectDir, answer
from vectorstep.web.app import create_app
from vectorstep.web.service import Service

# (summary of the alert, the recorded answer's action, how a person marked it)
HISTORY = [
    ("disk full on db-1", "cleanup", "correct"),
    ("disk full on db-2", "cleanup", "correct"),
    ("disk full on web-3", "cleanup", "correct"),
    ("cpu hot on web-1", "page", "incorrect"),
    ("cpu hot on web-2", "page", "incorrect"),
    ("cpu hot on web-4", "page", "correct"),
]


def replay_project(
    root: Path, *, safe: list[str] | None = None, settings: dict[str, Any] | None = None, database: str | None = None
) -> ProjectDir:
    project = ProjectDir(root)
    project.agent(
        "classifier",
        {
            "model": "scripted",
            "cases": [
                {"prompt_contains": "disk", "script": [answer(0.9, "disk is full", action="cleanup")]},
            ],
            "script": [answer(0.8, "cpu is hot", action="page")],
        },
    )
    project.scripted_agent("classifier-v2", answer(0.95, "clean it up", action="cleanup"))
    project.scripted_agent("paging-agent", answer(0.7, "page someone", action="page"))
    project.pipeline(
        "triage",
        {
            "name": "triage",
            "stage": "production",
            "steps": [
                {
                    "name": "classify",
                    "executor": "gateway",
                    "executor_config": {"agent": "classifier"},
                    "prompt_template": "Alert: {{ context.summary }}",
                    "confidence_threshold": 0.85,
                    "deterministic_checks": [
                        {"name": "sane", "type": "shell", "run": "test {{ steps.classify.action }} != rm-rf"},
                        {"name": "ok-by-oncall", "type": "human", "message": "ok?"},
                    ],
                },
                {"name": "after", "executor": "gateway", "executor_config": {"agent": "paging-agent"}},
            ],
        },
    )
    project.settings(
        {
            "database": {"url": database or f"sqlite:///{root / 'vectorstep.db'}"},
            "replay": {"safe_agents": ["classifier", "classifier-v2"] if safe is None else safe},
            **(settings or {}),
        }
    )
    return project


async def seed(project: ProjectDir, history: list[tuple[str, str, str]] = HISTORY) -> list[str]:
    """Production runs of `triage`, each marked by a person; the human check is answered at once (testing off)."""
    service = Service(load_settings(project.config))
    await upgrade(service.database)
    run_ids = []
    try:
        spec = service.project.pipelines["triage"].spec
        # The seeded history needs no person: the human check is dropped from the seeding pipeline only.
        steps = [
            spec.steps[0].model_copy(update={"deterministic_checks": spec.steps[0].deterministic_checks[:1]}),
            spec.steps[1],
        ]
        seeding = spec.model_copy(update={"steps": steps})
        for summary, _, label in history:
            run = await service.engine.run(seeding, manual_context(service.clock.now(), summary=summary))
            await service.feedback.mark(Mark(run.run_id, "classify", label, None, "alice", service.clock.now()))
            run_ids.append(run.run_id)
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    return run_ids


def replay(project: ProjectDir, *args: str) -> Any:
    return run_cli("replay", *args, cwd=project.root)


async def test_a_candidate_agent_is_measured_on_the_marked_history_and_stored_as_a_testing_run(tmp_path: Path) -> None:
    project = replay_project(tmp_path)
    await seed(project)
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["samples"]) == 6 and report["mode"] == "rendered"
    by_summary = {sample["run_id"]: sample for sample in report["samples"]}
    assert all(sample["candidate"]["status"] == "completed" for sample in by_summary.values())
    # Recorded: 4 of 6 right. The candidate says `cleanup` everywhere: it agrees with the three disk
    # answers (marked correct) and departs from one cpu answer marked correct; the two the person
    # marked incorrect tell nothing about it.
    accuracy = report["totals"]["accuracy"]
    assert report["recorded_accuracy"] == pytest.approx(4 / 6) and report["labelled"] == accuracy["n"] == 4
    assert (accuracy["recorded"], accuracy["candidate"], accuracy["difference"]) == (1.0, 0.75, -0.25)
    trust = report["totals"]["mean_trust"]
    assert trust["recorded"] == pytest.approx((0.9 * 3 + 0.8 * 3) / 6) and trust["candidate"] == pytest.approx(0.95)
    escalation = report["totals"]["escalation_rate"]  # threshold 0.85: the cpu answers (0.8) escalated
    assert escalation["recorded"] == pytest.approx(0.5) and escalation["candidate"] == 0.0
    assert escalation["interval"] is not None and escalation["interval"][1] <= 0.0
    # The candidate lets everything through: also the two answers a person marked incorrect.
    on_incorrect, on_correct = report["totals"]["escalation_on_incorrect"], report["totals"]["escalation_on_correct"]
    assert (on_incorrect["recorded"], on_incorrect["candidate"], on_incorrect["n"]) == (1.0, 0.0, 2)
    assert (on_correct["recorded"], on_correct["candidate"], on_correct["n"]) == (0.25, 0.0, 4)
    assert report["human_checks_left_out"] == ["ok-by-oncall"]
    assert all(sample["candidate"]["deterministic_passed"] is True for sample in report["samples"])

    runs = RunRepository(Service(load_settings(project.config)).database)
    stored = await runs.get_run(report["run_id"], with_log=True)
    await runs.database.dispose()
    assert (stored.source, stored.stage, stored.status.value) == ("replay", "testing", "completed")
    assert [step.name for step in stored.steps] == [f"sample-0{n}" for n in range(1, 7)]
    assert {step.agent for step in stored.steps} == {"classifier-v2"}
    # Rendered: the recorded prompt went to the candidate verbatim.
    assert {step.prompt for step in stored.steps} == {f"Alert: {summary}" for summary, _, _ in HISTORY}
    assert stored.log[-1].event == "replay_report" and stored.log[-1].data["totals"] == report["totals"]


async def test_the_human_report_names_every_measure_and_where_the_batch_is(tmp_path: Path) -> None:
    project = replay_project(tmp_path)
    await seed(project)
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2", "-k", "3")
    assert result.returncode == 0, result.stderr
    for words in ("accuracy", "mean trust", "escalation rate (threshold 0.85)", "marked incorrect", "latency", "[3/3]"):
        assert words in result.stdout + result.stderr
    assert "human checks not asked in a replay: ok-by-oncall" in result.stdout
    assert "stored as testing run replay-" in result.stdout


async def test_a_candidate_prompt_is_rendered_against_the_stored_context(tmp_path: Path) -> None:
    project = replay_project(tmp_path)
    await seed(project)
    prompt = tmp_path / "candidate.txt"
    prompt.write_text("Is this a disk problem? {{ context.summary }} (run {{ pipeline_run_id }})", encoding="utf-8")
    result = replay(project, "triage/classify", "--candidate-prompt", str(prompt), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["mode"] == "rerender"
    # Every prompt now says "disk": the classifier answers `cleanup` to all six.
    assert report["totals"]["accuracy"]["candidate"] == pytest.approx(3 / 4)
    runs = RunRepository(Service(load_settings(project.config)).database)
    stored = await runs.get_run(report["run_id"])
    await runs.database.dispose()
    prompts = {step.prompt for step in stored.steps}
    assert {f"Is this a disk problem? {summary} (run {report['run_id']})" for summary, _, _ in HISTORY} == prompts


async def test_an_unreachable_candidate_model_fails_each_sample_and_the_batch_is_still_reported(tmp_path: Path) -> None:
    closed = RecordingServer()
    closed.close()  # a port nobody listens on any more
    project = replay_project(
        tmp_path, settings={"providers": {"openai": {"api_key": "sk-test", "base_url": f"{closed.url}/v1"}}}
    )
    await seed(project, HISTORY[:2])
    result = replay(project, "triage/classify", "--candidate-model", "openai/gpt-4o-mini", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["failed"] == 2 and report["labelled"] == 0
    for sample in report["samples"]:
        assert sample["candidate"]["status"] == "failed" and sample["candidate"]["error"]
        assert sample["agreement"] is None
    assert report["totals"]["escalation_rate"]["candidate"] == 1.0  # a candidate that cannot answer never acts


async def test_a_candidate_model_answers_over_http(tmp_path: Path, http_server: RecordingServer) -> None:
    from tests.fixtures.fake_providers import openai_text

    text = json.dumps({"confidence": 0.99, "summary": "disk", "next_step_context": "", "action": "cleanup"})
    http_server.responses = [openai_text(text), openai_text(text)]
    project = replay_project(
        tmp_path, settings={"providers": {"openai": {"api_key": "sk-test", "base_url": f"{http_server.url}/v1"}}}
    )
    await seed(project, HISTORY[:2])
    result = replay(project, "triage/classify", "--candidate-model", "openai/gpt-4o-mini", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["totals"]["accuracy"]["candidate"] == 1.0 and report["totals"]["mean_trust"]["candidate"] == 0.99
    assert [request["body"]["model"] for request in http_server.requests] == ["gpt-4o-mini", "gpt-4o-mini"]
    assert {request["body"]["messages"][-1]["content"] for request in http_server.requests} == {
        "Alert: disk full on db-1",
        "Alert: disk full on db-2",
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["triage/clasify", "--candidate-agent", "classifier-v2"], "did you mean 'classify'?"),
        (["triag/classify", "--candidate-agent", "classifier-v2"], "did you mean 'triage'?"),
        (["triage/classify", "--candidate-agent", "classifer-v2"], "did you mean 'classifier-v2'?"),
        (["triage/classify", "--candidate-agent", "paging-agent"], "not in `replay.safe_agents`"),
        (["triage/after", "--candidate-model", "scripted"], "agent 'paging-agent' is not in `replay.safe_agents`"),
        (["triage/classify", "--candidate-model", "gpt4"], "unknown model 'gpt4'"),
        (["triage/classify"], "give exactly one candidate: a model, an agent or a prompt"),
        (["triage", "--candidate-model", "scripted"], "expected <pipeline>/<step>"),
        (["triage/classify", "--candidate-model", "scripted", "-k", "0"], "-k must be between 1 and 200"),
        (["triage/classify", "--candidate-prompt", "nowhere.txt"], "cannot read the candidate prompt"),
    ],
    ids=[
        "step",
        "pipeline",
        "agent",
        "unsafe-candidate",
        "unsafe-step-agent",
        "model",
        "no-candidate",
        "address",
        "k",
        "prompt",
    ],
)
def test_a_replay_that_cannot_be_done_says_why_and_exits_2(tmp_path: Path, args: list[str], expected: str) -> None:
    project = replay_project(tmp_path)
    result = replay(project, *args)
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr


async def test_no_marked_history_says_how_many_marks_exist_and_how_to_get_some(tmp_path: Path) -> None:
    project = replay_project(tmp_path)
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2")
    assert result.returncode == 2
    assert "has no marked production executions" in result.stderr and "vectorstep mark RUN/classify" in result.stderr
    await seed(project, HISTORY[:2])
    # The prompt changed since: the marked history belongs to another bucket.
    pipeline = (tmp_path / "pipelines" / "triage.yaml").read_text(encoding="utf-8")
    (tmp_path / "pipelines" / "triage.yaml").write_text(pipeline.replace("Alert: ", "Alert now: "), encoding="utf-8")
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2")
    assert result.returncode == 2
    assert "2 marked production execution(s) exist under earlier prompts or agent versions" in result.stderr


def test_rendered_mode_refuses_a_candidate_prompt(tmp_path: Path) -> None:
    project = replay_project(tmp_path)
    (tmp_path / "p.txt").write_text("x {{ context.summary }}", encoding="utf-8")
    result = replay(project, "triage/classify", "--candidate-prompt", "p.txt", "--mode", "rendered")
    assert result.returncode == 2 and "needs `--mode rerender`" in result.stderr


def _sample(
    label: float, recorded: dict[str, Any] | None, candidate: dict[str, Any] | None, trust: float = 0.9
) -> Sample:
    return Sample(
        RecordedExecution("r", "s", label, "p", recorded, 0.9, None, 0.9, True, 0.01, 100.0, "t"),
        CandidateResult("completed" if candidate else "failed", candidate, 0.8, None, trust, True, 0.02, 50.0),
    )


@pytest.mark.parametrize(
    ("recorded", "candidate", "agrees"),
    [
        ({"action": "cleanup", "summary": "a"}, {"action": "Cleanup ", "summary": "b"}, True),
        ({"action": "cleanup"}, {"action": "page"}, False),
        ({"action": "cleanup"}, {}, False),
        ({"proceed": True, "pods": 3}, {"proceed": True, "pods": 3}, True),
        ({"proceed": True, "pods": 3}, {"proceed": True, "pods": 4}, False),
        ({"summary": "free text only", "confidence": 0.9}, {"summary": "other"}, None),
        ({"note": "a long sentence of free text that is not a category"}, {"note": "x"}, None),
        (None, {"action": "x"}, None),
    ],
    ids=["case-and-space", "differs", "missing", "bool-and-int", "int-differs", "only-free-text", "long-text", "none"],
)
def test_agreement_compares_categorical_fields_only(
    recorded: dict[str, Any] | None, candidate: dict[str, Any], agrees: bool | None
) -> None:
    assert agreement(recorded, candidate) is agrees


@pytest.mark.parametrize(
    ("label", "agrees", "inferred"),
    [
        (1.0, True, 1.0),
        (0.0, True, 0.0),
        (0.5, True, 0.5),
        (1.0, False, 0.0),
        (0.0, False, None),
        (0.5, False, None),
        (1.0, None, None),
    ],
)
def test_a_candidate_label_is_inferred_only_where_the_recorded_one_tells(
    label: float, agrees: bool | None, inferred: float | None
) -> None:
    assert inferred_label(label, agrees) == inferred


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible() -> None:
    differences = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    interval = bootstrap_interval(differences)
    assert interval is not None and interval == bootstrap_interval(differences)
    assert interval[0] < sum(differences) / len(differences) < interval[1]
    assert bootstrap_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_interval([1.0]) is None


def test_a_failed_candidate_counts_as_escalated_and_its_trust_is_not_averaged() -> None:
    report = replay_report(
        [_sample(1.0, {"a": "x"}, {"a": "x"}, trust=0.95), _sample(1.0, {"a": "x"}, None, trust=0.0)], threshold=0.9
    )
    assert report.failed == 1 and report.totals["mean_trust"].candidate == 0.95
    assert report.totals["escalation_rate"].candidate == 0.5 and report.totals["escalation_rate"].recorded == 0.0
    assert report.totals["accuracy"].candidate == 1.0 and report.labelled == 1
    assert report.totals["cost"].difference == pytest.approx(0.01) and report.totals["latency_ms"].candidate == 50.0


OPERATOR = "operator-token-0123456789"
VIEWER = "viewer-token-0123456789"


def test_the_api_starts_a_replay_follows_it_and_lists_it(tmp_path: Path) -> None:

    tokens = [
        {"name": "ops", "token": OPERATOR, "role": "operator"},
        {"name": "view", "token": VIEWER, "role": "viewer"},
    ]
    project = replay_project(tmp_path, settings={"auth": {"tokens": tokens}})
    asyncio.run(seed(project, HISTORY[:3]))
    served = ServedApp(create_app(load_settings(project.config)))
    try:
        with (
            httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=60) as ops,
            httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=60) as viewer,
        ):
            body = {"candidate_agent": "classifier-v2"}
            assert viewer.post("/api/pipelines/triage/steps/classify/replay", json=body).status_code == 403
            started = ops.post("/api/pipelines/triage/steps/classify/replay", json=body)
            assert started.status_code == 202 and started.json()["total"] == 3
            run_id = started.json()["run_id"]
            deadline = time.monotonic() + 30
            while (answer_ := viewer.get(f"/api/replays/{run_id}")).status_code == 202:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert answer_.status_code == 200 and answer_.json()["totals"]["accuracy"]["candidate"] == 1.0
            assert viewer.get(f"/api/runs/{run_id}").json()["source"] == "replay"

            waited = ops.post("/api/pipelines/triage/steps/classify/replay", json=body | {"wait": True, "k": 2})
            assert waited.status_code == 200 and len(waited.json()["samples"]) == 2
            listed = viewer.get("/api/pipelines/triage/replays").json()["replays"]
            assert [item["run_id"] for item in listed] == [waited.json()["run_id"], run_id]
            assert listed[0]["candidate"] == {"kind": "agent", "name": "classifier-v2"} and listed[0]["samples"] == 2

            refused = ops.post("/api/pipelines/triage/steps/classify/replay", json={"candidate_agent": "paging-agent"})
            assert refused.status_code == 400 and "replay.safe_agents" in refused.json()["detail"]
            unknown = ops.post("/api/pipelines/triage/steps/clasify/replay", json=body)
            assert unknown.status_code == 404 and "did you mean 'classify'?" in unknown.json()["detail"]
            two = ops.post("/api/pipelines/triage/steps/classify/replay", json=body | {"candidate_model": "scripted"})
            assert two.status_code == 400 and "exactly one candidate" in two.json()["detail"]
            assert viewer.get("/api/replays/nope").status_code == 404
    finally:
        served.stop()


def test_a_safe_agent_that_does_not_exist_is_a_located_problem(tmp_path: Path) -> None:
    project = replay_project(tmp_path, safe=["classifier", "clasifier-v2"])
    result = run_cli("validate", ".", cwd=project.root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "vectorstep.yaml:" in result.stdout and "replay.safe_agents[1]: no agent 'clasifier-v2'" in result.stdout
    assert "did you mean 'classifier-v2'?" in result.stdout


async def test_a_replay_reads_and_stores_its_batch_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    project = replay_project(tmp_path, database=postgres_url)
    await seed(project, HISTORY[3:])
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2", "-k", "2", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # The two newest marked executions: web-4 (marked correct) and web-2 (marked incorrect), newest first.
    assert [sample["recorded"]["label"] for sample in report["samples"]] == [1.0, 0.0]
    assert report["totals"]["accuracy"]["candidate"] == 0.0 and report["labelled"] == 1
    listed = run_cli("runs", "list", "--json", cwd=project.root)
    assert [run["source"] for run in json.loads(listed.stdout)].count("replay") == 1


async def test_a_sample_whose_prompt_was_not_stored_is_unreplayable_and_says_why(tmp_path: Path) -> None:
    import sqlite3

    project = replay_project(tmp_path)
    run_ids = await seed(project, HISTORY[:2])
    with sqlite3.connect(tmp_path / "vectorstep.db") as connection:
        connection.execute("UPDATE pipeline_steps SET prompt = NULL WHERE run_id = ?", (run_ids[0],))
    result = replay(project, "triage/classify", "--candidate-agent", "classifier-v2", "--json")
    assert result.returncode == 0, result.stderr
    by_run = {sample["run_id"]: sample["candidate"] for sample in json.loads(result.stdout)["samples"]}
    assert by_run[run_ids[0]]["status"] == "unreplayable"
    assert by_run[run_ids[0]]["error"] == "the recorded execution has no prompt (its prompt was not stored)"
    assert by_run[run_ids[1]]["status"] == "completed"


async def test_a_stored_context_that_cannot_be_read_back_makes_its_sample_unreplayable(tmp_path: Path) -> None:
    import sqlite3

    project = replay_project(tmp_path)
    run_ids = await seed(project, HISTORY[:2])
    with sqlite3.connect(tmp_path / "vectorstep.db") as connection:
        connection.execute("UPDATE pipeline_runs SET context = ? WHERE id = ?", ('{"received_at": "soon"}', run_ids[0]))
    (tmp_path / "p.txt").write_text("Is this disk? {{ context.summary }}", encoding="utf-8")
    result = replay(project, "triage/classify", "--candidate-prompt", "p.txt", "--json")
    assert result.returncode == 0, result.stderr
    by_run = {sample["run_id"]: sample["candidate"] for sample in json.loads(result.stdout)["samples"]}
    assert by_run[run_ids[0]]["status"] == "unreplayable"
    assert by_run[run_ids[0]]["error"].startswith("the recorded run's context cannot be read back")
    assert by_run[run_ids[1]]["status"] == "completed"


async def test_a_candidates_artifacts_are_kept_within_the_configured_limits(tmp_path: Path) -> None:
    import sqlite3

    project = replay_project(
        tmp_path, safe=["classifier", "artist"], settings={"limits": {"max_artifacts_per_step": 1}}
    )
    project.scripted_agent("artist", answer(0.9, "done", action="cleanup", artifacts={"a.txt": "one", "b.txt": "two"}))
    await seed(project, HISTORY[:1])
    result = replay(project, "triage/classify", "--candidate-agent", "artist", "--json")
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    with sqlite3.connect(tmp_path / "vectorstep.db") as connection:
        stored = connection.execute("SELECT name FROM step_artifacts WHERE run_id = ?", (run_id,)).fetchall()
    assert stored == [("a.txt",)]
