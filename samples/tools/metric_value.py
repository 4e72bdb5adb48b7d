"""Print the value of one PromQL expression over the sample export, as a bare number: a shell check's helper.

    python tools/metric_value.py --query 'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m]))'
    python tools/metric_value.py --query '...' --at 2025-06-12T14:03:00Z

The expression is evaluated by promql.py, the same code the `metrics__query` tool of the MCP server
runs, at the end of the export (2025-06-12T14:12:00Z) unless --at says otherwise. It must come to
one number: a scalar, or a vector of exactly one series. Then stdout is that number, as Prometheus
prints it (e.g. `0.042`), and the exit code is 0; a shell check reads it as `result`:

    expect: "result | float > 0.02"

Anything else is not a number and says so: an expression it cannot evaluate (exit 2), an empty
result, several series, or NaN (exit 1). The reason goes to stderr and stdout stays empty, so a
check fails closed with the reason in its detail instead of comparing a made-up value.
Standard library only.
"""

from __future__ import annotations

import argparse
import math
import sys
from datetime import datetime

from promql import PromQLError, evaluate, export, format_value, iso, label_text

EXIT_NO_NUMBER = 1
EXIT_BAD_QUERY = 2


def parse_time(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give a time zone, e.g. {text}Z")
    return int(moment.timestamp())


def one_number(query: str, at: int | None) -> tuple[float | None, str]:
    """The expression's single value, or None and why there is none; raises PromQLError."""
    ts, value = evaluate(query, at)
    if isinstance(value, list):
        if not value:
            return None, f"empty result at {iso(ts)}: no series matches {query!r}"
        if len(value) > 1:
            shown = ", ".join(f"{label_text(labels)} = {format_value(number)}" for labels, number in value[:5])
            more = f" and {len(value) - 5} more" if len(value) > 5 else ""
            return None, f"{len(value)} series, not one, at {iso(ts)} (aggregate them): {shown}{more}"
        value = value[0][1]
    if math.isnan(value):
        return None, f"the value at {iso(ts)} is NaN (e.g. 0/0: no requests at all)"
    return value, ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Print one PromQL value over the sample Prometheus export.")
    parser.add_argument("--query", required=True, help="a PromQL expression that comes to one number")
    parser.add_argument("--at", type=parse_time, help="evaluation time, ISO 8601 (default: the end of the export)")
    options = parser.parse_args(argv)
    data = export()
    if options.at is not None and not data.start <= options.at <= data.end:
        print(f"--at must lie between {iso(data.start)} and {iso(data.end)}", file=sys.stderr)
        return EXIT_BAD_QUERY
    try:
        value, reason = one_number(options.query, options.at)
    except PromQLError as error:
        print(f"cannot evaluate {options.query!r}: {error}", file=sys.stderr)
        return EXIT_BAD_QUERY
    if value is None:
        print(reason, file=sys.stderr)
        return EXIT_NO_NUMBER
    print(format_value(value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
