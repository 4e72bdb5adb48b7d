"""Calibration at scale: the gate-time lookup and a person's mark, with 1,000,000 labelled steps in PostgreSQL.

The history is seeded in bulk with SQL (production runs of one step across 20 buckets, each marked;
the counters filled in from it), then the real code is timed: `CalibrationRepository.counts` — what
a calibrated step reads at its gate — for random buckets and bins, and `FeedbackRepository.mark` for
step and run marks, each of which moves the counters in its own transaction.

    python benchmarks/bench_calibration.py [--url URL] [--steps 1000000]

URL defaults to $VECTORSTEP_BENCH_DATABASE_URL, else postgresql+asyncpg://postgres@127.0.0.1:5432/vectorstep_bench.
The database's tables are emptied first: point it at a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from vectorstep.domain.calibration import Bin, Bucket
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.database import connect
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.migrate import upgrade

BUCKETS = 20


def bucket(number: int) -> Bucket:
    return Bucket.of(
        "investigate",
        executor="gateway",
        agent="investigator",
        model="model-a",
        provider="openai",
        prompt_hash=f"prompt{number:02d}",
        agent_version="v1",
    )


def seed(connection: Connection, steps: int) -> None:
    for table in ("calibration_cells", "step_feedback", "run_feedback", "pipeline_run_events", "pipeline_steps"):
        connection.execute(text(f"DELETE FROM {table}"))
    connection.execute(text("DELETE FROM pipeline_runs"))
    connection.execute(
        text(
            "INSERT INTO pipeline_runs (id, pipeline_name, status, stage, source, context, input_tokens, output_tokens,"
            " started_at, updated_at) SELECT 'b' || g, 'bench', 'completed', 'production', 'manual', '{}', 0, 0, now(),"
            " now() FROM generate_series(1, :n) g"
        ),
        {"n": steps},
    )
    keys = [bucket(number).key for number in range(BUCKETS)]
    connection.execute(
        text(
            "INSERT INTO pipeline_steps (run_id, step_index, step_name, status, executor, agent, model, provider,"
            " prompt_hash, agent_version, effective_confidence, deterministic_passed, input_tokens, output_tokens,"
            " duration_ms, attempts, iterations, started_at, finished_at, calibration_bucket, calibration_cell,"
            " calibration_label)"
            " SELECT 'b' || g, 0, 'investigate', 'completed', 'gateway', 'investigator', 'model-a', 'openai',"
            " 'prompt' || lpad((g % :buckets)::text, 2, '0'), 'v1', (g % 100) / 100.0, true, 0, 0, 1, 1, 1, now(),"
            " now(), (CAST(:keys AS text[]))[(g % :buckets) + 1], g % 100, CASE WHEN g % 10 < 7 THEN 1.0 ELSE 0.0 END"
            " FROM generate_series(1, :n) g"
        ),
        {"n": steps, "buckets": BUCKETS, "keys": keys},
    )
    connection.execute(
        text(
            "INSERT INTO run_feedback (run_id, label, marked_by, created_at) SELECT 'b' || g, CASE WHEN g % 10 < 7"
            " THEN 'correct' ELSE 'incorrect' END, 'bench', now() FROM generate_series(1, :n) g"
        ),
        {"n": steps},
    )
    connection.execute(
        text(
            "INSERT INTO calibration_cells (bucket_key, cell, n, total) SELECT calibration_bucket, calibration_cell,"
            " count(*), sum(calibration_label) FROM pipeline_steps GROUP BY calibration_bucket, calibration_cell"
        )
    )
    connection.execute(text("ANALYZE"))


async def measure(url: str, steps: int, samples: int) -> dict[str, Any]:
    database = connect(url)
    try:
        await upgrade(database)
        started = time.perf_counter()
        await database.write(lambda connection: seed(connection, steps))
        seeded = time.perf_counter() - started
        history, feedback = CalibrationRepository(database), FeedbackRepository(database)
        draw = random.Random(1)
        lookups = []
        for _ in range(samples):
            within = Bin.of(draw.random(), 0.1)
            chosen = bucket(draw.randrange(BUCKETS))
            began = time.perf_counter()
            await history.counts(chosen, within.low, within.high)
            lookups.append((time.perf_counter() - began) * 1000)
        marks = []
        for number in range(samples // 5):
            run_id = f"b{draw.randrange(1, steps + 1)}"
            step = "investigate" if number % 2 else None
            began = time.perf_counter()
            await feedback.mark(
                Mark(run_id, step, draw.choice(["correct", "incorrect"]), None, "bench", datetime.now(UTC))
            )
            marks.append((time.perf_counter() - began) * 1000)
        return {
            "labelled_steps": steps,
            "buckets": BUCKETS,
            "seconds_to_seed": round(seeded, 1),
            "lookup_ms": _summary(lookups),
            "mark_ms": _summary(marks),
        }
    finally:
        await database.dispose()


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max": round(ordered[-1], 3),
        "samples": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get(
        "VECTORSTEP_BENCH_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/vectorstep_bench"
    )
    parser.add_argument("--url", default=default)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    result = asyncio.run(measure(args.url, args.steps, args.samples))
    out = Path(__file__).parent / "results" / "calibration.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
