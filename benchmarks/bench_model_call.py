"""CPU per model call through pydantic-ai and the provider SDK, per HTTP transport.

One process asks `fake_models.py` (an instant model server on 127.0.0.1) the triage agent's
question over and over — one at a time, then eight at once — and reports the CPU milliseconds per
call: the cost of the SDK's request building, the transport and the answer's parsing, which is
what a model call costs VectorStep besides the model's own time. Measured for the SDKs' default
httpx2 transport and for their aiohttp transport, which the service uses (`runtime/models.py`).

    python benchmarks/bench_model_call.py [--calls 600]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from anthropic import DefaultAioHttpClient as AnthropicAioHttp
from openai import DefaultAioHttpClient as OpenAIAioHttp
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from bench_model_path import free_port

HERE = Path(__file__).parent
MESSAGES: list[ModelMessage] = [
    ModelRequest(
        parts=[SystemPromptPart("[bench:triage] You triage alerts."), UserPromptPart("checkout 5xx above 4% " * 20)]
    )
]


def models(url: str) -> dict[str, tuple[Model, Any]]:
    """Each SDK with each transport, and the HTTP client to close afterwards."""
    openai_aiohttp, anthropic_aiohttp = OpenAIAioHttp(), AnthropicAioHttp()
    return {
        "openai, httpx2 (the SDK's default)": (
            OpenAIChatModel("bench", provider=OpenAIProvider(base_url=f"{url}/v1", api_key="sk-bench")),
            None,
        ),
        "openai, aiohttp (ours)": (
            OpenAIChatModel(
                "bench", provider=OpenAIProvider(base_url=f"{url}/v1", api_key="sk-bench", http_client=openai_aiohttp)
            ),
            openai_aiohttp,
        ),
        "anthropic, httpx2 (the SDK's default)": (
            AnthropicModel("bench", provider=AnthropicProvider(base_url=url, api_key="sk-bench")),
            None,
        ),
        "anthropic, aiohttp (ours)": (
            AnthropicModel(
                "bench", provider=AnthropicProvider(base_url=url, api_key="sk-bench", http_client=anthropic_aiohttp)
            ),
            anthropic_aiohttp,
        ),
    }


async def cpu_ms_per_call(model: Model, calls: int, at_once: int) -> float:
    settings = ModelSettings(max_retries=0, timeout=30)
    for _ in range(20):  # connections open, caches filled
        await model_request(model, MESSAGES, model_settings=settings)
    slots = asyncio.Semaphore(at_once)

    async def one() -> None:
        async with slots:
            await model_request(model, MESSAGES, model_settings=settings)

    began = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return round(1000 * (time.process_time() - began) / calls, 3)


async def measure(url: str, calls: int) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for name, (model, client) in models(url).items():
        found[name] = {f"{at_once}_at_once": await cpu_ms_per_call(model, calls, at_once) for at_once in (1, 8)}
        if client is not None:
            await client.aclose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_models.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                httpx.get(f"{url}/stats", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        per_call = asyncio.run(measure(url, args.calls))
    finally:
        server.terminate()
        server.wait(30)
    result = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {sys.platform}",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "calls": args.calls,
        "cpu_ms_per_call": per_call,
    }
    (HERE / "results" / "model_call.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
