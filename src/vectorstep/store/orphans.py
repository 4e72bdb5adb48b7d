"""PostgreSQL: runs that need a job the queue does not hold (a crash came between a write and its job).

Every way a run moves on is a job: a new run's first drive, a decided approval, an ended
sub-pipeline run. Those jobs are deferred right after the write that calls for them, on another
connection, so a process killed in between leaves a run that nothing will move. These queries find
them; the workers' maintenance defers what is missing. A run counts as held while a job of its
(`lock` = run id) waits or works, or while the worker named in its lease still beats.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from vectorstep.store.database import Database

# The queries are put together from these constant fragments only (no value is ever formatted in:
# values are bound parameters), hence the `noqa: S608`.

# A job of the run that is due or at work; a job scheduled for later (an approval's timeout) is
# not: a decision that arrived meanwhile must not wait for it.
_NO_DUE_JOB = """
NOT EXISTS (
    SELECT 1 FROM procrastinate_jobs job
     WHERE job.lock = run.id
       AND (job.status = 'doing' OR (job.status = 'todo' AND job.scheduled_at IS NULL)
            OR (job.status = 'todo' AND job.scheduled_at <= now())))
"""

# A waiting run is parked without a lease; a queue worker's lease left on one drives nothing.
_PARKED = "(run.lease_owner IS NULL OR run.lease_owner LIKE 'worker:%' OR run.lease_expires_at < :now)"

# The lease of a queue worker is `worker:<procrastinate worker id>:...`; it holds while that worker beats.
_WORKER_GONE = """
NOT EXISTS (
    SELECT 1 FROM procrastinate_workers worker
     WHERE worker.id::text = split_part(run.lease_owner, ':', 2)
       AND worker.last_heartbeat >= now() - make_interval(secs => :stalled_seconds))
"""

_UNDRIVEN = f"""
SELECT run.id, run.lease_owner FROM pipeline_runs run
 WHERE run.status = 'running'
   AND {_NO_DUE_JOB}
   AND (   (run.lease_owner IS NULL AND run.updated_at < :quiet_since)
        OR (run.lease_owner LIKE 'worker:%' AND {_WORKER_GONE})
        OR (run.lease_owner NOT LIKE 'worker:%' AND run.lease_expires_at < :now))
 ORDER BY run.started_at
 LIMIT :limit
"""  # noqa: S608

_LEASED_ELSEWHERE = f"""
SELECT run.id, run.lease_owner FROM pipeline_runs run
 WHERE run.status = 'running' AND run.lease_owner NOT LIKE 'worker:%'
   AND run.lease_expires_at >= :now AND {_NO_DUE_JOB}
 LIMIT :limit
"""  # noqa: S608

_DECIDED = f"""
SELECT run.id, latest.id AS approval_id FROM pipeline_runs run
  JOIN LATERAL (
        SELECT approval.id, approval.status, approval.expires_at, approval.decided_at, approval.step_name
          FROM approvals approval WHERE approval.run_id = run.id
         ORDER BY approval.created_at DESC LIMIT 1) latest ON true
 WHERE run.status = 'waiting' AND {_PARKED}
   AND ((latest.status <> 'pending' AND latest.decided_at < :quiet_since) OR latest.expires_at < :quiet_since)
   AND NOT EXISTS (SELECT 1 FROM pipeline_steps step
                    WHERE step.run_id = run.id AND step.step_name = latest.step_name)
   AND {_NO_DUE_JOB}
 LIMIT :limit
"""  # noqa: S608

_PARENTS = f"""
SELECT DISTINCT run.id FROM pipeline_runs run
  JOIN pipeline_runs child ON child.parent_run_id = run.id
 WHERE run.status = 'waiting' AND {_PARKED}
   AND child.status NOT IN ('running', 'waiting')
   AND NOT EXISTS (SELECT 1 FROM pipeline_steps step
                    WHERE step.run_id = run.id AND step.step_name = child.parent_step)
   AND {_NO_DUE_JOB}
 LIMIT :limit
"""  # noqa: S608


@dataclass(frozen=True)
class Orphans:
    undriven: list[tuple[str, str | None]]  # running runs nobody drives, with the lease they were left under
    leased_elsewhere: list[tuple[str, str]]  # running runs under a live lease of a process outside the queue
    decided: list[tuple[str, str]]  # waiting runs whose approval was decided or expired a while ago, with its id
    parents: list[str]  # waiting runs whose sub-pipeline run has ended


async def find_orphans(
    database: Database, now: datetime, *, quiet_since: datetime, stalled_seconds: float, limit: int = 500
) -> Orphans:
    """`quiet_since`: an unleased running run younger than this, or a decision taken since, may still
    be about to get its job from the process that wrote it."""

    def work(connection: Connection) -> Orphans:
        def rows(query: str, **values: object) -> list[tuple[str, str | None]]:
            result = connection.execute(text(query), {"now": now, "limit": limit, **values})
            return [(str(row[0]), None if row[1] is None else str(row[1])) for row in result]

        undriven = rows(_UNDRIVEN, quiet_since=quiet_since, stalled_seconds=stalled_seconds)
        elsewhere = [(run_id, str(owner)) for run_id, owner in rows(_LEASED_ELSEWHERE)]
        decided = [(run_id, str(approval)) for run_id, approval in rows(_DECIDED, quiet_since=quiet_since)]
        parents = [str(row[0]) for row in connection.execute(text(_PARENTS), {"limit": limit, "now": now})]
        return Orphans(undriven, elsewhere, decided, parents)

    return await database.read(work)


async def worker_gone(database: Database, owner: str, *, stalled_seconds: float) -> bool:
    """Whether the queue worker a lease names (`worker:<id>:…`) has stopped beating."""
    query = text(
        "SELECT 1 FROM procrastinate_workers WHERE id::text = split_part(:owner, ':', 2) "
        "AND last_heartbeat >= now() - make_interval(secs => :stalled_seconds)"
    )
    values = {"owner": owner, "stalled_seconds": stalled_seconds}
    return await database.read(lambda connection: connection.execute(query, values).first() is None)
