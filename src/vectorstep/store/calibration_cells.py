"""Calibration counters, kept as history lands (SYSTEM.md §10): per bucket and cell, labelled steps and the
sum of their labels.

A production step with a predicted trust is counted in its bucket's cell once it has a label: its own
latest mark, else 0 for a failed check, else its run's latest mark. Each step row remembers the label
it is counted with, so a new mark moves the counters by the difference — a step mark for that step,
a run mark for the run's steps that have no mark of their own and passed their checks. Every change
is made in the transaction that stores the step or the mark, so counters and history never disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from vectorstep.domain.calibration import Bucket, cell_of, cells_of, label_of
from vectorstep.domain.records import StepRecord
from vectorstep.store.tables import calibration_cells, pipeline_runs, pipeline_steps, run_feedback, step_feedback

SCORES = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0}
# The columns of a step that name its calibration bucket (`bucket_of_row` reads them back).
BUCKET_COLUMNS = (
    pipeline_steps.c.step_name,
    pipeline_steps.c.executor,
    pipeline_steps.c.agent,
    pipeline_steps.c.model,
    pipeline_steps.c.provider,
    pipeline_steps.c.prompt_hash,
    pipeline_steps.c.agent_version,
)


# Built once (they run for every step stored): building a statement costs more than running it.
_RUN_STAGE = select(pipeline_runs.c.stage).where(pipeline_runs.c.id == bindparam("run_id"))
_LATEST_RUN_MARK = (
    select(run_feedback.c.label)
    .where(run_feedback.c.run_id == bindparam("run_id"))
    .order_by(run_feedback.c.id.desc())
    .limit(1)
)


def step_columns(connection: Connection, record: StepRecord) -> dict[str, Any]:
    """The calibration columns of a step about to be stored (nothing outside production)."""
    if record.effective_confidence is None:
        return {}
    stage = connection.execute(_RUN_STAGE, {"run_id": record.run_id}).scalar()
    if stage != "production":
        return {}
    bucket = Bucket.of(
        record.name,
        executor=record.executor,
        agent=record.agent,
        model=record.model,
        provider=record.provider,
        prompt_hash=record.prompt_hash,
        agent_version=record.agent_version,
    )
    label = label_of(None, record.deterministic_passed is False, latest_run_mark(connection, record.run_id))
    return {"calibration_bucket": bucket.key, "calibration_cell": cell_of(record.effective_confidence), "label": label}


def count_new_step(connection: Connection, columns: dict[str, Any]) -> None:
    if columns and columns["label"] is not None:
        _add(connection, columns["calibration_bucket"], columns["calibration_cell"], 1, columns["label"])


def latest_run_mark(connection: Connection, run_id: str) -> float | None:
    label = connection.execute(_LATEST_RUN_MARK, {"run_id": run_id}).scalar()
    return None if label is None else SCORES[str(label)]


def relabel_step(connection: Connection, run_id: str, step_name: str, label: str) -> None:
    """A person marked this step: it is counted with that mark from now on."""
    steps = pipeline_steps.c
    row = connection.execute(
        select(steps.id, steps.calibration_bucket, steps.calibration_cell, steps.calibration_label).where(
            steps.run_id == run_id, steps.step_name == step_name, steps.calibration_bucket.is_not(None)
        )
    ).first()
    if row is not None:
        _move(connection, row, SCORES[label])


def relabel_run(connection: Connection, run_id: str, label: str) -> None:
    """A person marked the run: its steps without a mark of their own and without a failed check follow it."""
    steps = pipeline_steps.c
    own = select(step_feedback.c.id).where(
        step_feedback.c.run_id == steps.run_id, step_feedback.c.step_name == steps.step_name
    )
    rows = connection.execute(
        select(steps.id, steps.calibration_bucket, steps.calibration_cell, steps.calibration_label).where(
            steps.run_id == run_id,
            steps.calibration_bucket.is_not(None),
            steps.deterministic_passed.is_not(False),
            ~own.exists(),
        )
    ).all()
    for row in rows:
        _move(connection, row, SCORES[label])


def _move(connection: Connection, row: Any, label: float) -> None:
    old = row.calibration_label
    if old == label:
        return
    connection.execute(update(pipeline_steps).where(pipeline_steps.c.id == row.id).values(calibration_label=label))
    if old is None:
        _add(connection, row.calibration_bucket, row.calibration_cell, 1, label)
    else:
        _add(connection, row.calibration_bucket, row.calibration_cell, 0, label - old)


def _add(connection: Connection, bucket_key: str, cell: int, n: int, total: float) -> None:
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(calibration_cells).values(bucket_key=bucket_key, cell=cell, n=n, total=total)
    table = calibration_cells.c
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=[table.bucket_key, table.cell],
            set_={"n": table.n + statement.excluded.n, "total": table.total + statement.excluded.total},
        )
    )


def counts(connection: Connection, bucket: Bucket, low: float, high: float) -> tuple[int, float]:
    cells = cells_of(low, high)
    table = calibration_cells.c
    row = connection.execute(
        select(func.coalesce(func.sum(table.n), 0), func.coalesce(func.sum(table.total), 0.0)).where(
            table.bucket_key == bucket.key, table.cell >= cells.start, table.cell < cells.stop
        )
    ).one()
    return int(row[0]), float(row[1])


def rebuild(connection: Connection) -> int:
    """Every counter worked out again from the whole history (a migration's backfill); returns the steps counted."""
    steps, runs = pipeline_steps.c, pipeline_runs.c
    found = connection.execute(
        select(steps.id, steps.run_id, *BUCKET_COLUMNS, steps.effective_confidence, steps.deterministic_passed)
        .join(pipeline_runs, runs.id == steps.run_id)
        .where(runs.stage == "production", steps.effective_confidence.is_not(None))
    ).all()
    own = latest_marks(connection, step_feedback, with_step=True)
    of_run = latest_marks(connection, run_feedback, with_step=False)
    totals: dict[tuple[str, int], list[float]] = {}
    counted = 0
    cleared = {"calibration_bucket": None, "calibration_cell": None, "calibration_label": None}
    connection.execute(update(pipeline_steps).values(**cleared))
    connection.execute(calibration_cells.delete())
    updates = []
    for row in found:
        key = bucket_of_row(row).key
        cell = cell_of(row.effective_confidence)
        failed = row.deterministic_passed is False
        label = label_of(own.get((row.run_id, row.step_name)), failed, of_run.get((row.run_id, None)))
        updates.append({"row_id": row.id, "bucket": key, "cell": cell, "label": label})
        if label is not None:
            total = totals.setdefault((key, cell), [0, 0.0])
            total[0] += 1
            total[1] += label
            counted += 1
    if updates:  # one statement, executed for every row (executemany): fast on a large history too
        connection.execute(
            update(pipeline_steps)
            .where(pipeline_steps.c.id == bindparam("row_id"))
            .values(
                calibration_bucket=bindparam("bucket"),
                calibration_cell=bindparam("cell"),
                calibration_label=bindparam("label"),
            ),
            updates,
        )
    _insert_totals(connection, totals.items())
    return counted


def bucket_of_row(row: Any) -> Bucket:
    return Bucket.of(
        row.step_name,
        executor=row.executor,
        agent=row.agent,
        model=row.model,
        provider=row.provider,
        prompt_hash=row.prompt_hash,
        agent_version=row.agent_version,
    )


def _insert_totals(connection: Connection, totals: Iterable[tuple[tuple[str, int], list[float]]]) -> None:
    rows = [{"bucket_key": key, "cell": cell, "n": int(n), "total": total} for (key, cell), (n, total) in totals]
    if rows:
        connection.execute(calibration_cells.insert(), rows)


def same_as(column: Any, value: str | None) -> Any:
    """`column = value`, where a missing value matches only a missing one (SQL's `=` never matches NULL)."""
    return column.is_(None) if value is None else column == value


def latest_marks(
    connection: Connection, table: Any, *, with_step: bool, run_ids: Collection[str] | None = None
) -> dict[tuple[str, str | None], float]:
    """The latest mark per run (and step), of `run_ids` or of all: re-marking replaces, the history stays."""
    columns = table.c
    keys = [columns.run_id, *([columns.step_name] if with_step else [])]
    newest = select(*keys, func.max(columns.id).label("id")).group_by(*keys)
    if run_ids is not None:
        newest = newest.where(columns.run_id.in_(run_ids))
    latest = newest.subquery()
    rows = connection.execute(select(table).join(latest, columns.id == latest.c.id)).mappings()
    return {(row["run_id"], row["step_name"] if with_step else None): SCORES[row["label"]] for row in rows}
