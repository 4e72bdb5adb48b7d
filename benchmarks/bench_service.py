"""The service under load: webhook intake, runs completed per second, webhook → terminal latency,
startup to healthy, memory, and page and /metrics latency with 100 000 runs stored.

A real `vectorstep serve` process (uvicorn, SQLite in WAL mode) and real HTTP clients. The
pipeline has 3 steps; the last calls a tool on a real MCP stdio server and has an independent
verifier, enforced grounding and a shell check. Agents and the judge are scripted (no LLM time),
so what is measured is VectorStep's own cost.

    python benchmarks/bench_service.py [--webhooks 200] [--clients 8] [--history 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from ruamel.yaml import YAML
from sqlalchemy import create_engine, insert

from vectorstep.store.tables import pipeline_run_events, pipeline_runs
from vectorstep.testing import ProjectDir, alertmanager_payload, answer

TOKEN = "bench-token-0123456789abcdef"
TOOL_SERVER = '''
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench")

@app.tool()
def error_rate(service: str) -> str:
    """The service's 5xx ratio."""
    return f"{service} 5xx ratio 0.042 since deploy 8f3a91c"

if __name__ == "__main__":
    app.run()
'''


def build_project(root: Path) -> ProjectDir:
    project = ProjectDir(root)
    (root / "tools.py").write_text(TOOL_SERVER, encoding="utf-8")
    project.scripted_agent("triage", answer(0.9, "checkout is failing"))
    project.scripted_agent("investigator", answer(0.9, "deploy 8f3a91c raised 5xx to 4.2%"))
    project.scripted_agent(
        "planner",
        {"tool_calls": [{"name": "obs__error_rate", "args": {"service": "checkout"}}]},
        answer(0.9, "5xx at 4.2% since deploy 8f3a91c: roll back 8f3a91c", action="rollback"),
        tools=["obs"],
    )
    project.scripted_agent("reviewer", answer(0.9, "a rollback of 8f3a91c is right"))
    project.scripted_agent(
        "judge",
        answer(
            1.0,
            "both claims are supported",
            reasoning={
                "claims": [
                    {"claim": "5xx at 4.2%", "supported": True, "evidence": "checkout 5xx ratio 0.042"},
                    {"claim": "since deploy 8f3a91c", "supported": True, "evidence": "since deploy 8f3a91c"},
                ]
            },
        ),
    )
    project.pipeline(
        "bench",
        {
            "name": "bench",
            "stage": "production",
            "trigger": {"match": {"labels.service": "checkout"}},
            "steps": [
                {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}},
                {"name": "investigate", "executor": "gateway", "executor_config": {"agent": "investigator"}},
                {
                    "name": "remediate",
                    "executor": "gateway",
                    "executor_config": {"agent": "planner"},
                    "prompt_template": "Plan a remediation: {{ steps.investigate.summary }}",
                    "confidence_threshold": 0.7,
                    "verifier": {"mode": "independent", "executor_config": {"agent": "reviewer"}},
                    "grounding": {"agent": "judge", "enforce": True},
                    "deterministic_checks": [{"name": "target_known", "type": "shell", "run": "true"}],
                },
            ],
        },
    )
    project.settings(
        {
            "database": {"url": "sqlite:///./bench.db"},
            "mcp_servers": {"obs": {"command": sys.executable, "args": [str(root / "tools.py")]}},
            "auth": {"tokens": [{"name": "bench", "token": TOKEN, "role": "admin", "team": "shop"}]},
            "concurrency": {"max_runs": 256},
        }
    )
    return project


class Server:
    def __init__(self, config: Path) -> None:
        self.config = config
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Seconds from spawning the process to the first healthy answer."""
        began = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vectorstep", "serve", "--config", str(self.config), "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return time.perf_counter() - began
            except httpx.TransportError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("the service exited")
            time.sleep(0.005)

    def rss_mib(self) -> tuple[float, float]:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        pairs = re.findall(r"^(VmRSS|VmHWM):\s+(\d+)", status, re.M)
        found = {key: int(value) / 1024 for key, value in pairs}
        return round(found["VmRSS"], 1), round(found["VmHWM"], 1)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=60)
            self.process = None


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


class Watcher:
    """Reads the service's SQLite file from this process: waiting for runs does not load the service."""

    def __init__(self, database: Path) -> None:
        self._connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)

    def ended(self, where: str, *params: object) -> list[tuple[str, datetime]]:
        query = f"SELECT status, finished_at FROM pipeline_runs WHERE finished_at IS NOT NULL AND {where}"
        rows = self._connection.execute(query, params).fetchall()
        return [(status, datetime.fromisoformat(finished).replace(tzinfo=UTC)) for status, finished in rows]

    def wait(self, count: int, where: str, *params: object, pause: float) -> list[tuple[str, datetime]]:
        while True:
            found = self.ended(where, *params)
            if len(found) >= count:
                return found
            time.sleep(pause)

    def close(self) -> None:
        self._connection.close()


def latency(server: Server, watcher: Watcher, count: int = 30) -> dict[str, float]:
    """From sending the webhook to the run's recorded end (same machine, same wall clock)."""
    samples = []
    with httpx.Client(base_url=server.url, headers=headers()) as client:
        for n in range(count + 5):
            payload = alertmanager_payload(fingerprint=f"latency-{n}-{uuid.uuid4().hex[:6]}")
            sent = datetime.now(UTC)
            run_id = client.post("/webhook?source=alertmanager", json=payload).json()["run_id"]
            [(status, finished)] = watcher.wait(1, "id = ?", run_id, pause=0.0005)
            assert status == "completed", status
            if n >= 5:  # warm-up
                samples.append((finished - sent).total_seconds() * 1000)
    samples.sort()
    return {"median_ms": round(statistics.median(samples), 1), "p95_ms": round(samples[int(len(samples) * 0.95)], 1)}


async def throughput(server: Server, watcher: Watcher, webhooks: int, clients: int) -> dict[str, Any]:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(webhooks):
        queue.put_nowait(n)
    accepted: list[str] = []
    refused: dict[int, int] = {}
    batch = uuid.uuid4().hex[:8]

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=server.url, headers=headers(), timeout=60) as client:
            while not queue.empty():
                n = queue.get_nowait()
                answer_ = await client.post(
                    "/webhook?source=alertmanager", json=alertmanager_payload(fingerprint=f"{batch}-{n}")
                )
                if answer_.status_code == 202:
                    accepted.append(answer_.json()["run_id"])
                    continue
                refused[answer_.status_code] = refused.get(answer_.status_code, 0) + 1
                if answer_.status_code == 429:  # overloaded: back off as told, then send it again
                    await asyncio.sleep(float(answer_.headers.get("Retry-After", "1")))
                    queue.put_nowait(n)

    sent = datetime.now(UTC)
    began = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    intake_seconds = time.perf_counter() - began
    ended = watcher.wait(len(accepted), "fingerprint LIKE ?", f"{batch}-%", pause=0.02)
    last = max(finished for _, finished in ended)
    statuses: dict[str, int] = {}
    for status, _ in ended:
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "webhooks": webhooks,
        "clients": clients,
        "accepted": len(accepted),
        "refused": refused,  # answers that were not 202; each 429 was sent again after its Retry-After
        "accepted_per_second": round(len(accepted) / intake_seconds, 1),
        "runs_completed_per_second": round(statuses.get("completed", 0) / (last - sent).total_seconds(), 1),
        "statuses": statuses,
    }


def fill_history(database: Path, runs: int) -> None:
    """`runs` finished runs over the last 90 days (one log line each), written straight to the tables."""
    engine = create_engine(f"sqlite:///{database}")
    now = datetime.now(UTC)
    statuses = ["completed"] * 8 + ["escalated", "failed"]
    with engine.begin() as connection:
        for first in range(0, runs, 5000):
            rows, events = [], []
            for n in range(first, min(first + 5000, runs)):
                started = now - timedelta(seconds=90 * 86400 * n / runs) - timedelta(minutes=5)
                run_id = f"hist{n:08d}" + uuid.uuid4().hex[:20]
                rows.append(
                    {
                        "id": run_id,
                        "pipeline_name": ("bench", "checkout-5xx", "disk-full", "cert-expiry")[n % 4],
                        "status": statuses[n % len(statuses)],
                        "stage": "production",
                        "source": "alertmanager",
                        "team": ("shop", "platform", "payments")[n % 3],
                        "fingerprint": f"fp-{n}",
                        "context": {"summary": f"historic alert {n}", "labels": {"service": "checkout"}},
                        "input_tokens": 1200,
                        "output_tokens": 300,
                        "cost": 0.0021,
                        "started_at": started,
                        "finished_at": started + timedelta(seconds=12),
                        "updated_at": started + timedelta(seconds=12),
                    }
                )
                events.append(
                    {"run_id": run_id, "ts": started, "level": "info", "event": "run_started", "message": "started"}
                )
            connection.execute(insert(pipeline_runs), rows)
            connection.execute(insert(pipeline_run_events), events)
    engine.dispose()


def page_latency(server: Server, run_id: str, requests: int = 40) -> dict[str, dict[str, float]]:
    results = {}
    with (
        httpx.Client(base_url=server.url, timeout=30) as browser,
        httpx.Client(base_url=server.url, timeout=30, headers=headers()) as api,
    ):
        login = browser.get("/ui/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', login)
        assert csrf is not None
        browser.post("/ui/login", data={"csrf": csrf[1], "token": TOKEN, "next": "/ui/"})
        for name, path, client in [
            ("/ui/runs", "/ui/runs", browser),
            ("/ui/runs filtered", "/ui/runs?status=escalated&pipeline=checkout-5xx", browser),
            ("/ui/ (dashboard)", "/ui/", browser),
            ("/ui/runs/{id}", f"/ui/runs/{run_id}", browser),
            ("/api/runs", "/api/runs", api),
            ("/metrics", "/metrics", api),
        ]:
            samples = []
            for n in range(requests + 3):
                began = time.perf_counter()
                answer_ = client.get(path)
                took = (time.perf_counter() - began) * 1000
                assert answer_.status_code == 200, (path, answer_.status_code)
                if n >= 3:
                    samples.append(took)
            samples.sort()
            results[name] = {
                "median_ms": round(statistics.median(samples), 1),
                "p95_ms": round(samples[int(len(samples) * 0.95)], 1),
            }
    return results


GATEWAY_TOKEN = "bench-gateway-token-0123456789"


def remote_mode(folder: Path, project: ProjectDir, webhooks: int, clients: int) -> dict[str, Any]:
    """The same load with the agent runtime in its own process (`gateway: {mode: remote}`)."""
    settings = YAML(typ="safe").load(project.config.read_text(encoding="utf-8"))
    (folder / "gateway.yaml").write_text(json.dumps(settings), encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vectorstep",
            "gateway",
            "serve",
            "--config",
            str(folder / "gateway.yaml"),
            "--port",
            str(port),
        ],
        env={**os.environ, "VECTORSTEP_GATEWAY_TOKEN": GATEWAY_TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    remote = {"mode": "remote", "url": f"ws://127.0.0.1:{port}", "token": GATEWAY_TOKEN}
    project.settings({**{key: value for key, value in settings.items() if key != "mcp_servers"}, "gateway": remote})
    server = Server(project.config)
    watcher = Watcher(folder / "bench.db")
    try:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        server.start()
        one_run = latency(server, watcher)
        load = asyncio.run(throughput(server, watcher, webhooks, clients))
        rss, peak = server.rss_mib()
        gateway_rss = Path(f"/proc/{gateway.pid}/status").read_text()
        gateway_mib = int(re.search(r"^VmRSS:\s+(\d+)", gateway_rss, re.M)[1]) / 1024  # type: ignore[index]
    finally:
        watcher.close()
        server.stop()
        gateway.terminate()
        gateway.wait(30)
    return {
        "webhook_to_terminal": one_run,
        "runs_completed_per_second": load["runs_completed_per_second"],
        "statuses": load["statuses"],
        "service_rss_mib": rss,
        "service_peak_rss_mib": peak,
        "gateway_rss_mib": round(gateway_mib, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhooks", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--history", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = build_project(Path(folder))
        subprocess.run(
            [sys.executable, "-m", "vectorstep", "db", "upgrade", "--config", str(project.config)],
            check=True,
            capture_output=True,
        )
        server = Server(project.config)
        startups = []
        for _ in range(3):
            startups.append(server.start())
            server.stop()
        server.start()
        watcher = Watcher(Path(folder) / "bench.db")
        try:
            one_run = latency(server, watcher)
            load = asyncio.run(throughput(server, watcher, args.webhooks, args.clients))
            again = asyncio.run(throughput(server, watcher, args.webhooks, args.clients))
            rss, peak = server.rss_mib()
            with httpx.Client(base_url=server.url, headers=headers()) as client:
                run_id = client.get("/api/runs?limit=1").json()["runs"][0]["run_id"]
                left = client.get("/api/runs", params={"status": "running", "limit": 500}).json()["runs"]
        finally:
            watcher.close()
            server.stop()
        fill_history(Path(folder) / "bench.db", args.history)
        server.start()
        try:
            pages = page_latency(server, run_id)
        finally:
            server.stop()
        remote = remote_mode(Path(folder), project, args.webhooks, args.clients)
    result = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {sys.platform}",
        "startup_to_healthy_s": round(statistics.median(startups), 3),
        "webhook_to_terminal": one_run,
        "load_first_round": load,
        "load_second_round": again,
        "runs_left_running": len(left),
        "rss_mib_after_load": rss,
        "peak_rss_mib": peak,
        "history_runs": args.history,
        "latency_with_history": pages,
        "remote_gateway": remote,
    }
    out = Path(__file__).parent / "results" / "service.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
