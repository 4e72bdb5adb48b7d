"""Resident memory per imported library group: what each part of a running service costs.

Each group is imported in a fresh interpreter together with every group before it, in the order a
service loads them, and the process's resident set is read; a group's cost is the difference from
the one before. Groups a service loads only when configured (a provider's SDK, PostgreSQL's
driver, OpenTelemetry's SDK) come after the ones every service loads, so the total of the
"always" groups is the floor of one SQLite service with the embedded runtime.

    python benchmarks/bench_memory.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).parent

# (group, when a service loads it, modules): cumulative, in the order `serve` imports them.
GROUPS: list[tuple[str, str, list[str]]] = [
    ("configuration: pydantic, ruamel.yaml, vectorstep.spec", "always", ["vectorstep.spec.settings"]),
    ("database: SQLAlchemy, SQLite, vectorstep.store", "always", ["vectorstep.store.runs", "sqlite3"]),
    (
        "web and engine: FastAPI, uvicorn, Jinja2, httpx, executors, checks, schedules",
        "always",
        ["vectorstep.web.app", "vectorstep.web.service", "uvicorn", "vectorstep.engine.services"],
    ),
    ("command line: click, rich", "always", ["vectorstep.cli"]),
    ("model layer: pydantic-ai, griffe, genai-prices", "with any model agent", ["vectorstep.runtime.embedded_turn"]),
    ("aiohttp (the SDKs' transport)", "with a provider", ["aiohttp"]),
    ("OpenAI SDK", "with an OpenAI-compatible provider", ["openai", "pydantic_ai.models.openai"]),
    ("MCP client", "with tool servers", ["mcp", "mcp.client.stdio"]),
    ("Anthropic SDK", "with anthropic/ models", ["anthropic", "pydantic_ai.models.anthropic"]),
    ("Google SDK", "with google/ models", ["pydantic_ai.models.google"]),
    ("PostgreSQL: asyncpg, SQLAlchemy asyncio", "with PostgreSQL", ["asyncpg", "sqlalchemy.ext.asyncio"]),
    ("OpenTelemetry SDK and OTLP exporter", "with telemetry", ["vectorstep.telemetry_spans"]),
]

PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmRSS")))
"""


def rss_mib(modules: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE, *modules], check=True, capture_output=True, text=True)
    return int(out.stdout.strip()) / 1024


def main() -> None:
    base = rss_mib([])
    rows, loaded, previous = [], [], base
    for group, when, modules in GROUPS:
        loaded += modules
        total = min(rss_mib(loaded) for _ in range(3))  # the least of three: page-cache noise only adds
        rows.append({"group": group, "loaded": when, "mib": round(total - previous, 1), "total_mib": round(total, 1)})
        previous = total
    always = [row for row in rows if row["loaded"] == "always"]
    result = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {sys.platform}",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "interpreter_mib": round(base, 1),
        "groups": rows,
        "every_service_mib": always[-1]["total_mib"],
    }
    (HERE / "results" / "memory.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    width = max(len(row["group"]) for row in rows)
    print(f"{'interpreter':{width}}  {base:6.1f} MiB")
    for row in rows:
        print(f"{row['group']:{width}}  {row['mib']:+6.1f} MiB  → {row['total_mib']:6.1f}  ({row['loaded']})")


if __name__ == "__main__":
    main()
