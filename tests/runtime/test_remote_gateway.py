"""The gateway as a service (WebSocket /rpc) and the remote runtime that talks to it, end to end on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import run_cli, tool_server_config
from tests.fixtures.served_app import ServedApp
from vectorstep.domain.status import RunStatus
from vectorstep.engine.services import Engine
from vectorstep.errors import AgentRuntimeError
from vectorstep.intake.generic import manual_context
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.protocol import AgentRequest
from vectorstep.runtime.remote_client import RemoteRuntime, rpc_url
from vectorstep.runtime.remote_server import create_gateway_app
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.testing import FakeClock, ProjectDir, answer

TOKEN = "gateway-token-0123456789"


def build(root: Path) -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent(
        "investigator",
        {"tool_calls": [{"name": "tools__echo", "args": {"text": "5xx ratio 0.042 since deploy 8f3a91c"}}]},
        answer(0.9, "5xx at 4.2% since deploy 8f3a91c", next_step_context="roll back 8f3a91c"),
        tools=["tools"],
    )
    project.scripted_agent(
        "judge",
        answer(
            1.0,
            "supported",
            reasoning={"claims": [{"claim": "5xx at 4.2%", "supported": True, "evidence": "5xx ratio 0.042"}]},
        ),
    )
    project.scripted_agent(
        "sleeper",
        {"tool_calls": [{"name": "tools__slow", "args": {"seconds": 20}}]},
        answer(0.5, "woke"),
        tools=["tools"],
    )
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {
                    "name": "investigate",
                    "executor": "gateway",
                    "executor_config": {"agent": "investigator"},
                    "prompt_template": "Why is checkout failing?",
                    "grounding": {"agent": "judge", "enforce": True},
                }
            ],
        },
    )
    project.settings({"mcp_servers": tool_server_config(), "database": {"url": f"sqlite:///{root / 'db.sqlite'}"}})
    return project


def serve_gateway(config: Path) -> ServedApp:
    return ServedApp(create_gateway_app(load_settings(config), TOKEN))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedApp, ProjectDir]]:
    project = build(tmp_path_factory.mktemp("gateway") / "project")
    served = serve_gateway(project.config)
    yield served, project
    served.stop()


def request(agent: str = "investigator", **fields: Any) -> AgentRequest:
    return AgentRequest(agent=agent, message="Why is checkout failing?", session_key=f"agent:{agent}:run1:s", **fields)


def comparable(events: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in event.as_dict().items() if k not in ("ts", "duration_ms")} for event in events]


async def test_a_remote_turn_answers_like_an_embedded_one(gateway: tuple[ServedApp, ProjectDir]) -> None:
    served, project = gateway
    streamed: list[str] = []
    remote = RemoteRuntime(served.url, TOKEN)
    far = await remote.run(request(), lambda event: streamed.append(event.type))
    settings = load_settings(project.config)
    embedded = EmbeddedRuntime(load_project(settings).agents, settings.spec, clock=FakeClock())
    try:
        near = await embedded.run(request())
    finally:
        await embedded.aclose()
    assert far.text == near.text
    assert comparable(far.trace) == comparable(near.trace)
    assert streamed == [event.type for event in far.trace]  # the trace arrived as it happened
    assert (far.model, far.provider, far.agent_version, far.stop_reason) == (
        near.model,
        near.provider,
        near.agent_version,
        near.stop_reason,
    )
    assert far.usage == near.usage
    assert far.full_tool_results == near.full_tool_results


@pytest.mark.parametrize(
    ("token", "fields", "code", "message"),
    [
        pytest.param(
            "wrong-token-wrong-token", {}, "unauthorized", "refused the connection: invalid operator token", id="token"
        ),
        pytest.param(TOKEN, {"agent": "nobody"}, "unknown_agent", "no agent 'nobody' on this gateway", id="agent"),
    ],
)
async def test_refusals_are_typed_errors(
    gateway: tuple[ServedApp, ProjectDir], token: str, fields: dict[str, Any], code: str, message: str
) -> None:
    served, _ = gateway
    with pytest.raises(AgentRuntimeError) as raised:
        await RemoteRuntime(served.url, token).run(request(**fields))
    assert raised.value.code == code and message in raised.value.message


async def test_the_frames_of_a_turn(gateway: tuple[ServedApp, ProjectDir]) -> None:
    served, _ = gateway
    async with connect(rpc_url(served.url)) as ws:
        challenge = json.loads(await ws.recv())
        assert challenge["type"] == "event" and challenge["event"] == "challenge"  # §13.2's name
        assert len(challenge["payload"]["nonce"]) == 32
        await ws.send(json.dumps({"type": "req", "id": "1", "method": "connect", "params": {"auth": {"token": TOKEN}}}))
        hello = json.loads(await ws.recv())
        assert hello == {"type": "res", "id": "1", "ok": True, "payload": hello["payload"]}
        assert hello["payload"]["protocol"] == 3
        bad = {"agentId": "investigator", "sessionKey": "agent:other:1", "message": "hi"}
        await ws.send(json.dumps({"type": "req", "id": "2", "method": "agent", "params": bad}))
        refused = json.loads(await ws.recv())
        assert refused["ok"] is False and refused["error"]["code"] == "bad_session_key"
        good = {"agentId": "investigator", "sessionKey": "agent:investigator:1", "message": "hi"}
        await ws.send(json.dumps({"type": "req", "id": "3", "method": "agent", "params": good}))
        frames = []
        while not frames or frames[-1]["payload"].get("status") != "ok":
            frames.append(json.loads(await ws.recv()))
    assert {(frame["type"], frame["id"], frame["ok"]) for frame in frames} == {("res", "3", True)}
    accepted, *events, final = frames
    assert accepted["payload"]["status"] == "accepted"
    assert {frame["payload"]["status"] for frame in events} == {"trace_event"}
    shaped = [frame["payload"]["event"] for frame in events]
    assert [event["seq"] for event in shaped] == sorted(event["seq"] for event in shaped)
    (call,) = [event for event in shaped if event["type"] == "tool_call"]
    # Both dialects side by side: the existing gateways' `input`, and our `args` and `call_id`.
    assert call["input"] == call["args"] == {"text": "5xx ratio 0.042 since deploy 8f3a91c"} and call["call_id"]
    (model_call,) = [event for event in shaped if event["type"] == "llm_call" and "usage" in event][:1]
    assert model_call["usage"] == {
        "input_tokens": model_call["input_tokens"],
        "output_tokens": model_call["output_tokens"],
    }
    result = final["payload"]["result"]
    assert json.loads(result["payloads"][0]["text"])["summary"] == "5xx at 4.2% since deploy 8f3a91c"
    meta = result["meta"]
    assert meta["agentMeta"]["provider"] == "scripted" and len(meta["agentMeta"]["agentVersion"]) == 12
    usage = meta["agentMeta"]["usage"]
    assert usage["input_tokens"] == usage["input"] > 0 and usage["output_tokens"] == usage["output"] > 0
    assert meta["durationMs"] > 0 and meta["stopReason"] == "stop" and meta["aborted"] is False
    assert [event["type"] for event in result["trace"]] == [event["type"] for event in shaped]


async def test_a_client_that_disconnects_cancels_its_turn(gateway: tuple[ServedApp, ProjectDir]) -> None:
    served, _ = gateway
    async with httpx.AsyncClient(base_url=served.url) as http:
        async with connect(rpc_url(served.url)) as ws:
            await ws.recv()
            await ws.send(
                json.dumps({"type": "req", "id": "1", "method": "connect", "params": {"auth": {"token": TOKEN}}})
            )
            await ws.recv()
            params = {"agentId": "sleeper", "sessionKey": "agent:sleeper:1", "message": "sleep"}
            await ws.send(json.dumps({"type": "req", "id": "2", "method": "agent", "params": params}))
            assert json.loads(await ws.recv())["payload"]["status"] == "accepted"
            while (await http.get("/health")).json()["turns_in_flight"] != 1:
                await asyncio.sleep(0.02)
        deadline = time.monotonic() + 5  # the tool sleeps 20 s: only a cancellation ends the turn this soon
        while (await http.get("/health")).json()["turns_in_flight"] and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert (await http.get("/health")).json()["turns_in_flight"] == 0


async def test_health_is_open_and_agents_need_the_token(gateway: tuple[ServedApp, ProjectDir]) -> None:
    served, _ = gateway
    async with httpx.AsyncClient(base_url=served.url) as http:
        health = (await http.get("/health")).json()
        assert health["status"] == "ok" and health["agents"] == 3 and health["mode"] == "embedded"
        assert (await http.get("/agents")).status_code == 401
        listed = (await http.get("/agents", headers={"Authorization": f"Bearer {TOKEN}"})).json()["agents"]
    assert [agent["name"] for agent in listed] == ["investigator", "judge", "sleeper"]
    assert listed[0]["tools"] == ["tools"] and listed[0]["model"] == "scripted"
    assert listed[0]["model_fallbacks"] == [] and len(listed[0]["version"]) == 12


async def test_a_pipeline_records_the_same_run_in_embedded_and_remote_mode(
    gateway: tuple[ServedApp, ProjectDir], tmp_path: Path
) -> None:
    served, project = gateway
    records = []
    for mode in ("embedded", "remote"):
        if mode == "remote":
            project.settings(
                {"gateway": {"mode": "remote", "url": served.url, "token": TOKEN}, "mcp_servers": tool_server_config()}
            )
        loaded = load_project(load_settings(project.config))
        async with Engine(loaded, clock=FakeClock()) as engine:
            record = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
        assert record.status is RunStatus.COMPLETED
        records.append(_without_timings(record.as_json()))
    assert records[0] == records[1]


def _without_timings(value: Any) -> Any:
    timing = {"run_id", "started_at", "finished_at", "duration_ms", "ts"}
    if isinstance(value, dict):
        return {key: _without_timings(item) for key, item in value.items() if key not in timing}
    if isinstance(value, list):
        return [_without_timings(item) for item in value]
    return value


@pytest.mark.parametrize("token", [None, " " * 20, "\t" + TOKEN])
def test_the_gateway_will_not_start_without_a_token(tmp_path: Path, token: str | None) -> None:
    project = build(tmp_path / "project")
    env = {"VECTORSTEP_GATEWAY_TOKEN": token} if token is not None else None
    result = run_cli("gateway", "serve", "--config", str(project.config), cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert "the gateway needs a token" in result.stderr and "VECTORSTEP_GATEWAY_TOKEN" in result.stderr


@pytest.mark.parametrize(
    ("frame", "code", "says"),
    [
        (b"\x00\x01binary", 1003, "a binary frame; the protocol is JSON text"),
        ("[" * 5000 + "]" * 5000, 1007, "deeper than 64"),
        ('{"type": "req", "id": "1", "method": "connect", "params": {"n": NaN}}', 1007, "NaN is not a JSON number"),
    ],
    ids=["binary", "deep", "nan"],
)
async def test_a_malformed_frame_closes_the_connection_with_a_protocol_code(
    gateway: tuple[ServedApp, ProjectDir], caplog: pytest.LogCaptureFixture, frame: str | bytes, code: int, says: str
) -> None:
    served, _ = gateway
    for connected in (False, True):  # before the handshake, and after it
        async with connect(rpc_url(served.url)) as ws:
            await ws.recv()
            if connected:
                hello = {"type": "req", "id": "0", "method": "connect", "params": {"auth": {"token": TOKEN}}}
                await ws.send(json.dumps(hello))
                await ws.recv()
            await ws.send(frame)
            refused = json.loads(await ws.recv())
            assert refused["ok"] is False and refused["error"]["code"] == "invalid_frame"
            assert says in refused["error"]["message"]
            await ws.wait_closed()
            assert ws.close_code == code
    lines = [record for record in caplog.records if "closing a connection" in record.getMessage()]
    assert len(lines) == 2 and all(record.exc_info is None for record in lines)  # one line each, no traceback


async def test_the_api_description_needs_the_token(gateway: tuple[ServedApp, ProjectDir]) -> None:
    served, _ = gateway
    async with httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/openapi.json")).status_code == 401
        assert (await http.get("/openapi.json", headers={"Authorization": "Bearer"})).status_code == 401
        described = await http.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"})
        assert described.status_code == 200 and "/agents" in described.json()["paths"]
        assert (await http.get("/docs")).status_code == 404
