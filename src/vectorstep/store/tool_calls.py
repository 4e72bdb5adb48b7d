"""Per step, how often its agent called each tool and how many of those calls failed: a summary of the trace,
written with the step so the insights pages group rows instead of reading every stored trace."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import Connection, insert

from vectorstep.domain.records import StepRecord
from vectorstep.domain.storable import storable_text
from vectorstep.store.tables import step_tool_calls


def tool_call_rows(record: StepRecord) -> list[dict[str, Any]]:
    """One row per tool the step called; a denial counts as a call that failed (the agent asked, got no result)."""
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    denied: Counter[str] = Counter()
    for event in record.trace:
        name = event.name or "unnamed"
        if event.type == "tool_call":
            calls[name] += 1
        elif event.type == "tool_denied":
            denied[name] += 1
        elif event.type == "tool_result" and event.is_error:
            errors[name] += 1
    # The loop records a denial and then an error result for it: count that failure once.
    return [
        {
            "run_id": record.run_id,
            "step_name": record.name,
            "tool_name": storable_text(name)[:200],  # escaped first: an escape must not push it past the column
            "calls": calls[name],
            "errors": max(errors[name], denied[name]),
            "denied": denied[name],
            "started_at": record.started_at,
        }
        for name in sorted(calls | denied)
    ]


def insert_tool_calls(connection: Connection, record: StepRecord) -> None:
    rows = tool_call_rows(record)
    if rows:
        connection.execute(insert(step_tool_calls), rows)
