"""`executor: openclaw` against a fake OpenClaw gateway that checks the device-signed handshake."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.conftest import run_cli
from tests.fixtures.fake_openclaw import FakeOpenClaw, running, write_identity
from vectorstep.testing import ProjectDir, alertmanager_payload

TOKEN = "device-operator-token-0123"
ANSWER = json.dumps({"confidence": 0.82, "summary": "disk full on node-3", "next_step_context": "clean /var/log"})


def openclaw_project(project: ProjectDir, url: str, **step: Any) -> None:
    project.settings(
        {
            "database": {"url": "sqlite:///./runs.db"},
            "executors": {"openclaw": {"url": url, "identity_dir": "./identity"}},
        }
    )
    project.pipeline(
        "disk",
        {
            "name": "disk",
            "steps": [
                {
                    "name": "diagnose",
                    "executor": "openclaw",
                    "executor_config": {
                        "agent": "ops",
                        "model": "anthropic/claude-sonnet-4-5",
                        "thinking_level": "low",
                    },
                    "prompt_template": "Why is {{ labels.service }} full?",
                    **step,
                }
            ],
        },
    )
    project.payload("alert", alertmanager_payload(service="node-3"))


def test_a_step_runs_on_an_openclaw_gateway_after_a_signed_handshake(project: ProjectDir) -> None:
    paired = write_identity(project.root / "identity", TOKEN)
    with running(FakeOpenClaw({"ops": ANSWER}, TOKEN, dict([paired]))) as gateway:
        openclaw_project(project, gateway.url)
        ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout)
    (step,) = record["steps"]
    assert step["status"] == "completed" and step["confidence"] == 0.82
    assert step["output"]["summary"] == "disk full on node-3"
    assert (step["model"], step["provider"]) == ("claude-sonnet-4-5", "anthropic")
    assert gateway.refusals == []
    (connect,) = gateway.connects
    params = connect["params"]
    assert (params["minProtocol"], params["maxProtocol"], params["role"]) == (3, 3, "operator")
    assert params["device"]["id"] == paired[0] and params["auth"] == {"token": TOKEN}
    (asked,) = gateway.agent_requests
    assert asked["agentId"] == "ops" and asked["message"] == "Why is node-3 full?"
    assert asked["sessionKey"] == f"agent:ops:{record['run_id']}:diagnose"
    assert (asked["model"], asked["thinking"]) == ("anthropic/claude-sonnet-4-5", "low")


def test_a_swapped_key_a_stale_signature_and_a_wrong_token_are_refused(project: ProjectDir) -> None:
    cases = [
        ({"signing_key": Ed25519PrivateKey.generate()}, {}, TOKEN, "device signature invalid"),
        ({}, {"clock_offset_ms": 10 * 60 * 1000}, TOKEN, "device signature expired"),
        ({}, {}, "another-token", "unauthorized: gateway token mismatch"),
    ]
    for identity, server, expected_token, refusal in cases:
        paired = write_identity(project.root / "identity", TOKEN, **identity)
        with running(FakeOpenClaw({"ops": ANSWER}, expected_token, dict([paired]), **server)) as gateway:
            openclaw_project(project, gateway.url)
            ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
        (step,) = json.loads(ran.stdout)["steps"]
        assert step["status"] == "failed" and step["error_kind"] == "executor_error"
        assert step["error"] == f"the OpenClaw gateway at {gateway.url} refused the connection: {refusal}"
        assert gateway.agent_requests == []  # nothing ran on a refused connection


def test_missing_identity_an_unreachable_gateway_and_an_unreadable_answer_fail_the_step_clearly(
    project: ProjectDir,
) -> None:
    with running(FakeOpenClaw({"ops": "I think the disk is full."}, TOKEN, {})) as gateway:
        openclaw_project(project, gateway.url)
        ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
        (step,) = json.loads(ran.stdout)["steps"]
        assert step["error"] == f"the OpenClaw identity file {project.root / 'identity' / 'device.json'} does not exist"

        paired = write_identity(project.root / "identity", TOKEN)
        gateway.paired = dict([paired])
        ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
        (step,) = json.loads(ran.stdout)["steps"]
        assert step["error_kind"] == "parse_error"
        assert step["raw_output"] == "I think the disk is full."  # kept whole, as for any agent

    openclaw_project(project, "ws://127.0.0.1:9")
    ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
    (step,) = json.loads(ran.stdout)["steps"]
    assert step["error"].startswith("the OpenClaw gateway at ws://127.0.0.1:9 could not be reached:")


def test_grounding_or_a_critic_on_an_openclaw_step_and_a_missing_url_are_load_errors(project: ProjectDir) -> None:
    openclaw_project(project, "ws://127.0.0.1:9", grounding={"agent": "judge", "enforce": True})
    checked = run_cli("validate", ".", cwd=project.root)
    assert checked.returncode == 2
    assert "steps[0].grounding.enforce: executor 'openclaw' records no trace" in checked.stdout + checked.stderr

    project.settings({"database": {"url": "sqlite:///./runs.db"}})
    project.pipeline(
        "disk",
        {"name": "disk", "steps": [{"name": "diagnose", "executor": "openclaw", "executor_config": {"agent": "ops"}}]},
    )
    checked = run_cli("validate", ".", cwd=project.root)
    said = checked.stdout + checked.stderr
    assert checked.returncode == 2
    assert "steps[0].executor: executor 'openclaw' needs `executors.openclaw.url` in the settings" in said


def test_an_openclaw_verifier_that_answers_prose_keeps_its_raw_answer(project: ProjectDir) -> None:
    paired = write_identity(project.root / "identity", TOKEN)
    with running(FakeOpenClaw({"reviewer": "Looks fine to me."}, TOKEN, dict([paired]))) as gateway:
        openclaw_project(project, gateway.url)
        project.scripted_agent("ops", {"answer": json.loads(ANSWER)})
        verifier = {"mode": "independent", "executor": "openclaw", "executor_config": {"agent": "reviewer"}}
        verifier["trigger"] = {"always": True}
        step = {"name": "diagnose", "executor": "gateway", "executor_config": {"agent": "ops"}, "verifier": verifier}
        project.pipeline("disk", {"name": "disk", "steps": [step]})
        ran = run_cli("run", "disk", "--payload", "alert.json", "--json", cwd=project.root)
    (record,) = json.loads(ran.stdout)["steps"]
    assert record["status"] == "completed" and record["combined_trust"] == 0.82  # S kept
    verdict = record["trust_report"]["verifier"]
    assert verdict["error"] == "verifier: no JSON object found in the agent's answer: 'Looks fine to me.'"
    assert verdict["raw_output"] == "Looks fine to me."
    assert (verdict["model"], verdict["provider"]) == ("claude-sonnet-4-5", "anthropic")
