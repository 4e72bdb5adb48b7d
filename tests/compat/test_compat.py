"""Files written for the existing VectorStep load unchanged and run: `project/` holds pipelines in the
published shapes (single-mapping Telegram notifications, an explicit catch-all, sub-pipelines with
`context`, an OpenClaw step, a parallel group with per-branch trust blocks, a fan-out, `on_failure`
with a webhook, a library step), with scripted agents and local fakes for the outside services."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import RecordingServer, run_cli
from tests.fixtures.fake_openclaw import FakeOpenClaw, running, write_identity
from vectorstep.testing import alertmanager_payload

PROJECT = Path(__file__).parent / "project"
TOKEN = "compat-operator-token-42"
PROPOSAL = json.dumps({"confidence": 0.88, "summary": "roll back checkout to 3be07d2", "next_step_context": ""})


def copied(tmp_path: Path) -> tuple[Path, tuple[str, str]]:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    (root / "alert.json").write_text(json.dumps(alertmanager_payload(service="checkout")), encoding="utf-8")
    (root / "quiet.json").write_text(json.dumps(alertmanager_payload(service="search")), encoding="utf-8")
    return root, write_identity(root / "identity", TOKEN)


def run(root: Path, payload: str, env: dict[str, str]) -> dict[str, Any]:
    env = {**env, "VECTORSTEP_DATABASE_URL": f"sqlite:///{root / 'runs.db'}"}
    ran = run_cli("run", "alert-intake", "--payload", payload, "--json", cwd=root, env=env)
    assert ran.stdout, ran.stderr
    record: dict[str, Any] = json.loads(ran.stdout)
    return record


def child(root: Path, run_id: str, env: dict[str, str]) -> dict[str, Any]:
    env = {**env, "VECTORSTEP_DATABASE_URL": f"sqlite:///{root / 'runs.db'}"}
    shown: dict[str, Any] = json.loads(run_cli("runs", "show", run_id, "--json", cwd=root, env=env).stdout)
    return shown


def test_the_published_shapes_validate_unchanged(tmp_path: Path) -> None:
    root, _ = copied(tmp_path)
    checked = run_cli("validate", ".", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "11 file(s) valid" in checked.stdout


def test_an_alert_runs_through_both_sub_pipelines_and_the_openclaw_step(
    tmp_path: Path, http_server: RecordingServer
) -> None:
    root, paired = copied(tmp_path)
    with running(FakeOpenClaw({"sre-remediator": PROPOSAL}, TOKEN, dict([paired]))) as gateway:
        env = {"OPENCLAW_URL": gateway.url, "HOOK_URL": http_server.url, "TELEGRAM_API_URL": http_server.url}
        parent = run(root, "alert.json", env)
    assert parent["status"] == "completed", parent
    assert [step["name"] for step in parent["steps"]] == ["triage", "investigate", "remediate"]
    investigation = child(root, parent["steps"][1]["output"]["child_run_id"], env)
    assert investigation["status"] == "completed"
    names = [step["name"] for step in investigation["steps"]]
    assert {"evidence/logs", "evidence/metrics", "evidence"} <= set(names)
    assert "per-pod/0" in names and "per-pod/1" in names and names[-1] == "summarise"
    assert investigation["steps"][-1]["prompt"].startswith("Summarise: 503 connection pool exhausted")
    logs = next(step for step in investigation["steps"] if step["name"] == "evidence/logs")
    assert logs["prompt"] == (
        "Read the logs of checkout (alert-intake): check the payments connection pool of checkout"
    )
    remediation = child(root, parent["steps"][2]["output"]["child_run_id"], env)
    assert [step["status"] for step in remediation["steps"]] == ["completed", "completed"]
    (asked,) = gateway.agent_requests
    assert asked["agentId"] == "sre-remediator" and asked["thinking"] == "low"
    assert asked["message"].startswith("Propose a remediation for checkout: checkout pool exhausted")
    changelog = [request for request in http_server.requests if request["path"] == "/changelog"]
    assert changelog[0]["body"] == {"service": "checkout", "proposal": "roll back checkout to 3be07d2"}


def test_a_refused_openclaw_step_calls_the_failure_webhook_and_goes_on(
    tmp_path: Path, http_server: RecordingServer
) -> None:
    root, paired = copied(tmp_path)
    with running(FakeOpenClaw({"sre-remediator": PROPOSAL}, "a-different-token", dict([paired]))) as gateway:
        env = {"OPENCLAW_URL": gateway.url, "HOOK_URL": http_server.url, "TELEGRAM_API_URL": http_server.url}
        parent = run(root, "alert.json", env)
    assert parent["status"] == "completed", (parent["error"], [step["error"] for step in parent["steps"]])
    remediation = child(root, parent["steps"][2]["output"]["child_run_id"], env)
    propose, record = remediation["steps"]
    assert propose["status"] == "failed" and "refused the connection" in propose["error"]
    hooked = next(request for request in http_server.requests if request["path"] == "/change-management")
    assert hooked["body"] == {"service": "checkout", "failed_step": "propose"}
    assert record["status"] == "completed"
    changelog = next(request for request in http_server.requests if request["path"] == "/changelog")
    assert changelog["body"]["proposal"] == "no proposal"


def test_an_escalation_goes_to_telegram_with_the_single_mapping_template(
    tmp_path: Path, http_server: RecordingServer
) -> None:
    root, _ = copied(tmp_path)
    env = {"HOOK_URL": http_server.url, "TELEGRAM_API_URL": http_server.url}
    parent = run(root, "quiet.json", env)
    assert parent["status"] == "escalated"
    (sent,) = [request for request in http_server.requests if "sendMessage" in request["path"]]
    assert sent["body"]["chat_id"] == "-1001234567890"
    assert sent["body"]["text"] == (
        "🚨 alert-intake: triage needs a person — step triage escalated: combined_trust 0.3 is below "
        "its confidence_threshold 0.6"
    )
