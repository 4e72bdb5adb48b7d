"""How fast the insights pages answer over a large history.

A SQLite (and, with `--postgres URL`, a PostgreSQL) database is filled with `--runs` finished runs
(default 100,000) spread over the last 90 days: four pipelines, three teams, three steps per run with
S, V, G, checks, tokens and cost, tool calls on the investigating step, and a human approval on one
run in twenty. `vectorstep db upgrade` sums that history (timed). Then a real service answers
`/ui/insights` pages over HTTP, signed in as an admin, with the current hour marked before each
request as a service whose runs keep writing would have it:
the overview, one pipeline, one step, one model, one tool, one team, at each period (24h, 7d, 30d,
90d), and the dashboard with its trust trend. Each page is asked for 12 times after 2 warm-ups; the
median and the 95th percentile are written to `benchmarks/results/insights.json`.

    python benchmarks/bench_insights.py [--runs 100000] [--postgres postgresql+asyncpg://…/db]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
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
from sqlalchemy import create_engine, insert, text

from bench_service import Server
from vectorstep.store.tables import approvals, insight_dirty_hours, pipeline_runs, pipeline_steps, step_tool_calls
from vectorstep.testing import ProjectDir, answer

TOKEN = "bench-admin-token-0123456789"
PIPELINES = ("checkout-5xx", "disk-full", "cert-expiry", "kafka-lag")
TEAMS = ("shop", "platform", "payments")
STEPS = (
    ("triage", "triager", "gpt-4o-mini"),
    ("investigate", "investigator", "claude-sonnet-4"),
    ("remediate", "fixer", "gpt-4o"),
)
TOOLS = ("prometheus__query", "loki__query", "kubectl__get", "deploys__list")
STATUSES = ["completed"] * 14 + ["escalated"] * 3 + ["failed", "stopped", "aborted"]
PERIODS = ("24h", "7d", "30d", "90d")
BATCH = 2000


def sync_url(url: str) -> str:
    return url.replace("+asyncpg", "+psycopg") if url.startswith("postgresql") else url


def fill(url: str, runs: int) -> None:
    """`runs` finished runs over the last 90 days, written straight to the tables in batches."""
    engine = create_engine(sync_url(url))
    now = datetime.now(UTC)
    chance = random.Random(7)
    run_rows_all: list[dict[str, Any]] = []
    with engine.begin() as connection:
        for first in range(0, runs, BATCH):
            run_rows: list[dict[str, Any]] = []
            step_rows: list[dict[str, Any]] = []
            tool_rows: list[dict[str, Any]] = []
            approval_rows: list[dict[str, Any]] = []
            for n in range(first, min(first + BATCH, runs)):
                started = now - timedelta(seconds=90 * 86400 * n / runs) - timedelta(minutes=5)
                run_id = f"hist{n:08d}" + uuid.uuid4().hex[:20]
                status = STATUSES[n % len(STATUSES)]
                pipeline, team = PIPELINES[n % 4], TEAMS[n % 3]
                run_rows.append(
                    {
                        "id": run_id,
                        "pipeline_name": pipeline,
                        "status": status,
                        "stage": "production",
                        "source": "alertmanager",
                        "team": team,
                        "fingerprint": f"fp-{n}",
                        "context": {"summary": f"historic alert {n}"},
                        "input_tokens": 3600,
                        "output_tokens": 900,
                        "cost": round(0.004 + chance.random() * 0.01, 5),
                        "started_at": started,
                        "finished_at": started + timedelta(seconds=40),
                        "updated_at": started + timedelta(seconds=40),
                    }
                )
                for index, (step, agent, model) in enumerate(STEPS):
                    s = round(chance.uniform(0.5, 1.0), 3)
                    g = round(min(1.0, max(0.0, s + chance.gauss(-0.05, 0.2))), 3)
                    v = round(min(1.0, s + chance.gauss(-0.05, 0.1)), 3) if index else None
                    at = started + timedelta(seconds=12 * index)
                    step_rows.append(
                        {
                            "run_id": run_id,
                            "step_index": index,
                            "step_name": step,
                            "status": "escalated" if status == "escalated" and index == 2 else "completed",
                            "executor": "gateway",
                            "agent": agent,
                            "model": model,
                            "provider": model.split("-")[0],
                            "primary_confidence": s,
                            "verifier_confidence": v,
                            "effective_confidence": min(s, v) if v is not None else s,
                            "combined_trust": round(min(s, g), 3),
                            "grounding_score": g,
                            "deterministic_passed": None if index == 0 else chance.random() > 0.05,
                            "input_tokens": 1200,
                            "output_tokens": 300,
                            "cost": 0.002,
                            "duration_ms": 11_000.0,
                            "started_at": at,
                            "finished_at": at + timedelta(seconds=11),
                        }
                    )
                    if step == "investigate":
                        for tool in TOOLS[: 1 + n % len(TOOLS)]:
                            calls = 1 + n % 3
                            errors = 1 if chance.random() < 0.04 else 0
                            tool_rows.append(
                                {
                                    "run_id": run_id,
                                    "step_name": step,
                                    "tool_name": tool,
                                    "calls": calls,
                                    "errors": errors,
                                    "denied": 0,
                                    "started_at": at,
                                }
                            )
                if n % 20 == 0:
                    approval_rows.append(
                        {
                            "id": uuid.uuid4().hex,
                            "run_id": run_id,
                            "pipeline_name": pipeline,
                            "step_name": "remediate",
                            "check_name": "",
                            "message": "Roll back?",
                            "team": team,
                            "stage": "production",
                            "channel": "ui",
                            "status": "approved",
                            "created_at": started + timedelta(seconds=30),
                            "expires_at": started + timedelta(hours=4),
                            "decided_at": started + timedelta(seconds=30 + chance.expovariate(1 / 240)),
                            "decided_by": "alice",
                        }
                    )
            connection.execute(insert(pipeline_runs), run_rows)
            run_rows_all.extend({"started_at": row["started_at"]} for row in run_rows)
            connection.execute(insert(pipeline_steps), step_rows)
            connection.execute(insert(step_tool_calls), tool_rows)
            if approval_rows:
                connection.execute(insert(approvals), approval_rows)
        # Written around the store, so the hours are marked here as the store marks them.
        hours = {row["started_at"].strftime("%Y-%m-%d %H") for row in run_rows_all}
        connection.execute(insert(insight_dirty_hours), [{"hour": hour} for hour in sorted(hours)])
        connection.execute(text("ANALYZE"))
    engine.dispose()


def project_at(root: Path, url: str) -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent("triager", answer(0.9, "fine"))
    for name in PIPELINES:
        project.pipeline(
            name,
            {
                "name": name,
                "stage": "production",
                "budget": {"max_tokens": 6000, "max_usd": 0.02},
                "steps": [{"name": "triage", "executor": "gateway", "executor_config": {"agent": "triager"}}],
            },
        )
    project.settings(
        {"database": {"url": url}, "auth": {"tokens": [{"name": "admin", "token": TOKEN, "role": "admin"}]}}
    )
    return project


def pages() -> list[tuple[str, str]]:
    found = [("dashboard", "/ui/")]
    for period in PERIODS:
        found += [
            (f"overview {period}", f"/ui/insights?period={period}"),
            (f"pipeline {period}", f"/ui/insights/pipeline/checkout-5xx?period={period}"),
            (f"step {period}", f"/ui/insights/step/investigate?period={period}"),
            (f"model {period}", f"/ui/insights/model/gpt-4o?period={period}"),
            (f"tool {period}", f"/ui/insights/tool/loki__query?period={period}"),
            (f"team {period}", f"/ui/insights/team/shop?period={period}"),
        ]
    return found


def measure(base_url: str, url: str, requests: int = 12) -> dict[str, dict[str, float]]:
    """Each page `requests` times after 2 warm-ups, the current hour marked before each request: as on a
    service whose runs keep writing, every page recomputes that hour first."""
    results: dict[str, dict[str, float]] = {}
    engine = create_engine(sync_url(url))
    mark = insert(insight_dirty_hours).prefix_with("OR IGNORE") if url.startswith("sqlite") else None
    with httpx.Client(base_url=base_url, timeout=60) as browser:
        login = browser.get("/ui/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', login)
        assert csrf is not None
        browser.post("/ui/login", data={"csrf": csrf[1], "token": TOKEN, "next": "/ui/"})
        for name, path in pages():
            samples = []
            for n in range(requests + 2):
                with engine.begin() as connection:
                    hour = {"hour": datetime.now(UTC).strftime("%Y-%m-%d %H")}
                    if mark is not None:
                        connection.execute(mark, hour)
                    else:
                        connection.execute(
                            text("INSERT INTO insight_dirty_hours VALUES (:hour) ON CONFLICT DO NOTHING"), hour
                        )
                began = time.perf_counter()
                response = browser.get(path)
                took = (time.perf_counter() - began) * 1000
                assert response.status_code == 200, (path, response.status_code, response.text[:300])
                if n >= 2:
                    samples.append(took)
            samples.sort()
            results[name] = {
                "median_ms": round(statistics.median(samples), 1),
                "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 1),
            }
            print(f"{name:20} {results[name]['median_ms']:8.1f} ms  (p95 {results[name]['p95_ms']:.1f})", flush=True)
    engine.dispose()
    return results


def one_database(folder: Path, url: str, runs: int) -> dict[str, Any]:
    project = project_at(folder / "project", url)
    subprocess.run(
        [sys.executable, "-m", "vectorstep", "db", "upgrade", "--config", str(project.config)],
        check=True,
        capture_output=True,
    )
    began = time.perf_counter()
    fill(url, runs)
    filled = time.perf_counter() - began
    began = time.perf_counter()
    upgraded = subprocess.run(
        [sys.executable, "-m", "vectorstep", "db", "upgrade", "--config", str(project.config)],
        check=True,
        capture_output=True,
        text=True,
    )
    summed = time.perf_counter() - began
    print(upgraded.stdout.strip(), f"({summed:.1f} s)", flush=True)
    server = Server(project.config)
    server.start()
    try:
        latency = measure(server.url, url)
    finally:
        server.stop()
    worst = max(latency.values(), key=lambda figures: figures["median_ms"])
    return {
        "fill_seconds": round(filled, 1),
        "db_upgrade_summing_seconds": round(summed, 1),
        "worst_median_ms": worst["median_ms"],
        "pages": latency,
    }


def reset_postgres(url: str) -> None:
    engine = create_engine(sync_url(url))
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--postgres", help="also measure on this PostgreSQL database (it is emptied first)")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {sys.platform}",
        "runs": args.runs,
        "steps": args.runs * len(STEPS),
    }
    with tempfile.TemporaryDirectory() as folder:
        print("SQLite", flush=True)
        result["sqlite"] = one_database(Path(folder) / "sqlite", f"sqlite:///{folder}/insights.db", args.runs)
        if args.postgres:
            print("PostgreSQL", flush=True)
            reset_postgres(args.postgres)
            result["postgresql"] = one_database(Path(folder) / "pg", args.postgres, args.runs)
    out = Path(__file__).parent / "results" / "insights.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in result.items() if not isinstance(value, dict)}, indent=2))


if __name__ == "__main__":
    main()
