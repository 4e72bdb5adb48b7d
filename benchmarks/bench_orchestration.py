"""Per-step orchestration overhead, runs per second and peak memory for a 5-step pipeline.

Scripted agents (no LLM time, no tools), the real runner, the real SQLite store in WAL mode.
Everything a step costs here is VectorStep's own: template rendering, the agent loop on
pydantic-ai's model interface, parsing, the trust decision and the database writes.

    python benchmarks/bench_orchestration.py [--runs 300] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vectorstep.engine.services import Engine
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import load_settings
from vectorstep.store.database import connect
from vectorstep.store.runs import RunRepository
from vectorstep.store.writer import StoreWriter
from vectorstep.testing import FakeClock, ProjectDir, alertmanager_payload, answer

STEPS = 5


def build_project(root: Path) -> Project:
    project = ProjectDir(root)
    project.settings({"database": {"url": "sqlite:///./bench.db"}})
    for n in range(STEPS):
        project.scripted_agent(f"agent{n}", answer(0.9, f"step {n} found the cause", evidence=[f"fact {n}"]))
    project.pipeline(
        "five",
        {
            "name": "five",
            "context_template": {"include": ["summary", "labels.service"]},
            "steps": [
                {
                    "name": f"step{n}",
                    "executor": "gateway",
                    "executor_config": {"agent": f"agent{n}"},
                    "prompt_template": "Alert {{ summary }} on {{ service }}."
                    + (f" Before: {{{{ steps.step{n - 1}.summary }}}}" if n else ""),
                }
                for n in range(STEPS)
            ],
        },
    )
    loaded = load_project(load_settings(project.config))
    assert not loaded.problems, loaded.problems
    return loaded


async def measure(runs: int, concurrency: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        project = build_project(Path(folder))
        # The schema is created once, as `vectorstep db upgrade` would, so the process measured is
        # one that runs pipelines on an existing database (it never loads Alembic).
        subprocess.run(  # noqa: ASYNC221 - setup, before anything is measured
            [sys.executable, "-m", "vectorstep", "db", "upgrade", "--config", str(project.settings.config_path)],
            check=True,
            capture_output=True,
        )
        database = connect(project.settings.database_url)
        repository = RunRepository(database)
        context = normalise_alertmanager(alertmanager_payload(), FakeClock().now())
        spec = project.pipelines["five"].spec
        async with Engine(project, observers=[StoreWriter(repository)]) as engine:
            for _ in range(20):  # warm-up: imports, caches, connections
                await engine.run(spec, context)
            durations = []
            started = time.perf_counter()
            for _ in range(runs):
                began = time.perf_counter()
                record = await engine.run(spec, context)
                durations.append(time.perf_counter() - began)
                assert record.status.value == "completed"
            sequential = time.perf_counter() - started

            semaphore = asyncio.Semaphore(concurrency)

            async def one() -> None:
                async with semaphore:
                    await engine.run(spec, context)

            started = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(runs)))
            concurrent = time.perf_counter() - started

            no_store = Engine(project)
            began = time.perf_counter()
            for _ in range(runs):
                await no_store.run(spec, context)
            without_store = (time.perf_counter() - began) / runs
            await no_store.aclose()
        stored = await repository.count_runs()
        await database.dispose()
    per_run = statistics.median(durations)
    return {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {sys.platform}",
        "steps_per_run": STEPS,
        "runs": runs,
        "median_run_ms": round(per_run * 1000, 2),
        "p95_run_ms": round(sorted(durations)[int(len(durations) * 0.95)] * 1000, 2),
        "median_step_ms": round(per_run * 1000 / STEPS, 2),
        "step_ms_without_database": round(without_store * 1000 / STEPS, 2),
        "runs_per_second_sequential": round(runs / sequential, 1),
        f"runs_per_second_{concurrency}_concurrent": round(runs / concurrent, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "runs_stored": stored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs, args.concurrency))
    out = Path(__file__).parent / "results" / "orchestration.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for key, value in result.items():
        print(f"{key:>32}: {value}")


if __name__ == "__main__":
    main()
