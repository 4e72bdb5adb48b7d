"""Offline observability tools for the VectorStep demo: one MCP stdio server, started as `metrics` or `logs`.

    python observability_server.py metrics   # tools: query, list_series
    python observability_server.py logs      # tools: search, recent_deploys

Everything is read from ../data (a Prometheus export, log files and a deploy history of the `shop`
namespace on 2025-06-12). The metrics server evaluates a small, honest subset of PromQL over that
export at a fixed evaluation time (the end of the export): selectors with `=`, `!=`, `=~`, `!~`
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
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
LOG_LINE_MAX = 400
log = logging.getLogger("observability_server")

Labels = dict[str, str]


# --------------------------------------------------------------------------- sample data


@dataclass(frozen=True)
class Series:
    labels: Labels
    start: int  # unix seconds of the first sample
    step: int
    values: tuple[float, ...]

    def at(self, ts: int) -> float | None:
        """The sample at exactly `ts` (a series without one is stale there, as after a pod is gone)."""
        offset, remainder = divmod(ts - self.start, self.step)
        if remainder or offset < 0 or offset >= len(self.values):
            return None
        return self.values[offset]

    def window(self, start: int, end: int) -> list[tuple[int, float]]:
        return [
            (self.start + index * self.step, value)
            for index, value in enumerate(self.values)
            if start <= self.start + index * self.step <= end
        ]


@dataclass(frozen=True)
class Export:
    series: tuple[Series, ...]
    start: int
    end: int
    step: int
    cluster: str


def _unix(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def _iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hhmm(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M")


@cache
def export() -> Export:
    document = json.loads((DATA_DIR / "metrics.json").read_text(encoding="utf-8"))
    step = int(document["step_seconds"])
    series = tuple(
        Series(labels=dict(item["labels"]), start=_unix(item["start"]), step=step, values=tuple(item["values"]))
        for item in document["series"]
    )
    return Export(
        series=series,
        start=_unix(document["start"]),
        end=_unix(document["end"]),
        step=step,
        cluster=document["cluster"],
    )


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


# --------------------------------------------------------------------------- a small PromQL

AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "sum": sum,
    "avg": lambda values: sum(values) / len(values),
    "max": max,
    "min": min,
    "count": lambda values: float(len(values)),
}
RANGE_FUNCTIONS = {"rate", "increase", "avg_over_time", "max_over_time", "min_over_time"}
SUPPORTED = (
    "selectors with = != =~ !~; rate, increase, avg_over_time, max_over_time, min_over_time over [Nm]/[Ns]/[Nh]; "
    "sum/avg/max/min/count with by (...) or without (...); histogram_quantile(q, ...); "
    "+ - * / between vectors with identical labels, or with numbers"
)
TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?P<unit>ms|s|m|h|d)?
      | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<op>=~|!~|!=|[-+*/(){}\[\],=])
    )""",
    re.VERBOSE,
)
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class PromQLError(Exception):
    pass


@dataclass
class Token:
    kind: str
    text: str
    unit: str | None = None


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match or match.end() == position:
            raise PromQLError(f"unexpected character {text[position]!r} at position {position}")
        position = match.end()
        if match.group("number") is not None:
            tokens.append(Token("number", match.group("number"), match.group("unit")))
        elif match.group("name") is not None:
            tokens.append(Token("name", match.group("name")))
        elif match.group("string") is not None:
            tokens.append(Token("string", bytes(match.group("string")[1:-1], "utf-8").decode("unicode_escape")))
        elif match.group("op") is not None:
            tokens.append(Token("op", match.group("op")))
    return tokens


# An evaluated expression is a number or an instant vector: a list of (labels, value).
Vector = list[tuple[Labels, float]]
Value = float | Vector
Node = Callable[[int], Value]


class Parser:
    """Recursive descent over the token list; each parse method returns a function of the evaluation time."""

    def __init__(self, text: str, data: Export):
        self.tokens = tokenize(text)
        self.position = 0
        self.data = data

    def parse(self) -> Node:
        if not self.tokens:
            raise PromQLError("empty query")
        node = self.additive()
        if self.position != len(self.tokens):
            raise PromQLError(f"unexpected {self.peek().text!r} after a complete expression")
        return node

    # -- token helpers
    def peek(self) -> Token:
        if self.position >= len(self.tokens):
            return Token("end", "end of query")
        return self.tokens[self.position]

    def take(self, kind: str, text: str | None = None) -> Token:
        token = self.peek()
        if token.kind != kind or (text is not None and token.text != text):
            raise PromQLError(f"expected {text or kind}, found {token.text!r}")
        self.position += 1
        return token

    def accept(self, text: str) -> bool:
        token = self.peek()
        if token.kind in ("op", "name") and token.text == text:
            self.position += 1
            return True
        return False

    # -- grammar
    def additive(self) -> Node:
        node = self.multiplicative()
        while self.peek().kind == "op" and self.peek().text in "+-":
            node = binary(self.take("op").text, node, self.multiplicative())
        return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in "*/":
            node = binary(self.take("op").text, node, self.unary())
        return node

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "number":
            self.position += 1
            if token.unit:
                raise PromQLError(f"a duration ({token.text}{token.unit}) is only allowed inside [...]")
            number = float(token.text)
            return lambda ts: number
        if token.kind == "op" and token.text == "(":
            self.position += 1
            node = self.additive()
            self.take("op", ")")
            return node
        if token.kind == "op" and token.text == "{":
            return self.selector(None)
        if token.kind != "name":
            raise PromQLError(f"unexpected {token.text!r}")
        self.position += 1
        return self.named(token.text)

    def named(self, name: str) -> Node:
        """What follows a name: an aggregation, a function call or a plain selector."""
        if name in AGGREGATIONS:
            return self.aggregation(name)
        if name in RANGE_FUNCTIONS:
            return self.range_function(name)
        if name == "histogram_quantile":
            return self.histogram_quantile()
        if self.peek().text == "(":
            raise PromQLError(f"function {name}() is not supported by this sample server; supported: {SUPPORTED}")
        return self.selector(name)

    def grouping(self) -> tuple[str, list[str]] | None:
        for keyword in ("by", "without"):
            if self.accept(keyword):
                self.take("op", "(")
                names: list[str] = []
                while not self.accept(")"):
                    names.append(self.take("name").text)
                    if not self.accept(","):
                        self.take("op", ")")
                        break
                return keyword, names
        return None

    def aggregation(self, op: str) -> Node:
        grouping = self.grouping()
        self.take("op", "(")
        inner = self.additive()
        self.take("op", ")")
        grouping = grouping or self.grouping()
        return aggregate(op, grouping, inner)

    def range_selector(self) -> tuple[Callable[[], list[Series]], int]:
        token = self.peek()
        name = None
        if token.kind == "name":
            self.position += 1
            name = token.text
        matchers = self.matchers(name)
        self.take("op", "[")
        duration = self.take("number")
        if duration.unit is None:
            raise PromQLError("a range needs a unit, e.g. [5m]")
        self.take("op", "]")
        seconds = int(float(duration.text) * UNIT_SECONDS[duration.unit])
        return (lambda: select(self.data, matchers)), seconds

    def range_function(self, function: str) -> Node:
        self.take("op", "(")
        series_of, seconds = self.range_selector()
        self.take("op", ")")
        return over_time(function, series_of, seconds)

    def histogram_quantile(self) -> Node:
        self.take("op", "(")
        quantile = float(self.take("number").text)
        self.take("op", ",")
        inner = self.additive()
        self.take("op", ")")
        return quantiles(quantile, inner)

    def matchers(self, name: str | None) -> list[tuple[str, str, str]]:
        matchers = [("__name__", "=", name)] if name else []
        if self.accept("{"):
            while not self.accept("}"):
                label = self.take("name").text
                op = self.take("op").text
                if op not in ("=", "!=", "=~", "!~"):
                    raise PromQLError(f"unknown label matcher {op!r} (use = != =~ !~)")
                matchers.append((label, op, self.take("string").text))
                if not self.accept(","):
                    self.take("op", "}")
                    break
        if not matchers:
            raise PromQLError("a selector needs a metric name or at least one label matcher")
        return matchers

    def selector(self, name: str | None) -> Node:
        matchers = self.matchers(name)
        if self.peek().text == "[":
            raise PromQLError("a range vector like x[5m] must be wrapped in a function such as rate(...)")

        def evaluate(ts: int) -> Vector:
            out: Vector = []
            for series in select(self.data, matchers):
                value = series.at(ts)
                if value is not None:
                    out.append((dict(series.labels), float(value)))
            return out

        return evaluate


def label_matches(value: str, op: str, expected: str) -> bool:
    if op == "=":
        return value == expected
    if op == "!=":
        return value != expected
    matched = re.fullmatch(expected, value) is not None
    return matched if op == "=~" else not matched


def select(data: Export, matchers: list[tuple[str, str, str]]) -> list[Series]:
    for label, op, pattern in matchers:
        if op in ("=~", "!~"):
            try:
                re.compile(pattern)
            except re.error as error:
                raise PromQLError(f"invalid regular expression for {label}: {error}") from None
    return [
        series
        for series in data.series
        if all(label_matches(series.labels.get(label, ""), op, expected) for label, op, expected in matchers)
    ]


def without_name(labels: Labels) -> Labels:
    return {key: value for key, value in labels.items() if key != "__name__"}


def over_time(function: str, series_of: Callable[[], list[Series]], seconds: int) -> Node:
    def evaluate(ts: int) -> Vector:
        out: Vector = []
        for series in series_of():
            if series.at(ts) is None:
                continue  # stale: the series has no sample at the evaluation time
            points = series.window(ts - seconds, ts)
            values = [value for _, value in points]
            if function in ("rate", "increase"):
                if len(points) < 2:
                    continue
                increase = values[-1] - values[0]
                if increase < 0:  # a counter reset: count from zero
                    increase = values[-1]
                result = increase / (points[-1][0] - points[0][0]) if function == "rate" else increase
            elif function == "avg_over_time":
                result = sum(values) / len(values)
            elif function == "max_over_time":
                result = max(values)
            else:
                result = min(values)
            out.append((without_name(series.labels), result))
        return out

    return evaluate


def aggregate(op: str, grouping: tuple[str, list[str]] | None, inner: Node) -> Node:
    def key_of(labels: Labels) -> tuple[tuple[str, str], ...]:
        if grouping is None:
            return ()
        mode, names = grouping
        if mode == "by":
            return tuple((name, labels[name]) for name in names if name in labels)
        return tuple(sorted((k, v) for k, v in labels.items() if k not in names and k != "__name__"))

    reduce = AGGREGATIONS[op]

    def evaluate(ts: int) -> Vector:
        vector = inner(ts)
        if not isinstance(vector, list):
            raise PromQLError(f"{op}() needs a vector, not a number")
        groups: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for labels, value in vector:
            groups.setdefault(key_of(labels), []).append(value)
        return [(dict(key), reduce(values)) for key, values in sorted(groups.items())]

    return evaluate


def quantiles(quantile: float, inner: Node) -> Node:
    def evaluate(ts: int) -> Vector:
        vector = inner(ts)
        if not isinstance(vector, list):
            raise PromQLError("histogram_quantile() needs a vector of buckets")
        groups: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        for labels, value in vector:
            if "le" not in labels:
                raise PromQLError("histogram_quantile() needs `le` buckets: keep `le` in the grouping, e.g. by (le)")
            rest = tuple(sorted((k, v) for k, v in labels.items() if k not in ("le", "__name__")))
            groups.setdefault(rest, []).append((float(labels["le"]), value))
        out: Vector = []
        for key, buckets in sorted(groups.items()):
            out.append((dict(key), bucket_quantile(quantile, sorted(buckets))))
        return out

    return evaluate


def bucket_quantile(quantile: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' interpolation: linear inside the bucket holding the rank; the +Inf bucket answers its lower bound."""
    if not buckets or not math.isinf(buckets[-1][0]):
        return math.nan
    total = buckets[-1][1]
    if total == 0:
        return math.nan
    rank = quantile * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def divide(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


BINARY_OPERATORS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": divide,
}


def binary(op: str, left: Node, right: Node) -> Node:
    """Vector op vector matches one-to-one on identical labels (the metric name dropped), as PromQL does."""
    apply = BINARY_OPERATORS[op]

    def evaluate(ts: int) -> Value:
        a, b = left(ts), right(ts)
        if isinstance(a, list) and isinstance(b, list):
            right_side = {tuple(sorted(without_name(labels).items())): value for labels, value in b}
            matched = ((tuple(sorted(without_name(labels).items())), value) for labels, value in a)
            return [(dict(key), apply(value, right_side[key])) for key, value in matched if key in right_side]
        if isinstance(a, list):
            return [(without_name(labels), apply(value, b)) for labels, value in a]  # type: ignore[arg-type]
        if isinstance(b, list):
            return [(without_name(labels), apply(a, value)) for labels, value in b]
        return apply(a, b)

    return evaluate


def format_value(value: float) -> str:
    """As Prometheus prints sample values: shortest decimal form, no exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(f"{value:.15g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def short(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return format_value(value)
    return f"{value:.4g}"


def label_text(labels: Labels) -> str:
    name = labels.get("__name__", "")
    inner = ", ".join(f'{key}="{value}"' for key, value in labels.items() if key != "__name__")
    return f"{name}{{{inner}}}"


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
        f"samples every {data.step}s from {_iso(data.start)} to {_iso(data.end)}",
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
            span = f"{_hhmm(series.start)}..{_hhmm(series_end)} UTC"
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
            f"evaluated at {_iso(ts)} (instant query)",
            json.dumps(body, separators=(",", ":")),
            f"readable ({_iso(ts)}):",
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
        row = [f"{_hhmm(ts)} {short(v)}" for ts, v in points]
        readable.extend("    " + " | ".join(row[i : i + 6]) for i in range(0, len(row), 6))
    body = {"status": "success", "data": {"resultType": "matrix", "result": matrix}}
    return "\n".join(
        [
            f"query: {promql}",
            f"range query from {_iso(times[0])} to {_iso(times[-1])}, step 60s",
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
