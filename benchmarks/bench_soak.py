"""Scale-out and faults on PostgreSQL: real `vectorstep serve` and `vectorstep worker` processes.

1. Soak: 10,000 webhooks from 8 clients to one intake process and 3 workers (instant runs,
   2-second runs, runs that wait for a person whom a script plays), while a random worker gets
   SIGKILL every few seconds and a new one starts 0-2 s later. Then, from the database: runs
   lost, duplicated, not ended, not completed, steps recorded twice, duplicates answered wrong.
2. Scaling: runs per second with 1, 2 and 4 workers (each driving 4 runs at once) on a one-step
   pipeline whose model is a real HTTP call to `fake_models.py` answering in 200 ms: how far
   adding workers adds throughput when runs wait on a model, not on the CPU.
3. Recovery: a worker killed while it drives a run; the time until another worker has taken the
   run up (its `run_resumed` log line).

    python benchmarks/bench_soak.py [--url URL] [--webhooks 10000] [--only soak|scaling|recovery]

URL defaults to $VECTORSTEP_BENCH_DATABASE_URL, else
postgresql+asyncpg://postgres@127.0.0.1:5432/vectorstep_bench (created when missing, emptied first).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's test fixtures

from tests.conftest import reset_postgres
from tests.fixtures.fleet import Fleet
from tests.fixtures.soak import Soak, soak_project

from vectorstep.testing import ProjectDir, answer

HERE = Path(__file__).parent
RESULTS = HERE / "results" / "soak.json"


def ensure_database(url: str) -> None:
    parsed = make_url(url)
    admin = create_engine(
        parsed.set(drivername="postgresql+psycopg", database="postgres"), isolation_level="AUTOCOMMIT"
    )
    try:
        with admin.connect() as connection:
            exists = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": parsed.database}
            ).first()
            if exists is None:
                connection.execute(text(f'CREATE DATABASE "{parsed.database}"'))
    finally:
        admin.dispose()
    asyncio.run(reset_postgres(url))


def soak(url: str, root: Path, *, webhooks: int, clients: int, workers: int, kill_every: float) -> dict[str, Any]:
    ensure_database(url)
    project = soak_project(root / "soak", url)
    fleet = Fleet(project.config, root / "soak-logs")
    try:
        result = Soak(fleet, url, workers=workers).run(
            webhooks=webhooks, clients=clients, kill_every=kill_every, settle_timeout=900
        )
    finally:
        fleet.stop()
    return {
        "webhooks": result.sent,
        "clients": clients,
        "workers": workers,
        "kill_every_seconds": kill_every,
        "kills": result.kills,
        "accepted": len(result.accepted),
        "refused": dict(result.refused),
        "duplicates_sent": result.duplicates_sent,
        "duplicates_answered_wrong": len(result.duplicates_wrong),
        "runs_recorded": result.runs,
        "lost": len(result.missing),
        "duplicated": result.extra_runs,
        "stuck": len(result.not_ended),
        "not_completed": dict(result.not_completed),
        "steps_recorded_twice": len(result.steps_twice),
        "runs_resumed_after_a_kill": result.resumed_after_a_kill,
        "approvals_decided": result.approvals_decided,
        "seconds_sending": round(result.seconds_sending, 1),
        "seconds_to_settle_after": round(result.seconds_to_settle, 1),
        "sound": result.sound,
    }


def model_project(root: Path, url: str, model_url: str, concurrency: int) -> ProjectDir:
    project = ProjectDir(root)
    project.agent("triage", {"model": "openai/bench-model"}, instructions="[bench:triage] Triage the alert.")
    step = {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}}
    project.pipeline("scale", {"name": "scale", "stage": "production", "trigger": {"match": {}}, "steps": [step]})
    project.settings(
        {
            "database": {"url": url},
            "concurrency": {"max_runs": concurrency, "max_queued": 1_000_000},
            "providers": {"openai": {"api_key": "sk-bench-not-a-secret", "base_url": f"{model_url}/v1"}},
        }
    )
    return project


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scaling(url: str, root: Path, runs: int, clients: int, latency_ms: float) -> dict[str, Any]:
    port = free_port()
    model = subprocess.Popen(
        [sys.executable, str(HERE / "fake_models.py"), "--port", str(port), "--latency-ms", str(latency_ms)]
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/stats")
        figures = {}
        for workers in (1, 2, 4):
            figures[str(workers)] = _scale_round(
                url, root / f"scale-{workers}", port, workers=workers, runs=runs, clients=clients
            )
            print(f"  {workers} worker(s): {figures[str(workers)]}", flush=True)
        return {"model_latency_ms": latency_ms, "runs_per_round": runs, "runs_at_once_per_worker": 4, **figures}
    finally:
        model.terminate()
        model.wait(timeout=30)


def _scale_round(url: str, root: Path, port: int, *, workers: int, runs: int, clients: int) -> dict[str, Any]:
    ensure_database(url)
    project = model_project(root, url, f"http://127.0.0.1:{port}", concurrency=4)
    fleet = Fleet(project.config, root / "logs")
    try:
        for _ in range(workers):
            fleet.start_worker()
        time.sleep(2)  # every worker warm (its model client built)
        started = time.monotonic()
        _post_many(fleet.url, runs, clients)
        accepted = time.monotonic() - started
        _wait_all_ended(url, runs, timeout=600)
        elapsed = time.monotonic() - started
    finally:
        fleet.stop()
    return {
        "runs_per_second": round(runs / elapsed, 1),
        "seconds": round(elapsed, 2),
        "seconds_to_accept_all": round(accepted, 2),
    }


def _post_many(base: str, runs: int, clients: int) -> None:
    def send(count: int, index: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for number in range(count):
                payload = {"event": "scale", "idempotency_key": f"c{index}-{number}", "data": {}}
                response = client.post("/webhook?source=generic", json=payload)
                assert response.status_code == 202, response.text

    threads = [
        threading.Thread(target=send, args=(runs // clients + (index < runs % clients), index))
        for index in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _wait_all_ended(url: str, runs: int, timeout: float) -> None:
    engine = create_engine(url.replace("+asyncpg", "+psycopg"))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                ended = connection.execute(
                    text("SELECT count(*) FROM pipeline_runs WHERE status NOT IN ('running', 'waiting')")
                ).scalar_one()
            if ended >= runs:
                return
            time.sleep(0.05)
    finally:
        engine.dispose()
    raise RuntimeError(f"runs did not end within {timeout} s")


def recovery(url: str, root: Path, rounds: int) -> dict[str, Any]:
    ensure_database(url)
    project = ProjectDir(root / "recovery")
    project.scripted_agent("triage", answer(0.9, "triaged"))
    project.scripted_agent("slow", {**answer(0.9, "investigated"), "delay_seconds": 30})
    steps = [
        {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}},
        {"name": "investigate", "executor": "gateway", "executor_config": {"agent": "slow"}},
    ]
    project.pipeline("slow", {"name": "slow", "stage": "production", "trigger": {"match": {}}, "steps": steps})
    project.settings({"database": {"url": url}})
    fleet = Fleet(project.config, root / "recovery-logs")
    seconds = []
    try:
        fleet.start_worker()
        fleet.start_worker()
        with httpx.Client(base_url=fleet.url, timeout=30) as client:
            for number in range(rounds):
                run_id = client.post("/webhook?source=generic", json={"event": f"r{number}", "data": {}}).json()[
                    "run_id"
                ]
                record = _wait_log(client, run_id, "step investigate started")
                pid = int(re.findall(r"worker:\d+:[^:]+:(\d+)", json.dumps(record["log"]))[-1])
                victim = next(worker for worker in fleet.workers if worker.pid == pid)
                fleet.kill(victim)
                killed = time.monotonic()
                fleet.start_worker(wait=False)  # back to two
                _wait_log(client, run_id, "taken up by worker")
                seconds.append(time.monotonic() - killed)
                print(f"  round {number + 1}: taken up {seconds[-1]:.1f} s after the kill", flush=True)
    finally:
        fleet.stop()
    return {
        "rounds": rounds,
        "seconds_from_kill_to_taken_up": {
            "median": round(statistics.median(seconds), 1),
            "max": round(max(seconds), 1),
            "min": round(min(seconds), 1),
        },
    }


def _wait_log(client: httpx.Client, run_id: str, text_in: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if any(text_in in entry["message"] for entry in record["log"]):
            return record
        time.sleep(0.05)
    raise RuntimeError(f"run {run_id} never logged {text_in!r}")


def _wait_for(address: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(address, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{address} did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get(
        "VECTORSTEP_BENCH_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/vectorstep_bench"
    )
    parser.add_argument("--url", default=default)
    parser.add_argument("--webhooks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=4.0)
    parser.add_argument("--scale-runs", type=int, default=600)
    parser.add_argument("--recovery-rounds", type=int, default=5)
    parser.add_argument("--only", choices=["soak", "scaling", "recovery"], default=None)
    args = parser.parse_args()
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if args.only in (None, "recovery"):
            print("recovery", flush=True)
            results["recovery"] = recovery(args.url, root, args.recovery_rounds)
        if args.only in (None, "scaling"):
            print("scaling", flush=True)
            results["scaling"] = scaling(args.url, root, args.scale_runs, args.clients, latency_ms=200)
        if args.only in (None, "soak"):
            print("soak", flush=True)
            results["soak"] = soak(
                args.url,
                root,
                webhooks=args.webhooks,
                clients=args.clients,
                workers=args.workers,
                kill_every=args.kill_every,
            )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
