"""The API and the webhook against a real service on 127.0.0.1 (uvicorn, SQLite, scripted agents, a real MCP server)."""

from __future__ import annotations

import concurrent.futures
import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from tests.web.conftest import ALICE, BOB, SECRET_HEADER, LiveService, alert, build_project, wait_for
from vectorstep.testing import alertmanager_payload, generic_payload


def test_health_is_open_and_everything_else_needs_a_token(live: LiveService) -> None:
    with live.client(token=None) as anonymous:
        health = anonymous.get("/health").json()
        assert health["status"] == "ok" and health["database"] is True
        assert health["agent_runtime"]["mode"] == "embedded"
        assert health["agent_runtime"]["tool_servers"]["tools"]["state"] in ("running", "not_started")
        for method, path in [("GET", "/api/runs"), ("GET", "/metrics"), ("POST", "/webhook?source=generic")]:
            refused = anonymous.request(method, path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer"
    with live.client(token="not-a-token-at-all-xx") as stranger:
        assert stranger.get("/api/runs").status_code == 401
    with live.client(token=BOB) as bob:
        assert bob.get("/api/runs").status_code == 200


def warmed(client: httpx.Client) -> dict[str, Any]:
    """/health once the service says it is warm (or after 30 s)."""
    deadline = time.monotonic() + 30
    health: dict[str, Any] = client.get("/health").json()
    while health["warming"] and time.monotonic() < deadline:
        time.sleep(0.05)
        health = client.get("/health").json()
    return health


def test_the_service_warms_up_its_tool_servers_before_the_first_run(tmp_path: Path) -> None:
    # A fresh service: no run has asked for a tool yet, but the server its agents use is started and
    # listed right after the service starts, so the first run does not wait for it. A reload makes a
    # new agent runtime, which is warmed the same way.
    project = build_project(tmp_path / "project", f"sqlite:///{tmp_path / 'vectorstep.db'}")
    fresh = LiveService(project.config)
    try:
        with fresh.client(token=None) as anonymous, fresh.client() as alice:
            started = warmed(anonymous)
            assert alice.get("/api/runs").json()["runs"] == []
            assert alice.post("/api/pipelines/reload").status_code == 200
            reloaded = warmed(anonymous)
    finally:
        fresh.stop()
    for health in (started, reloaded):
        assert health["warming"] is False
        assert health["agent_runtime"]["tool_servers"]["tools"]["state"] == "running"


def test_an_alert_is_accepted_with_its_run_row_written_and_runs_in_the_background(live: LiveService) -> None:
    with live.client() as client:
        answer = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-accept"))
        assert answer.status_code == 202
        body = answer.json()
        assert body["status"] == "accepted" and body["pipeline"] == "incident"
        # The row exists as soon as the answer does.
        assert client.get(f"/api/runs/{body['run_id']}").status_code == 200
        record = wait_for(client, body["run_id"], until=("escalated",))
    assert record["team"] == "shop"  # from alice's token
    assert record["source"] == "alertmanager"
    investigate = record["steps"][1]
    assert investigate["trust_report"]["mode"] == "enforced"
    assert investigate["grounding_score"] == 0.5
    assert record["log"][0]["event"] == "run_started"


def test_a_grafana_alert_runs_with_its_links_in_the_context(live: LiveService) -> None:
    payload = {**alert(fingerprint="f-grafana"), "orgId": 1, "title": "[FIRING:1] checkout 5xx", "state": "alerting"}
    payload["alerts"][0] |= {"dashboardURL": "http://grafana.example/d/abc", "values": {"B": 0.042}}
    with live.client() as client:
        answer = client.post("/webhook?source=grafana", json=payload)
        assert answer.status_code == 202
        run = client.get(f"/api/runs/{answer.json()['run_id']}").json()
    assert run["source"] == "grafana" and run["pipeline"] == "incident"
    assert run["context"]["metadata"]["dashboard_url"] == "http://grafana.example/d/abc"
    assert run["context"]["metadata"]["values"] == {"B": 0.042}
    assert run["context"]["labels"]["service"] == "checkout"


def test_the_same_alert_twice_is_deduplicated_to_the_first_run(live: LiveService) -> None:
    with live.client() as client:
        first = client.post(
            "/webhook", json=alert(fingerprint="f-dedup"), headers={"X-Pipeline-Source": "alertmanager"}
        )
        second = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-dedup"))
        other = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-other"))
    assert first.status_code == 202
    assert second.status_code == 200
    assert second.json() == {
        "status": "deduplicated",
        "run_id": first.json()["run_id"],
        "pipeline": "incident",
        "detail": f"run {first.json()['run_id']} already handles this event",
    }
    assert other.status_code == 202 and other.json()["run_id"] != first.json()["run_id"]


def test_the_retry_of_an_alert_whose_run_was_lost_starts_new_work_and_says_which_run_it_replaces(
    live: LiveService,
) -> None:
    with live.client() as client:
        first = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-lost")).json()["run_id"]
        wait_for(client, first, until=("completed", "escalated"))
        database = live.service.settings.database_url.removeprefix("sqlite:///")
        with sqlite3.connect(database) as connection:  # as a process killed under it would leave it
            connection.execute("UPDATE pipeline_runs SET status = 'interrupted' WHERE id = ?", (first,))
        retried = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-lost"))
        again = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-lost"))
    assert retried.status_code == 202
    body = retried.json()
    assert body["status"] == "accepted" and body["run_id"] != first and body["replaces_run_id"] == first
    assert body["detail"] == (
        f"run {first} of this event was lost (interrupted, or failed by VectorStep itself): "
        "this run starts its work again"
    )
    assert again.json()["status"] == "deduplicated" and again.json()["run_id"] == body["run_id"]


def test_concurrent_twins_start_exactly_one_run(live: LiveService) -> None:
    def send(_: int) -> dict[str, object]:
        with live.client() as client:
            return client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-race")).json()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(16)))
    assert sorted({answer["status"] for answer in answers}) == ["accepted", "deduplicated"]
    assert sum(answer["status"] == "accepted" for answer in answers) == 1
    assert len({answer["run_id"] for answer in answers}) == 1


def test_bad_payloads_are_400s_with_the_reason(live: LiveService) -> None:
    with live.client() as client:
        not_json = client.post(
            "/webhook?source=alertmanager", content=b"{oops", headers={"content-type": "application/json"}
        )
        assert not_json.status_code == 400
        assert not_json.json()["detail"].startswith("the body is not JSON: Expecting property name")
        no_alerts = client.post("/webhook?source=alertmanager", json={"status": "firing"})
        assert no_alerts.status_code == 400 and "alerts" in no_alerts.json()["detail"]
        no_source = client.post("/webhook", json=generic_payload())
        assert no_source.status_code == 400 and "X-Pipeline-Source" in no_source.json()["detail"]
        unknown = client.post("/webhook?source=pagerduty", json=generic_payload())
        assert unknown.status_code == 400 and "alertmanager, generic, grafana" in unknown.json()["detail"]
        empty = client.post("/webhook?source=generic")
        assert empty.status_code == 400 and "no body" in empty.json()["detail"]
        wrong_type = client.post("/webhook?source=generic", json={"summary": 42})
        assert wrong_type.status_code == 400 and wrong_type.json()["detail"] == "`summary` must be a string, got int"


def test_an_event_no_pipeline_takes_is_a_422(live: LiveService) -> None:
    with live.client() as client:
        nobody = client.post("/webhook?source=alertmanager", json=alert(service="billing"))
        assert nobody.status_code == 422 and nobody.json()["status"] == "no_match"
        misnamed = client.post("/webhook?source=generic", json=generic_payload(pipeline="incidnet"))
        assert misnamed.status_code == 422
        assert "did you mean 'incident'" in misnamed.json()["detail"]


def test_the_stage_gate_skips_testing_pipelines_unless_allowed(live: LiveService) -> None:
    with live.client() as client:
        skipped = client.post("/webhook?source=alertmanager", json=alert(service="sandbox", fingerprint="f-sandbox"))
        assert skipped.status_code == 200 and skipped.json()["status"] == "skipped_testing"
        allowed = client.post(
            "/webhook?source=alertmanager&allow_testing=true", json=alert(service="sandbox", fingerprint="f-sandbox")
        )
        assert allowed.status_code == 202
        record = wait_for(client, allowed.json()["run_id"], until=("completed",))
    assert record["stage"] == "testing"


def test_a_resolved_alert_starts_no_run_by_default(live: LiveService) -> None:
    with live.client() as client:
        before = client.get("/api/runs?limit=500").json()["runs"]
        resolved = client.post(
            "/webhook?source=alertmanager",
            json=alertmanager_payload(service="checkout", fingerprint="f-resolved", status="resolved"),
        )
        after = client.get("/api/runs?limit=500").json()["runs"]
    assert resolved.status_code == 202 and resolved.json()["status"] == "ignored_resolved"
    assert "intake.alertmanager.resolved: run" in resolved.json()["detail"]
    assert len(after) == len(before)


def test_resolved_alerts_run_when_the_service_says_so(tmp_path: Path) -> None:
    project = build_project(
        tmp_path / "project", f"sqlite:///{tmp_path / 'v.db'}", intake={"alertmanager": {"resolved": "run"}}
    )
    served = LiveService(project.config)
    try:
        with served.client() as client:
            payload = alertmanager_payload(service="checkout", fingerprint="f-resolved", status="resolved")
            accepted = client.post("/webhook?source=alertmanager", json=payload)
            assert accepted.status_code == 202 and accepted.json()["status"] == "accepted"
            record = client.get(f"/api/runs/{accepted.json()['run_id']}").json()
    finally:
        served.stop()
    assert record["context"]["metadata"]["status"] == "resolved"  # matchable: `metadata.status`


def test_runs_are_listed_with_filters_and_pages(live: LiveService) -> None:
    with live.client() as client:
        for number in range(3):
            client.post("/webhook?source=alertmanager", json=alert(fingerprint=f"f-list-{number}"))
        everything = client.get("/api/runs", params={"pipeline": "incident", "limit": 2}).json()
        assert len(everything["runs"]) == 2 and everything["next_offset"] == 2
        later = client.get("/api/runs", params={"pipeline": "incident", "limit": 2, "offset": 2}).json()
        assert {run["run_id"] for run in later["runs"]}.isdisjoint(run["run_id"] for run in everything["runs"])
        for run in everything["runs"] + later["runs"]:
            wait_for(client, run["run_id"], until=("escalated",))
        escalated = client.get("/api/runs", params={"status": "escalated", "team": "shop", "limit": 500}).json()["runs"]
        assert escalated and all(run["status"] == "escalated" and run["team"] == "shop" for run in escalated)
        assert client.get("/api/runs", params={"stage": "testing", "pipeline": "incident"}).json()["runs"] == []
        assert client.get("/api/runs", params={"status": "exploded"}).status_code == 422
        newest = everything["runs"][0]
        assert client.get(f"/api/runs/{newest['run_id'][:10]}").json()["run_id"] == newest["run_id"]
        assert client.get("/api/runs/ffffffffffff").status_code == 404


def test_marks_on_runs_and_steps_are_stored_with_who_marked(live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-mark")).json()["run_id"]
        wait_for(client, run_id, until=("escalated",))
        run_mark = client.post(f"/api/runs/{run_id}/feedback", json={"label": "partial", "comment": "half right"})
        step_mark = client.post(f"/api/runs/{run_id}/steps/investigate/feedback", json={"label": "incorrect"})
        assert run_mark.status_code == 201 and step_mark.status_code == 201
        assert client.post(f"/api/runs/{run_id}/feedback", json={"label": "great"}).status_code == 422
        missing = client.post(f"/api/runs/{run_id}/steps/nope/feedback", json={"label": "correct"})
        assert missing.status_code == 404 and "has no step 'nope'" in missing.json()["detail"]
        marks = client.get(f"/api/runs/{run_id}").json()["feedback"]
    assert [(mark["step"], mark["label"], mark["marked_by"]) for mark in marks] == [
        (None, "partial", "alice"),
        ("investigate", "incorrect", "alice"),
    ]


def test_the_marking_queue_lists_unmarked_agent_steps_and_a_mark_takes_one_off(live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-queue")).json()["run_id"]
        wait_for(client, run_id, until=("escalated",))
        before = client.get("/api/marking", params={"pipeline": "incident", "limit": 500}).json()
        queued = {(step["run_id"], step["step"]) for step in before["steps"]}
        assert {(run_id, "triage"), (run_id, "investigate")} <= queued
        assert before["total"] >= before["unmarked"] >= 2 and 0 <= before["coverage"] < 1
        client.post(f"/api/runs/{run_id}/feedback", json={"label": "correct"})  # a run mark covers its steps
        after = client.get("/api/marking", params={"pipeline": "incident", "limit": 500}).json()
        assert not {(step["run_id"], step["step"]) for step in after["steps"]} & {
            (run_id, "triage"),
            (run_id, "investigate"),
        }
        assert after["unmarked"] == before["unmarked"] - 2 and after["total"] == before["total"]
        assert client.get("/api/marking", params={"stage": "staging"}).status_code == 422


def test_an_approval_decided_over_the_api_resumes_the_run(live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/approve-me/run", json={"summary": "payments down"}).json()["run_id"]
        wait_for(client, run_id, until=("waiting",))
        pending = [a for a in client.get("/api/approvals").json()["approvals"] if a["run_id"] == run_id]
        assert len(pending) == 1 and pending[0]["message"] == "Roll back payments?"
        with live.client(token=BOB) as bob:
            decided = bob.post(f"/api/approvals/{pending[0]['id']}/approve")
        assert decided.status_code == 200 and decided.json()["decided_by"] == "bob"
        record = wait_for(client, run_id, until=("completed",))
        again = client.post(f"/api/approvals/{pending[0]['id']}/reject")
    assert [step["status"] for step in record["steps"]] == ["completed", "completed"]
    assert again.status_code == 409 and again.json()["detail"].endswith("was already approved by bob")


def test_pipelines_are_listed_shown_without_secrets_and_run_by_hand(live: LiveService) -> None:
    with live.client() as client:
        listed = {pipeline["name"]: pipeline for pipeline in client.get("/api/pipelines").json()["pipelines"]}
        assert set(listed) == {"incident", "approve-me", "garbled", "sandbox", "umbrella", "slow"}
        assert listed["sandbox"]["stage"] == "testing" and listed["incident"]["steps"] == 2
        shown = client.get("/api/pipelines/slow")
        assert shown.status_code == 200 and SECRET_HEADER not in shown.text
        assert shown.json()["spec"]["steps"][1]["executor_config"]["headers"] == {"Authorization": "••••••"}
        assert client.get("/api/pipelines/nope").status_code == 404
        started = client.post("/api/pipelines/sandbox/run")
        assert started.status_code == 202
        record = wait_for(client, started.json()["run_id"], until=("completed",))
    assert record["source"] == "manual" and record["stage"] == "testing"


def test_a_pipeline_file_is_validated_against_the_project(live: LiveService) -> None:
    good = "name: fresh\nsteps:\n  - name: one\n    executor: gateway\n    executor_config: {agent: triage}\n"
    bad = "name: fresh\nsteps:\n  - name: one\n    executor: gateway\n    executor_config: {agent: nobody}\n    confidence_threshold: high\n"
    with live.client() as client:
        ok = client.post("/api/pipelines/validate", content=good, headers={"content-type": "application/yaml"})
        assert ok.status_code == 200 and ok.json() == {"valid": True, "pipeline": "fresh", "problems": []}
        broken = client.post(
            "/api/pipelines/validate?filename=fresh.yaml", content=bad, headers={"content-type": "application/yaml"}
        )
    assert broken.status_code == 422
    problem = broken.json()["problems"][0]
    assert problem["file"] == "fresh.yaml" and problem["line"] == 6
    assert problem["key"] == "steps[0].confidence_threshold"


def test_metrics_count_production_runs_with_bounded_labels(live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/webhook?source=alertmanager", json=alert(fingerprint="f-metrics")).json()["run_id"]
        wait_for(client, run_id, until=("escalated",))
        text = client.get("/metrics").text
    assert 'vectorstep_pipeline_runs_total{pipeline="incident",status="escalated"}' in text
    assert 'vectorstep_step_grounding_score_bucket{le="0.5",pipeline="incident",step="investigate"}' in text
    assert (
        'vectorstep_step_deterministic_check_total{check="still_firing",outcome="passed",pipeline="incident",'
        'step="investigate"}' in text
    )
    assert 'vectorstep_verifier_runs_total{mode="independent",pipeline="incident",step="triage"}' in text
    assert "vectorstep_human_approvals_pending" in text
    assert 'pipeline="sandbox"' not in text  # testing runs are not counted
    assert run_id not in text


def test_the_openapi_document_lists_the_api(live: LiveService) -> None:
    with live.client() as client:
        paths = client.get("/api/openapi.json").json()["paths"]
    for path in [
        "/webhook",
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/feedback",
        "/api/runs/{run_id}/steps/{step_name}/feedback",
        "/api/approvals",
        "/api/approvals/{approval_id}/approve",
        "/api/approvals/{approval_id}/reject",
        "/api/pipelines",
        "/api/pipelines/{name}",
        "/api/pipelines/validate",
        "/api/pipelines/reload",
        "/api/pipelines/{name}/run",
        "/api/calibration",
        "/api/marking",
        "/health",
    ]:
        assert path in paths, path


def test_no_token_is_ever_rendered_or_returned(live: LiveService) -> None:
    with live.client() as client:
        for path in ["/api/pipelines", "/api/pipelines/incident", "/api/runs", "/metrics", "/api/openapi.json"]:
            assert ALICE not in client.get(path).text


def test_the_grafana_dashboard_only_uses_metrics_the_service_exposes(live: LiveService) -> None:
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in expressions for name in re.findall(r"\b(vectorstep_[a-z_]+)", expr)}
    with live.client() as client:
        exposed = client.get("/metrics").text
    families = set(re.findall(r"^# TYPE (vectorstep_[a-z_]+) (counter|gauge|histogram)", exposed, re.M))
    names = {name for name, _ in families}
    names |= {f"{name}_total" for name, kind in families if kind == "counter"}
    names |= {f"{name}_bucket" for name, kind in families if kind == "histogram"}
    assert used and used <= names, used - names
    assert {"vectorstep_step_grounding_score_bucket", "vectorstep_step_deterministic_check_total"} <= used
