"""Offline observability tools for the VectorStep demo: one MCP stdio server, started as `metrics` or `logs`.

    python observability_server.py metrics   # tools: query, list_series
    python observability_server.py logs      # tools: search, recent_deploys

Everything is read from ../data (a Prometheus export, log files and a deploy history of the `shop`
namespace on 2025-06-12). The metrics server evaluates a small, honest subset of PromQL over that
export at a fixed evaluation time (the end of the export), with the evaluator in promql.py (shared
with the deterministic checks' helper metric_value.py): selectors with `=`, `!=`, `=~`, `!~`
matchers; `rate`, `increase`, `avg_over_time`, `max_over_time`, `min_over_time` over a range;
`sum`, `avg`, `max`, `min`, `count` with `by (...)` / `without (...)`; `histogram_quantile`;
`+ - * /` between vectors (one-to-one on identical labels) and numbers. Anything else is answered
with an error saying what is supported, never with a made-up number.

Only the MCP protocol goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from promql import (
    DATA_DIR,
    SUPPORTED,
    Export,
    Parser,
    PromQLError,
    Series,
    Value,
    export,
    format_value,
    hhmm,
    iso,
    label_text,
    short,
)

LOG_LINE_MAX = 400
log = logging.getLogger("observability_server")


# --------------------------------------------------------------------------- sample data


@cache
def deploys() -> list[dict[str, Any]]:
    return json.loads((DATA_DIR / "deploys.json").read_text(encoding="utf-8"))["deploys"]


def log_file(service: str) -> Path:
    return DATA_DIR / "logs" / f"{service}.log"


def known_services() -> list[str]:
    names = {series.labels.get("service", "") for series in export().series}
    names |= {path.stem for path in (DATA_DIR / "logs").glob("*.log")}
    names |= {entry["service"] for entry in deploys()}
    return sorted(name for name in names if name)


def check_service(service: str) -> str:
    service = service.strip()
    if service not in known_services():
        raise ToolError(
            f"unknown service {service!r}: this environment (namespace shop) has {', '.join(known_services())}"
        )
    return service


# --------------------------------------------------------------------------- the servers


def metrics_server() -> MCPServer:
    app = MCPServer("metrics", instructions="Prometheus metrics of the shop namespace (sample export, read-only).")

    @app.tool()
    def query(promql: str, range_minutes: int = 0) -> str:
        """Evaluate a PromQL expression against the Prometheus export of namespace `shop`.

        The evaluation time is the end of the export (2025-06-12T14:12:00Z). With range_minutes > 0 the
        expression is evaluated every 60s over that many minutes before it (a range query, resultType
        matrix). Returns the Prometheus HTTP API JSON, followed by a readable summary with UTC times.
        Supported: selectors with = != =~ !~, rate/increase/avg_over_time/max_over_time/min_over_time,
        sum/avg/max/min/count with by/without, histogram_quantile, + - * / between vectors or numbers.
        Example: sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m]))
        """
        return run_query(promql, range_minutes)

    @app.tool()
    def list_series(service: str) -> str:
        """List the metrics recorded for a service: each metric name, its type, series count and label values."""
        return describe_service(check_service(service))

    return app


def run_query(promql: str, range_minutes: int) -> str:
    data = export()
    if not 0 <= range_minutes <= 180:
        raise ToolError("range_minutes must be between 0 (instant query) and 180")
    try:
        node = Parser(promql, data).parse()
        if range_minutes == 0:
            return render_instant(promql, data.end, node(data.end))
        times = list(range(data.end - range_minutes * 60, data.end + 1, data.step))
        return render_range(promql, times, [(ts, node(ts)) for ts in times])
    except PromQLError as error:
        raise ToolError(f"bad_data: cannot evaluate {promql!r}: {error}. Supported here: {SUPPORTED}") from None


def describe_service(service: str) -> str:
    data = export()
    metrics: dict[str, list[Series]] = {}
    for series in data.series:
        if series.labels.get("service") == service:
            metrics.setdefault(series.labels["__name__"], []).append(series)
    if not metrics:
        return f'service="{service}" has no metrics in this export (only logs or deploys).'
    lines = [
        f'service="{service}" in cluster {data.cluster}: {len(metrics)} metrics, '
        f"{sum(len(items) for items in metrics.values())} series, "
        f"samples every {data.step}s from {iso(data.start)} to {iso(data.end)}",
    ]
    for name, items in sorted(metrics.items()):
        lines.extend(describe_metric(name, items, data))
    return "\n".join(lines)


def describe_metric(name: str, items: list[Series], data: Export) -> list[str]:
    kind = "counter" if name.endswith("_total") else "histogram" if name.endswith("_bucket") else "gauge"
    lines = [f"{name} ({kind}, {len(items)} series)"]
    label_values: dict[str, set[str]] = {}
    for series in items:
        for key, value in series.labels.items():
            if key not in ("__name__", "service", "namespace"):
                label_values.setdefault(key, set()).add(value)
    for key, values in sorted(label_values.items()):
        ordered = sorted(values, key=lambda v: (float(v), v) if _is_number(v) else (math.inf, v))
        lines.append(f"    {key}: {', '.join(ordered)}")
    partial: dict[str, set[str]] = {}  # a sample span other than the whole export -> its pods
    for series in items:
        series_end = series.start + (len(series.values) - 1) * series.step
        if series.start != data.start or series_end != data.end:
            span = f"{hhmm(series.start)}..{hhmm(series_end)} UTC"
            partial.setdefault(span, set()).add(series.labels.get("pod", "?"))
    for span, pods in sorted(partial.items()):
        lines.append(f"    samples only {span} for pod {', '.join(sorted(pods))}")
    return lines


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def render_instant(promql: str, ts: int, value: Value) -> str:
    if isinstance(value, list):
        body = {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": labels, "value": [ts, format_value(v)]} for labels, v in value],
            },
        }
        readable = [f"  {label_text(labels)} = {short(v)}" for labels, v in value] or ["  (empty result)"]
    else:
        body = {"status": "success", "data": {"resultType": "scalar", "result": [ts, format_value(value)]}}
        readable = [f"  scalar = {short(value)}"]
    return "\n".join(
        [
            f"query: {promql}",
            f"evaluated at {iso(ts)} (instant query)",
            json.dumps(body, separators=(",", ":")),
            f"readable ({iso(ts)}):",
            *readable,
        ]
    )


def render_range(promql: str, times: list[int], results: list[tuple[int, Value]]) -> str:
    by_labels: dict[tuple[tuple[str, str], ...], list[tuple[int, float]]] = {}
    for ts, value in results:
        vector = value if isinstance(value, list) else [({}, value)]
        for labels, v in vector:
            by_labels.setdefault(tuple(labels.items()), []).append((ts, v))
    matrix = [
        {"metric": dict(key), "values": [[ts, format_value(v)] for ts, v in points]}
        for key, points in by_labels.items()
    ]
    readable: list[str] = []
    for key, points in by_labels.items():
        readable.append(f"  {label_text(dict(key))}:")
        row = [f"{hhmm(ts)} {short(v)}" for ts, v in points]
        readable.extend("    " + " | ".join(row[i : i + 6]) for i in range(0, len(row), 6))
    body = {"status": "success", "data": {"resultType": "matrix", "result": matrix}}
    return "\n".join(
        [
            f"query: {promql}",
            f"range query from {iso(times[0])} to {iso(times[-1])}, step 60s",
            json.dumps(body, separators=(",", ":")),
            "readable (UTC):",
            *(readable or ["  (empty result)"]),
        ]
    )


def logs_server() -> MCPServer:
    app = MCPServer("logs", instructions="Logs and deploy history of the shop namespace (sample export, read-only).")

    @app.tool()
    def search(service: str, pattern: str, limit: int = 50) -> str:
        """Search a service's logs (all its pods, 2025-06-12 around the incident) for a pattern.

        `pattern` is a case-insensitive regular expression (a plain word works too; an invalid regex is
        matched literally). Returns the number of matches and the newest `limit` matching lines
        (at most 200) in time order, each with timestamp, level, pod and request id.
        """
        service = check_service(service)
        path = log_file(service)
        if not path.exists():
            raise ToolError(f"no logs are collected for service {service!r}")
        if not 1 <= limit <= 200:
            raise ToolError("limit must be between 1 and 200")
        try:
            matcher = re.compile(pattern, re.IGNORECASE)
        except re.error:
            matcher = re.compile(re.escape(pattern), re.IGNORECASE)
        lines = path.read_text(encoding="utf-8").splitlines()
        lines = [line for line in lines if line and not line.startswith("#")]
        matches = [line for line in lines if matcher.search(line)]
        shown = matches[-limit:]
        header = (
            f'logs of service="{service}" (namespace shop): {len(lines)} lines from {first_word(lines[0])} '
            f"to {first_word(lines[-1])}; {len(matches)} match /{pattern}/ (case-insensitive)"
        )
        if not matches:
            return header + "; no matching lines."
        if len(shown) < len(matches):
            header += f"; showing the newest {len(shown)}"
        return "\n".join([header + ":", *(line[:LOG_LINE_MAX] for line in shown)])

    @app.tool()
    def recent_deploys(service: str, limit: int = 5) -> str:
        """The most recent deploys (rollouts) of a service, newest first: commit, version, time, author,
        change summary, config changes, rollout result and the revision it replaced."""
        service = check_service(service)
        if not 1 <= limit <= 50:
            raise ToolError("limit must be between 1 and 50")
        entries = sorted(
            (entry for entry in deploys() if entry["service"] == service),
            key=lambda entry: entry["started_at"],
            reverse=True,
        )
        if not entries:
            return f'no deploys of service="{service}" are recorded.'
        shown = entries[:limit]
        header = f'deploys of service="{service}" (namespace shop), newest first: {len(shown)} of {len(entries)}'
        return header + "\n" + json.dumps(shown, indent=2)

    return app


def first_word(line: str) -> str:
    return line.split(" ", 1)[0]


SERVERS: dict[str, Callable[[], MCPServer]] = {"metrics": metrics_server, "logs": logs_server}


def main(argv: list[str]) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if len(argv) != 1 or argv[0] not in SERVERS:
        print(f"usage: observability_server.py {{{'|'.join(SERVERS)}}}", file=sys.stderr)
        return 2
    log.info("starting the %s tool server over stdio (data: %s)", argv[0], DATA_DIR)
    SERVERS[argv[0]]().run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
