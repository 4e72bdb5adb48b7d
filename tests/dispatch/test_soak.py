"""The short soak (the full one is `benchmarks/bench_soak.py`): 300 webhooks from 8 clients on
PostgreSQL, 1 intake process and 3 workers, a random worker killed every 3 s and restarted 0-2 s
later. Nothing accepted is lost, duplicated or left unfinished, and no finished step runs again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.fleet import Fleet
from tests.fixtures.soak import Soak, soak_project

pytestmark = pytest.mark.postgres


@pytest.mark.timeout(300)
def test_killing_workers_under_load_loses_duplicates_and_strands_nothing(tmp_path: Path, postgres_url: str) -> None:
    project = soak_project(tmp_path / "project", postgres_url)
    fleet = Fleet(project.config, tmp_path / "logs")
    try:
        result = Soak(fleet, postgres_url, workers=3).run(webhooks=300, clients=8, kill_every=3, settle_timeout=150)
    finally:
        fleet.stop()
    summary = f"{result}\n{fleet.all_logs()[-4000:]}"
    assert result.kills >= 3, summary
    assert len(result.accepted) == 300 and not result.refused, summary
    assert result.duplicates_sent and not result.duplicates_wrong, summary
    assert result.runs == 300 and not result.missing and not result.extra_runs, summary  # 0 lost, 0 duplicated
    assert not result.not_ended and not result.not_completed, summary  # 0 stuck; every run completed
    assert not result.steps_twice, summary  # no finished step ran again
    assert result.approvals_decided, summary
