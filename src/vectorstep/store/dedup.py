"""One run per event: the dedup key of (pipeline, fingerprint), taken in the same transaction as the run row."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Connection, insert, select, update

from vectorstep.domain.records import DedupRule, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.errors import DuplicateRunError
from vectorstep.store.tables import pipeline_runs, run_dedup


def claim_dedup(connection: Connection, run: RunRecord) -> None:
    """Take the event's dedup key, unless a run holding it is in flight or started within the window."""
    assert run.dedup is not None
    key = run.dedup.key
    held = connection.execute(select(run_dedup.c.run_id).where(run_dedup.c.dedup_key == key)).first()
    if held is None:
        connection.execute(insert(run_dedup).values(dedup_key=key, run_id=run.run_id, started_at=run.started_at))
        return
    existing = connection.execute(
        select(pipeline_runs.c.status, pipeline_runs.c.started_at, pipeline_runs.c.error).where(
            pipeline_runs.c.id == held.run_id
        )
    ).first()
    if existing is not None and not _lost(RunStatus(existing.status), existing.error):
        in_flight = not RunStatus(existing.status).is_terminal
        recent = existing.started_at >= run.started_at - timedelta(seconds=run.dedup.window_seconds)
        if in_flight or recent:
            raise DuplicateRunError(held.run_id)
    connection.execute(
        update(run_dedup).where(run_dedup.c.dedup_key == key).values(run_id=run.run_id, started_at=run.started_at)
    )


def _lost(status: RunStatus, error: str | None) -> bool:
    """A run that ended without doing its work for reasons of ours, not of the event: its sender's
    retry is new work, never a duplicate (a process stopped under it, or VectorStep itself failed)."""
    return status is RunStatus.INTERRUPTED or (
        status is RunStatus.FAILED and (error or "").startswith("internal error")
    )


def lost_holder(connection: Connection, dedup: DedupRule) -> str | None:
    """The run that holds the event's key but was lost (its sender's retry starts new work), if any."""
    held = connection.execute(
        select(pipeline_runs.c.id, pipeline_runs.c.status, pipeline_runs.c.error)
        .join(run_dedup, run_dedup.c.run_id == pipeline_runs.c.id)
        .where(run_dedup.c.dedup_key == dedup.key)
    ).first()
    if held is None or not _lost(RunStatus(held.status), held.error):
        return None
    return str(held.id)
