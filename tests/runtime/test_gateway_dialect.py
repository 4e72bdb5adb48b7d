"""SYSTEM.md §13.2 both ways: our client against an existing-style gateway, an existing-style client
against our gateway, and the same pipeline giving the same run record on every runtime."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from tests.conftest import tool_server_config
from tests.fixtures.dialect_gateway import ExistingGateway, existing_client_turn, running
from tests.fixtures.served_app import ServedApp
from tests.fixtures.threaded import websocket_server
from vectorstep.engine.services import Engine
from vectorstep.errors import AgentRuntimeError
from vectorstep.grounding.transcript import build_transcript
from vectorstep.intake.generic import manual_context
from vectorstep.runtime.protocol import AgentRequest
from vectorstep.runtime.remote_client import RemoteRuntime, rpc_url
from vectorstep.runtime.remote_server import create_gateway_app
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.testing import FakeClock, ProjectDir, answer

TOKEN = "dialect-token-0123456789"
CLAIMS = [
    {"claim": "the first wait took 0.05 s", "supported": True, "evidence": "slept 0.05"},
    {"claim": "the second wait took 0.6 s", "supported": True, "evidence": "slept 0.6"},
]


def build(root: Path) -> ProjectDir:
    project = ProjectDir(root)
    waits = [{"name": "tools__slow", "args": {"seconds": 0.05}}, {"name": "tools__slow", "args": {"seconds": 0.6}}]
    project.scripted_agent(
        "investigator", {"tool_calls": waits}, answer(0.9, "the waits took 0.05 s and 0.6 s"), tools=["tools"]
    )
    project.scripted_agent("judge", answer(1.0, "both supported", reasoning={"claims": CLAIMS}))
    project.scripted_agent(
        "reader",
        {"tool_calls": [{"name": "tools__long_text", "args": {"chars": 5000}}]},
        answer(0.8, "read it"),
        tools=["tools"],
    )
    project.scripted_agent(
        "sleeper",
        {"tool_calls": [{"name": "tools__slow", "args": {"seconds": 20}}]},
        answer(0.5, "woke"),
        tools=["tools"],
    )
    project.agent("broken", {"name": "broken", "model": "openai/gpt-4o-mini"})  # its provider does not answer
    step = {
        "name": "investigate",
        "executor": "gateway",
        "executor_config": {"agent": "investigator"},
        "prompt_template": "How long did the waits take?",
        "grounding": {"agent": "judge", "enforce": True},
    }
    project.pipeline("p", {"name": "p", "steps": [step]})
    project.settings(
        {
            "mcp_servers": tool_server_config(),
            "database": {"url": f"sqlite:///{root / 'db.sqlite'}"},
            "providers": {"openai": {"api_key": "sk-offline", "base_url": "http://127.0.0.1:9/v1"}},
            "limits": {"llm_retry_attempts": 0},
        }
    )
    return project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ProjectDir:
    return build(tmp_path_factory.mktemp("dialect") / "project")


@pytest.fixture(scope="module")
def existing(project: ProjectDir) -> Iterator[ExistingGateway]:
    with running(ExistingGateway(load_settings(project.config), TOKEN)) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def ours(project: ProjectDir) -> Iterator[ServedApp]:
    settings = load_settings(project.config)
    gateway = settings.spec.gateway.model_copy(update={"rest_auth": "none"})
    settings = dataclasses.replace(settings, spec=settings.spec.model_copy(update={"gateway": gateway}))
    served = ServedApp(create_gateway_app(settings, TOKEN))
    yield served
    served.stop()


def request(agent: str = "investigator", **fields: Any) -> AgentRequest:
    return AgentRequest(agent=agent, message="How long?", session_key=f"agent:{agent}:run1:s", **fields)


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """What §13.2 lets every runtime agree on: per step the output, trust report and tokens; call ids
    renamed by order of first appearance (an existing gateway sends none) and timings left out."""
    names: dict[str, str] = {}

    def same(value: Any) -> Any:
        if isinstance(value, dict):
            found = {}
            for key, item in value.items():
                if key in ("duration_ms", "started_at", "finished_at", "ts"):
                    continue
                renamed = names.setdefault(item, f"call-{len(names) + 1}") if key == "call_id" else item
                found[key] = same(renamed)
            return found
        if isinstance(value, list):
            return [same(item) for item in value]
        return value

    steps = [
        {key: step[key] for key in ("name", "status", "output", "trust_report", "combined_trust")}
        | {"tokens": (step["input_tokens"], step["output_tokens"])}
        for step in record["steps"]
    ]
    return same(
        {"status": record["status"], "tokens": (record["input_tokens"], record["output_tokens"]), "steps": steps}
    )


async def _record(project: ProjectDir, gateway: dict[str, Any] | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"mcp_servers": tool_server_config()}
    if gateway is not None:
        settings["gateway"] = gateway
    project.settings(settings)
    loaded = load_project(load_settings(project.config))
    async with Engine(loaded, clock=FakeClock()) as engine:
        record = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
    return record.as_json()


async def test_a_pipeline_gives_the_same_record_embedded_on_our_gateway_and_on_an_existing_one(
    project: ProjectDir, existing: ExistingGateway, ours: ServedApp
) -> None:
    embedded = await _record(project, None)
    on_ours = await _record(project, {"mode": "remote", "url": ours.url, "token": TOKEN})
    on_existing = await _record(project, {"mode": "remote", "url": existing.url, "token": TOKEN})
    assert embedded["status"] == "completed" and embedded["steps"][0]["combined_trust"] == 0.9
    assert embedded["input_tokens"] > 0
    assert comparable(on_ours) == comparable(embedded)
    assert comparable(on_existing) == comparable(embedded)


async def test_events_without_ids_are_numbered_stamped_and_paired_and_a_guess_says_so(
    existing: ExistingGateway,
) -> None:
    streamed: list[str] = []
    reply = await RemoteRuntime(existing.url, TOKEN).run(request(), lambda event: streamed.append(event.type))
    assert [event.seq for event in reply.trace] == list(range(1, len(reply.trace) + 1))
    assert all(event.ts for event in reply.trace) and streamed == [event.type for event in reply.trace]
    calls = [event for event in reply.trace if event.type == "tool_call"]
    results = [event for event in reply.trace if event.type == "tool_result"]
    assert [call.args for call in calls] == [{"seconds": 0.05}, {"seconds": 0.6}]  # read from `input`
    assert [result.call_id for result in results] == [call.call_id for call in calls]
    assert results[0].content == "slept 0.05" and results[1].content == "slept 0.6"
    assert results[0].note is not None and "2 calls of tools__slow were waiting" in results[0].note
    assert results[1].note is None  # one call was left: no guess
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0  # from `input_tokens`/`output_tokens`
    assert reply.model == "scripted" and reply.full_tool_results == {}


async def test_results_an_existing_gateway_capped_are_marked_for_the_judge(existing: ExistingGateway) -> None:
    reply = await RemoteRuntime(existing.url, TOKEN).run(request("reader"))
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.capped_by == "gateway" and result.was_capped and result.content.endswith("… [truncated]")
    transcript = build_transcript(reply.trace, reply.full_tool_results, {"summary": "read it"}, max_chars=1500)
    assert "(ok, cut by the gateway)" in transcript.text and transcript.cut_by_runtime == 1


@pytest.mark.parametrize(
    ("token", "agent", "session_key", "says"),
    [
        ("wrong-token-wrong-token", "investigator", None, "the gateway refused the connection: invalid operator token"),
        (TOKEN, "nobody", None, "unknown agent: nobody"),
        (TOKEN, "investigator", "agent:other:1", "sessionKey must start with agent:investigator:"),
        (
            TOKEN,
            "broken",
            None,
            "model 'openai/gpt-4o-mini' failed: Connection error (Cannot connect to host 127.0.0.1:9",
        ),
    ],
    ids=["token", "agent", "session-key", "run-error"],
)
async def test_errors_of_an_existing_gateway_are_messages_without_codes(
    existing: ExistingGateway, token: str, agent: str, session_key: str | None, says: str
) -> None:
    asked = request(agent) if session_key is None else AgentRequest(agent=agent, message="x", session_key=session_key)
    with pytest.raises(AgentRuntimeError) as raised:
        await RemoteRuntime(existing.url, token).run(asked)
    assert says in raised.value.message


async def test_leaving_a_turn_cancels_it_on_an_existing_gateway(existing: ExistingGateway) -> None:
    before = existing.cancelled
    turn = asyncio.ensure_future(RemoteRuntime(existing.url, TOKEN).run(request("sleeper")))
    for _ in range(200):
        if existing.turns_in_flight:
            break
        await asyncio.sleep(0.02)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    for _ in range(200):
        if existing.cancelled > before and not existing.turns_in_flight:
            break
        await asyncio.sleep(0.02)
    assert existing.cancelled == before + 1 and existing.turns_in_flight == 0


async def test_an_existing_service_reads_our_gateway(ours: ServedApp) -> None:
    url = rpc_url(ours.url)
    seen = await existing_client_turn(url, TOKEN, "investigator", "How long?")
    assert seen["challenge"] == "challenge" and seen["protocol"] == 3
    assert seen["tool_inputs"] == [{"seconds": 0.05}, {"seconds": 0.6}] == seen["final_trace_inputs"]
    assert seen["trace"][0] == "llm_call" and seen["tokens_per_event"] and all(seen["tokens_per_event"])
    assert seen["usage"][0] > 0 and seen["usage"][1] > 0 and seen["model"] == "scripted"
    assert json.loads(seen["text"])["summary"] == "the waits took 0.05 s and 0.6 s"
    assert (await existing_client_turn(url, "wrong-token-wrong-token", "judge", "x"))[
        "refused"
    ] == "invalid operator token"
    assert "no agent 'nobody'" in (await existing_client_turn(url, TOKEN, "nobody", "x"))["error"]
    assert (
        "failed: Connection error (Cannot connect to host 127.0.0.1:9"
        in (await existing_client_turn(url, TOKEN, "broken", "x"))["error"]
    )


async def test_our_gateway_serves_the_rest_routes_existing_services_read(ours: ServedApp, project: ProjectDir) -> None:
    async with httpx.AsyncClient(base_url=ours.url) as http:  # rest_auth: none, as existing services send no token
        listed = (await http.get("/agents")).json()["agents"]
        assert [agent["name"] for agent in listed] == ["broken", "investigator", "judge", "reader", "sleeper"]
        investigator = listed[1]
        assert set(investigator) >= {"name", "model", "model_fallbacks", "tools", "version"}
        shown = (await http.get("/agents/investigator")).json()
        assert shown["name"] == "investigator" and shown["version"] == investigator["version"]
        assert shown["config"]["model"] == "scripted" and "model: scripted" in shown["agent_yaml"]
        assert shown["soul_md"] == (await http.get("/agents/investigator/soul")).json()["content"]
        assert (await http.get("/agents/investigator/agent")).json()["content"] == shown["agent_yaml"]
        assert (await http.get("/agents/nobody")).status_code == 404
        tools = (await http.get("/mcp/tools")).json()
        echo = next(tool for tool in tools["tools"] if tool["name"] == "echo")
        assert echo["registeredName"] == "tools__echo" and echo["inputSchema"]["properties"]["text"]
        servers = (await http.get("/mcp/servers")).json()
        assert servers["tools"]["running"] is True and servers["tools"]["restart_count"] == 0
    guarded = ServedApp(create_gateway_app(load_settings(project.config), TOKEN))  # rest_auth: token, the default
    try:
        async with httpx.AsyncClient(base_url=guarded.url) as http:
            assert (await http.get("/mcp/tools")).status_code == 401
            assert (await http.get("/agents/judge", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
    finally:
        guarded.stop()


@contextmanager
def misbehaving(*frames: Any, hello: dict[str, Any] | None = None) -> Iterator[str]:
    """A gateway that answers `connect` with `hello`, then sends `frames` (text as is) to any request."""

    async def session(socket: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):  # the client leaves once it has seen enough
            await socket.send(json.dumps({"type": "event", "event": "challenge", "payload": {"nonce": "n"}}))
            connect_id = json.loads(await socket.recv())["id"]
            ok = {"type": "res", "id": connect_id, "ok": True, "payload": {"protocol": 3}}
            await socket.send(json.dumps(hello or ok))
            agent_id = json.loads(await socket.recv())["id"]
            for frame in frames:
                await socket.send(frame if isinstance(frame, str) else json.dumps({**frame, "id": agent_id}))
            await socket.wait_closed()

    with websocket_server(session) as url:
        yield url


@pytest.mark.parametrize(
    ("frames", "hello", "says"),
    [
        (["not json at all"], None, "broke the protocol: it sent a frame that is not JSON: 'not json at all'"),
        (
            [{"type": "stream", "payload": {}}],
            None,
            'broke the protocol: it sent a frame of unknown type: {"type": "stream"',
        ),
        (
            [{"type": "res", "ok": True, "payload": {"status": "trace_event", "event": [1, 2]}}],
            None,
            "a trace event must be an object",
        ),
        (
            [{"type": "res", "ok": True, "payload": {"status": "half-done"}}],
            None,
            "it answered with status 'half-done'",
        ),
        (
            [],
            {"type": "res", "id": "c1", "ok": True, "payload": {"protocol": 2}},
            "speaks protocol 2; VectorStep speaks 3",
        ),
    ],
    ids=["not-json", "unknown-type", "bad-event", "unknown-status", "protocol-2"],
)
async def test_a_gateway_that_breaks_the_protocol_fails_the_turn_naming_the_frame(
    frames: list[Any], hello: dict[str, Any] | None, says: str
) -> None:
    with misbehaving(*frames, hello=hello) as url, pytest.raises(AgentRuntimeError) as raised:
        await RemoteRuntime(url, TOKEN).run(request(timeout_seconds=5))
    assert raised.value.code == "protocol_error" and says in raised.value.message


async def test_a_gateway_s_odd_values_are_typed_on_arrival_never_passed_on() -> None:
    odd = {"type": "tool_result", "name": 7, "content": {"rows": [1, 2]}, "is_error": "yes", "duration_ms": "soon"}
    call = {"type": "tool_call", "name": 7, "input": "not json", "seq": True, "ts": 12}
    result = {"payloads": [{"text": '{"confidence": 0.5, "summary": "ok", "next_step_context": ""}'}]}
    frames = [
        {"type": "res", "ok": True, "payload": {"status": "trace_event", "event": call}},
        {"type": "res", "ok": True, "payload": {"status": "trace_event", "event": odd}},
        {
            "type": "res",
            "ok": True,
            "payload": {
                "status": "ok",
                "result": {**result, "meta": {"agentMeta": {"usage": {"input_tokens": "many"}}}},
            },
        },
    ]
    with misbehaving(*frames) as url:
        reply = await RemoteRuntime(url, TOKEN).run(request(timeout_seconds=5))
    tool_call, tool_result = reply.trace
    assert (tool_call.name, tool_call.args, tool_call.seq) == ("7", {"input": "not json"}, 1)
    assert isinstance(tool_call.ts, str) and tool_result.call_id == tool_call.call_id
    assert (tool_result.content, tool_result.is_error, tool_result.duration_ms) == ('{"rows": [1, 2]}', None, None)
    assert reply.usage.input_tokens == 0  # "many" is no count
    transcript = build_transcript(reply.trace, reply.full_tool_results, {"summary": "ok"}, max_chars=1500)
    assert '[2] result of [1] 7 (ok): {"rows": [1, 2]}' in transcript.text


@pytest.mark.parametrize(
    ("usage", "spent"),
    [
        ({"input": "many", "output": 1e400}, (0, 0)),
        ({"input": 120, "output": 30}, (120, 30)),
        ({"input_tokens": 7, "output_tokens": "3"}, (7, 0)),
    ],
    ids=["odd", "ours", "existing"],
)
async def test_a_failed_turn_keeps_the_tokens_it_spent_and_reads_odd_counts_as_none(
    usage: dict[str, Any], spent: tuple[int, int]
) -> None:
    failed = {"type": "res", "ok": False, "error": {"message": "boom", "details": {"usage": usage}}}
    with misbehaving(failed) as url, pytest.raises(AgentRuntimeError) as raised:
        await RemoteRuntime(url, TOKEN).run(request(timeout_seconds=5))
    assert raised.value.message == "boom"
    assert (raised.value.details.input_tokens, raised.value.details.output_tokens) == spent
