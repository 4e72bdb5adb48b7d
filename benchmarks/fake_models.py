"""An instant model server for the model-path benchmark: OpenAI chat completions and Anthropic messages.

It answers each agent of `bench_model_path.py` from a marker in the agent's instructions
(`[bench:planner]`), so the service goes through the real provider path — the OpenAI or Anthropic
SDK, HTTP on 127.0.0.1, the real agent loop with a real tool call — while the model itself costs
nothing. `POST /v1/chat/completions` speaks OpenAI's shape, `POST /v1/messages` Anthropic's.
`GET /stats` says how many completions it served and how long it spent on them; with
`--throttle-every N`, every Nth request is answered `429` with `Retry-After: 0`, so the client's
back-off path runs too. With `--latency-ms M`, each answer takes M milliseconds, as a real model's
would (it waits without using the CPU, so many can be under way at once).

    python benchmarks/fake_openai.py --port 8001 [--throttle-every 50] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

MARKER = re.compile(r"\[bench:(\w+)\]")
ANSWERS: dict[str, dict[str, Any]] = {
    "triage": {"confidence": 0.9, "summary": "checkout is failing", "next_step_context": ""},
    "investigator": {"confidence": 0.9, "summary": "deploy 8f3a91c raised 5xx to 4.2%", "next_step_context": ""},
    "planner": {
        "confidence": 0.9,
        "summary": "5xx at 4.2% since deploy 8f3a91c: roll back 8f3a91c",
        "next_step_context": "",
        "action": "rollback",
    },
    "reviewer": {"confidence": 0.9, "summary": "a rollback of 8f3a91c is right", "next_step_context": ""},
    "judge": {
        "confidence": 1.0,
        "summary": "both claims are supported",
        "next_step_context": "",
        "reasoning": {
            "claims": [
                {"claim": "5xx at 4.2%", "supported": True, "evidence": "checkout 5xx ratio 0.042"},
                {"claim": "since deploy 8f3a91c", "supported": True, "evidence": "since deploy 8f3a91c"},
            ]
        },
    },
}


class Stats:
    def __init__(self, throttle_every: int, latency_ms: float = 0) -> None:
        self.throttle_every = throttle_every
        self.latency_seconds = latency_ms / 1000
        self.requests = 0
        self.completions = 0
        self.throttled = 0
        self.busy_seconds = 0.0


def agent_of(system: str) -> str:
    found = MARKER.search(system)
    return found.group(1) if found else "triage"


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The completion for one request: the planner calls its tool first, everyone else answers."""
    messages = body.get("messages", [])
    agent = agent_of(" ".join(str(message.get("content")) for message in messages if message.get("role") == "system"))
    if agent == "planner" and not any(message.get("role") == "tool" for message in messages):
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "obs__error_rate", "arguments": json.dumps({"service": "checkout"})},
                }
            ],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": json.dumps(ANSWERS[agent])}
        finish = "stop"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "bench-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340},
    }


def anthropic_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The same answers in Anthropic's messages shape (a tool call is a `tool_use` block)."""
    system = body.get("system", "")
    if isinstance(system, list):
        system = " ".join(str(block.get("text", "")) for block in system)
    agent = agent_of(str(system))
    blocks = [block for message in body.get("messages", []) for block in _blocks(message.get("content"))]
    content: list[dict[str, Any]]
    if agent == "planner" and not any(block.get("type") == "tool_result" for block in blocks):
        content = [{"type": "tool_use", "id": "toolu_1", "name": "obs__error_rate", "input": {"service": "checkout"}}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": json.dumps(ANSWERS[agent])}]
        stop = "end_turn"
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "bench-model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 300, "output_tokens": 40},
    }


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


RATE_LIMITED = {
    "openai": {"error": {"message": "slow down", "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}},
    "anthropic": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
}


def app(stats: Stats) -> Starlette:
    def endpoint(shape: str, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[..., Any]:
        async def serve(request: Request) -> Response:
            began = time.perf_counter()
            stats.requests += 1
            if stats.throttle_every and stats.requests % stats.throttle_every == 0:
                stats.throttled += 1
                return JSONResponse(RATE_LIMITED[shape], status_code=429, headers={"Retry-After": "0"})
            answered = answer(await request.json())
            if stats.latency_seconds:
                await asyncio.sleep(stats.latency_seconds)
            stats.completions += 1
            stats.busy_seconds += time.perf_counter() - began
            return JSONResponse(answered)

        return serve

    async def report(_: Request) -> Response:
        return JSONResponse(
            {
                "requests": stats.requests,
                "completions": stats.completions,
                "throttled": stats.throttled,
                "busy_seconds": stats.busy_seconds,
            }
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", endpoint("openai", reply), methods=["POST"]),
            Route("/v1/messages", endpoint("anthropic", anthropic_reply), methods=["POST"]),
            Route("/stats", report),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--throttle-every", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0)
    args = parser.parse_args()
    stats = Stats(args.throttle_every, args.latency_ms)
    uvicorn.run(app(stats), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
