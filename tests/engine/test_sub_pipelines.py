"""`executor: pipeline`: a child run of its own, linked both ways, its outcome the parent step's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.spec.settings import load_settings
from vectorstep.testing import ProjectDir, alertmanager_payload, answer
from vectorstep.web.service import Service


def parent_and_child(project: ProjectDir, *, child_steps: list[dict[str, Any]] | None = None) -> None:
    project.settings({"database": {"url": "sqlite:///./runs.db"}})
    project.scripted_agent("triage", answer(0.9, "checkout 5xx confirmed"))
    project.scripted_agent("investigate", answer(0.8, "pool exhausted on db-7", root_cause="connection pool"))
    project.scripted_agent("report", answer(0.95, "reported"))
    project.pipeline(
        "incident",
        {
            "name": "incident",
            "steps": [
                {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}},
                {
                    "name": "diagnose",
                    "executor": "pipeline",
                    "executor_config": {
                        "pipeline": "diagnosis",
                        "context": {
                            "summary": "diagnose: {{ steps.triage.summary }}",
                            "labels": {"tier": "db"},
                        },
                    },
                    "confidence_threshold": 0.5,
                },
                {
                    "name": "report",
                    "executor": "gateway",
                    "executor_config": {"agent": "report"},
                    "prompt_template": "cause: {{ steps.diagnose.root_cause }} ({{ steps.diagnose.child_run_id }})",
                },
            ],
        },
    )
    project.pipeline(
        "diagnosis",
        {
            "name": "diagnosis",
            "context_template": {"include": ["summary", "labels.tier", "labels.service"]},
            "steps": child_steps
            or [
                {
                    "name": "investigate",
                    "executor": "gateway",
                    "executor_config": {"agent": "investigate"},
                    "prompt_template": "{{ summary }} tier={{ tier }} service={{ service }}",
                }
            ],
        },
    )
    project.payload("alert", alertmanager_payload(service="checkout"))


def test_the_child_runs_as_its_own_run_and_its_last_output_is_the_parent_steps(project: ProjectDir) -> None:
    parent_and_child(project)
    ran = run_cli("run", "incident", "--payload", "alert.json", "--json", cwd=project.root)
    assert ran.returncode == 0, ran.stderr
    parent = json.loads(ran.stdout)
    assert parent["status"] == "completed"
    diagnose = next(step for step in parent["steps"] if step["name"] == "diagnose")
    child_id = diagnose["output"]["child_run_id"]
    assert diagnose["output"]["root_cause"] == "connection pool"
    assert diagnose["output"]["summary"] == "pool exhausted on db-7"
    assert diagnose["confidence"] == 0.8  # the child's final combined trust
    assert parent["children"] == [
        {"run_id": child_id, "pipeline": "diagnosis", "status": "completed", "step": "diagnose"}
    ]
    report = next(step for step in parent["steps"] if step["name"] == "report")
    assert report["prompt"] == f"cause: connection pool ({child_id})"

    child = json.loads(run_cli("runs", "show", child_id, "--json", cwd=project.root).stdout)
    assert child["pipeline"] == "diagnosis" and child["status"] == "completed"
    assert child["parent_run_id"] == parent["run_id"] and child["parent_step"] == "diagnose"
    # The parent's context with the overrides: summary replaced, labels merged key by key.
    assert child["steps"][0]["prompt"] == "diagnose: checkout 5xx confirmed tier=db service=checkout"

    shown = run_cli("runs", "show", parent["run_id"], cwd=project.root)
    assert f"sub-pipeline run {child_id}" in shown.stdout
    shown_child = run_cli("runs", "show", child_id, cwd=project.root)
    assert f"the sub-pipeline of run {parent['run_id']} (its step diagnose)" in shown_child.stdout


def test_a_child_that_escalates_fails_the_parent_step_with_the_childs_reason(project: ProjectDir) -> None:
    low = [
        {
            "name": "investigate",
            "executor": "gateway",
            "executor_config": {"agent": "investigate"},
            "confidence_threshold": 0.95,
        }
    ]
    parent_and_child(project, child_steps=low)
    ran = run_cli("run", "incident", "--payload", "alert.json", "--json", cwd=project.root)
    parent = json.loads(ran.stdout)
    assert parent["status"] == "failed"
    diagnose = next(step for step in parent["steps"] if step["name"] == "diagnose")
    assert diagnose["status"] == "failed" and diagnose["error_kind"] == "executor_error"
    child_id = parent["children"][0]["run_id"]
    assert diagnose["error"] == (
        f"sub-pipeline diagnosis (run {child_id}) ended escalated: step investigate escalated: "
        "combined_trust 0.8 is below its confidence_threshold 0.95"
    )
    assert [step["name"] for step in parent["steps"]] == ["triage", "diagnose"]  # report never ran


def test_unknown_children_cycles_and_deep_nesting_are_located_load_errors(project: ProjectDir) -> None:
    parent_and_child(project)
    project.pipeline(
        "incident",
        {
            "name": "incident",
            "steps": [{"name": "diagnose", "executor": "pipeline", "executor_config": {"pipeline": "diagnosys"}}],
        },
    )
    unknown = run_cli("validate", ".", cwd=project.root)
    assert unknown.returncode == 2
    said = unknown.stdout + unknown.stderr
    assert "incident.yaml:" in said
    assert "steps[0].executor_config.pipeline: no pipeline 'diagnosys' (did you mean 'diagnosis'?)" in said

    def calls(name: str, child: str) -> None:
        step = {"name": "next", "executor": "pipeline", "executor_config": {"pipeline": child}}
        project.pipeline(name, {"name": name, "steps": [step]})

    calls("incident", "diagnosis")
    calls("diagnosis", "escalation")
    calls("escalation", "incident")
    cycle = run_cli("validate", ".", cwd=project.root)
    assert cycle.returncode == 2
    assert (
        "sub-pipelines call each other in a cycle: incident → diagnosis → escalation → incident"
        in cycle.stdout + cycle.stderr
    )

    for depth in range(7):
        calls(f"level{depth}", f"level{depth + 1}")
    project.scripted_agent("leaf", answer(0.9))
    leaf = {"name": "leaf", "executor": "gateway", "executor_config": {"agent": "leaf"}}
    project.pipeline("level7", {"name": "level7", "steps": [leaf]})
    calls("escalation", "level0")
    deep = run_cli("validate", ".", cwd=project.root)
    assert "sub-pipelines nest 6 deep (level0 → level1 → level2 → level3 → level4 → level5 → level6); " in (
        deep.stdout + deep.stderr
    )
    assert "limits.max_pipeline_depth is 5" in deep.stdout + deep.stderr


async def _until(service: Service, run_id: str, status: RunStatus) -> RunRecord:
    for _ in range(500):
        run = await service.runs.get_run(run_id, with_log=True)
        if run.status is status:
            return run
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} is {run.status.value}, not {status.value}")


async def test_a_child_waiting_for_a_person_parks_its_parent_until_the_child_ends(
    tmp_path: Path, database_url: str
) -> None:
    """Also on PostgreSQL, where the child's resume and then its parent's are jobs on the queue."""
    project = ProjectDir(tmp_path / "project")
    sign_off = {"name": "sign-off", "executor": "human", "executor_config": {"message": "Restart db-7?"}}
    investigate = {"name": "investigate", "executor": "gateway", "executor_config": {"agent": "investigate"}}
    parent_and_child(project, child_steps=[investigate, sign_off])
    if database_url.startswith("postgresql"):
        project.settings({"database": {"url": database_url}})
    settings = load_settings(project.config)
    service = Service(settings)
    await service.start()
    try:
        context = NormalisedContext("manual", service.clock.now(), summary="checkout 5xx")
        accepted = await service.accept(service.project.pipelines["incident"], context, gated=False)
        assert accepted.run_id is not None
        parent = await _until(service, accepted.run_id, RunStatus.WAITING)
        child_id = parent.children[0].run_id
        child = await _until(service, child_id, RunStatus.WAITING)
        assert parent.log[-1].message.startswith(f"waiting for its sub-pipeline run {child_id}")
        assert [step.name for step in parent.steps] == ["triage"]  # diagnose has not finished
        # While they wait, each run shows what its finished steps spent.
        assert parent.input_tokens == parent.steps[0].total_input_tokens > 0
        assert child.input_tokens == child.steps[0].total_input_tokens > 0
        (approval,) = await service.approvals.for_run(child.run_id)
        await service.decide(approval.id, True, "alice")
        await _until(service, child_id, RunStatus.COMPLETED)
        done = await _until(service, accepted.run_id, RunStatus.COMPLETED)
    finally:
        await service.stop()
    assert [step.name for step in done.steps] == ["triage", "diagnose", "report"]
    diagnose = done.steps[1]
    assert diagnose.output is not None and diagnose.output["child_run_id"] == child_id
    assert diagnose.output["summary"] == "approved by alice"  # the child's last output: the person's decision
    assert any(f"resumed: its sub-pipeline run {child_id} ended completed" in entry.message for entry in done.log)
    assert len(done.children) == 1  # continuing found the child it had started; it did not start another
