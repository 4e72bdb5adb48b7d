"""The path users run: the service's agents call a model over HTTP (an instant OpenAI-compatible
server on 127.0.0.1), not the scripted model.

Measured once through the OpenAI SDK and once through the Anthropic SDK (`fake_models.py` speaks
both). The same 3-step pipeline as `bench_service.py` (its last step calls a tool on a real MCP stdio
server and has an independent verifier, an enforced grounding judge and a shell check), so one run
makes five model calls: triage, investigate, the planner twice (a tool call, then its answer), the
reviewer and the judge — six requests in all. Measured against a real `vectorstep serve`:

- startup to healthy, from starting the process to its first run finished (sent at once) and to
  warm (`/health` says `warming` until the models and tool servers are loaded), and the first run
  of a fresh service sent once it is warm;
- one run from webhook to terminal status (median, p95), here and with the scripted model, and from
  the difference the overhead per model call (less the fake server's own time per request);
- runs completed per second with 8 clients, 429 answers from the model included;
- CPU milliseconds per run, the service and its children (the tool server, the shell checks);
- resident memory idle and after load;
- the requests the model server counted (proof that the HTTP path ran).

    python benchmarks/bench_model_path.py [--webhooks 200] [--clients 8] [--throttle-every 50]
        [--providers openai,anthropic] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench_service import TOKEN, TOOL_SERVER, Server, Watcher, build_project, headers, latency, throughput
from vectorstep.testing import ProjectDir, alertmanager_payload

HERE = Path(__file__).parent
TICKS = os.sysconf("SC_CLK_TCK")
AGENTS = {
    "triage": "You triage alerts.",
    "investigator": "You investigate alerts.",
    "planner": "You plan remediations with the obs tools.",
    "reviewer": "You review a plan independently.",
    "judge": "You judge whether claims are backed by tool results.",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PROVIDERS = {  # the providers: block for each SDK, pointed at the fake model server
    "openai": lambda url: {"api_key": "sk-bench-not-a-secret", "base_url": f"{url}/v1"},
    "anthropic": lambda url: {"api_key": "sk-ant-bench-not-a-secret", "base_url": url},
}


def build_http_project(root: Path, model_url: str, provider: str = "openai") -> ProjectDir:
    """bench_service's project, with every agent a real model of `provider` (its SDK, over HTTP)."""
    project = build_project(root)
    for name, instructions in AGENTS.items():
        agent: dict[str, Any] = {"model": f"{provider}/bench-model"}
        if name == "planner":
            agent["tools"] = ["obs"]
        project.agent(name, agent, instructions=f"[bench:{name}] {instructions}")
    project.settings(
        {
            "database": {"url": "sqlite:///./bench.db"},
            "mcp_servers": {"obs": {"command": sys.executable, "args": [str(root / "tools.py")]}},
            "auth": {"tokens": [{"name": "bench", "token": TOKEN, "role": "admin", "team": "shop"}]},
            "concurrency": {"max_runs": 256},
            "providers": {provider: PROVIDERS[provider](model_url)},
        }
    )
    (root / "tools.py").write_text(TOOL_SERVER, encoding="utf-8")
    return project


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and all its children: live ones read directly, ended ones as reaped."""
    total = 0.0
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) for value in stat[11:15])
    total += (utime + stime + cutime + cstime) / TICKS
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # it ended while we looked
                total += cpu_seconds(int(child))
    return total


def own_cpu_seconds(pid: int) -> float:
    """CPU time of the process itself, without its children."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / TICKS


@contextlib.contextmanager
def profiled(pid: int, output: Path | None) -> Any:
    """`py-spy record` on the service while the block runs (collapsed stacks for flame graphs)."""
    if output is None:
        yield
        return
    recorder = subprocess.Popen(
        ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "250", "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)  # py-spy attaches
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)


def first_run(server: Server, watcher: Watcher) -> tuple[float, float, float]:
    """Seconds from spawning `serve` to healthy, to its first run's end (sent at once), and to warm."""
    began = time.perf_counter()
    healthy = server.start()
    with httpx.Client(base_url=server.url, headers=headers()) as client:
        payload = alertmanager_payload(fingerprint=f"first-{uuid.uuid4().hex[:8]}")
        run_id = client.post("/webhook?source=alertmanager", json=payload).json()["run_id"]
        [(status, _)] = watcher.wait(1, "id = ?", run_id, pause=0.002)
        first = time.perf_counter() - began
        while client.get("/health").json()["warming"]:
            time.sleep(0.002)
    assert status == "completed", status
    return healthy, first, time.perf_counter() - began


def first_run_once_warm(server: Server, watcher: Watcher) -> float:
    """Milliseconds from webhook to terminal status of a fresh service's first run, sent once it is warm."""
    server.start()
    with httpx.Client(base_url=server.url, headers=headers()) as client:
        while client.get("/health").json()["warming"]:
            time.sleep(0.01)
        payload = alertmanager_payload(fingerprint=f"warm-first-{uuid.uuid4().hex[:8]}")
        sent = datetime.now(UTC)
        run_id = client.post("/webhook?source=alertmanager", json=payload).json()["run_id"]
    [(status, finished)] = watcher.wait(1, "id = ?", run_id, pause=0.0005)
    assert status == "completed", status
    return round((finished - sent).total_seconds() * 1000, 1)


def model_stats(url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{url}/stats").json())


def measure_http(
    folder: Path, webhooks: int, clients: int, throttle_every: int, *, provider: str, profile: Path | None = None
) -> dict[str, Any]:
    port = free_port()
    model_url = f"http://127.0.0.1:{port}"
    fake = subprocess.Popen(
        [sys.executable, str(HERE / "fake_models.py"), "--port", str(port), "--throttle-every", str(throttle_every)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                httpx.get(f"{model_url}/stats", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        project = build_http_project(folder, model_url, provider)
        upgrade(project)
        server = Server(project.config)
        watcher = Watcher(folder / "bench.db")
        try:
            healthy, first, warm = first_run(server, watcher)
            assert server.process is not None
            pid = server.process.pid
            idle_rss = server.rss_mib()[0]
            before_latency = model_stats(model_url)
            one_run = latency(server, watcher)
            before_requests = model_stats(model_url)
            # the model server's own time per request while runs went one at a time
            served_alone = before_requests["completions"] - before_latency["completions"]
            model_ms = 1000 * (before_requests["busy_seconds"] - before_latency["busy_seconds"]) / served_alone
            before_cpu, before_own = cpu_seconds(pid), own_cpu_seconds(pid)
            with profiled(pid, profile):
                load = asyncio.run(throughput(server, watcher, webhooks, clients))
            cpu, own = cpu_seconds(pid) - before_cpu, own_cpu_seconds(pid) - before_own
            served = model_stats(model_url)
            completed = load["statuses"].get("completed", 0)
            after_rss = server.rss_mib()[0]
            server.stop()
            warm_first = first_run_once_warm(server, watcher)
        finally:
            watcher.close()
            server.stop()
    finally:
        fake.terminate()
        fake.wait(30)
    return {
        "startup_to_healthy_s": round(healthy, 3),
        "start_to_first_run_finished_s": round(first, 3),
        "start_to_warm_s": round(warm, 3),
        "first_run_once_warm_ms": warm_first,
        "webhook_to_terminal": one_run,
        "load": load,
        "cpu_ms_per_run": round(1000 * cpu / max(completed, 1), 2),
        "service_cpu_ms_per_run": round(1000 * own / max(completed, 1), 2),
        "rss_mib_idle": idle_rss,
        "rss_mib_after_load": after_rss,
        "model_requests_during_load": served["completions"] - before_requests["completions"],
        "model_requests_per_run": round(
            (served["completions"] - before_requests["completions"]) / max(completed, 1), 2
        ),
        "model_answers_429": served["throttled"],
        "model_server_ms_per_request": round(model_ms, 3),
    }


def measure_scripted(folder: Path) -> dict[str, float]:
    project = build_project(folder)
    upgrade(project)
    server = Server(project.config)
    watcher = Watcher(folder / "bench.db")
    try:
        server.start()
        return latency(server, watcher)
    finally:
        watcher.close()
        server.stop()


def upgrade(project: ProjectDir) -> None:
    subprocess.run(
        [sys.executable, "-m", "vectorstep", "db", "upgrade", "--config", str(project.config)],
        check=True,
        capture_output=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhooks", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--throttle-every", type=int, default=50)
    parser.add_argument("--providers", default="openai,anthropic", help="the SDKs to measure, comma-separated")
    parser.add_argument(
        "--profile", type=Path, help="write py-spy's collapsed stacks of the service under load (OpenAI SDK) here"
    )
    args = parser.parse_args()
    http: dict[str, dict[str, Any]] = {}
    for provider in args.providers.split(","):
        with tempfile.TemporaryDirectory() as folder:
            profile = args.profile if provider == "openai" else None
            http[provider] = measure_http(
                Path(folder), args.webhooks, args.clients, args.throttle_every, provider=provider, profile=profile
            )
    with tempfile.TemporaryDirectory() as scripted_folder:
        scripted = measure_scripted(Path(scripted_folder))
    model_calls = 6  # requests per run: see the docstring
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {sys.platform}",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "scripted_model_webhook_to_terminal": scripted,
    }
    for provider, measured in http.items():
        overhead = (measured["webhook_to_terminal"]["median_ms"] - scripted["median_ms"]) / model_calls
        measured["overhead_ms_per_model_call"] = round(overhead - measured["model_server_ms_per_request"], 2)
        result[f"{provider}_sdk"] = measured
    out = HERE / "results" / "model_path.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
