"""PostgreSQL only: the job queue's tables (procrastinate) and a notification for every run log line.

Runs on PostgreSQL are dispatched as procrastinate jobs, so its schema lives beside ours and is
created here, once, by the procrastinate version VectorStep pins. Every line written to a run's
log is announced on the channel `vectorstep_run_events` (payload `<run id> <event>`), so a page
served by any process follows a run driven by any other. An index finds the queue's jobs of a
run. SQLite has none of it: one process drives and serves there.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op
from sqlalchemy.util import await_only

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

RUN_EVENTS_TRIGGER = """
CREATE FUNCTION vectorstep_notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('vectorstep_run_events', NEW.run_id || ' ' || NEW.event);
    RETURN NULL;
END;
$$;
CREATE TRIGGER vectorstep_run_event_inserted
    AFTER INSERT ON pipeline_run_events
    FOR EACH ROW EXECUTE FUNCTION vectorstep_notify_run_event();
"""

# The workers' maintenance asks, for each run, whether a job of it waits or works: by its lock.
# (procrastinate's own indexes on `lock` cover running jobs only.)
JOBS_BY_LOCK = """
CREATE INDEX vectorstep_jobs_by_lock ON procrastinate_jobs (lock) WHERE status IN ('todo', 'doing');
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager  # noqa: PLC0415 - PostgreSQL installations only

    # Both scripts hold several statements and dollar-quoted bodies: asyncpg runs such a script
    # as one simple query (a prepared statement would take only one), inside this transaction.
    driver = bind.connection.driver_connection
    assert driver is not None
    await_only(driver.execute(SchemaManager.get_schema()))
    await_only(driver.execute(RUN_EVENTS_TRIGGER))
    await_only(driver.execute(JOBS_BY_LOCK))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    driver = bind.connection.driver_connection
    assert driver is not None
    await_only(driver.execute(DROP_ALL))


DROP_ALL = """
DROP INDEX IF EXISTS vectorstep_jobs_by_lock;
DROP TRIGGER IF EXISTS vectorstep_run_event_inserted ON pipeline_run_events;
DROP FUNCTION IF EXISTS vectorstep_notify_run_event();
DROP TABLE IF EXISTS
    procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs, procrastinate_workers CASCADE;
DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type, procrastinate_job_to_defer_v1 CASCADE;
DO $$
DECLARE found record;
BEGIN
    FOR found IN SELECT oid::regprocedure AS signature FROM pg_proc WHERE proname LIKE 'procrastinate\\_%' LOOP
        EXECUTE 'DROP FUNCTION ' || found.signature || ' CASCADE';
    END LOOP;
END;
$$;
"""
