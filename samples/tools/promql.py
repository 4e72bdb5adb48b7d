"""The sample Prometheus export and a small, honest PromQL evaluator over it (standard library only).

Shared by the MCP tool server (observability_server.py, tool `metrics__query`) and the deterministic
check helper (metric_value.py), so an agent's tool and a check compute a figure the same way.

The export (../data/metrics.json) holds the `shop` namespace on 2025-06-12, one sample a minute; a
query is evaluated at a fixed time, the end of the export. Supported: selectors with `=`, `!=`, `=~`,
`!~` matchers; `rate`, `increase`, `avg_over_time`, `max_over_time`, `min_over_time` over a range;
`sum`, `avg`, `max`, `min`, `count` with `by (...)` / `without (...)`; `histogram_quantile`;
`+ - * /` between vectors (one-to-one on identical labels) and numbers. Anything else raises
PromQLError saying what is supported, never a made-up number.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

Labels = dict[str, str]


# --------------------------------------------------------------------------- the export


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


def iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hhmm(ts: int) -> str:
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


def evaluate(promql: str, ts: int | None = None) -> tuple[int, Value]:
    """Evaluate an expression at `ts` (default: the end of the export); raises PromQLError."""
    data = export()
    at = data.end if ts is None else ts
    return at, Parser(promql, data).parse()(at)
