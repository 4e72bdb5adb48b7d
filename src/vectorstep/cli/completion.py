"""Shell completion of the names people type: pipelines, run ids and approval ids.

Enabled by the shell's own line (`eval "$(_VECTORSTEP_COMPLETE=bash_source vectorstep)"`, see the
README). A completion must be quick and must never fail loudly: anything that goes wrong completes
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem
from sqlalchemy import Row, Select, select

from vectorstep.cli.output import clipped
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import Settings, find_config, load_settings
from vectorstep.store.database import connect
from vectorstep.store.tables import approvals, pipeline_runs

LIMIT = 50


def _settings(context: click.Context) -> Settings:
    return load_settings(find_config(context.params.get("config_path")))


def pipeline_names(context: click.Context, _: click.Parameter, incomplete: str) -> list[CompletionItem]:
    with contextlib.suppress(Exception):
        project = load_project(_settings(context))
        return [
            CompletionItem(name, help=clipped(loaded.spec.description, 60) or None)
            for name, loaded in sorted(project.pipelines.items())
            if name.startswith(incomplete)
        ]
    return []


def run_ids(context: click.Context, _: click.Parameter, incomplete: str) -> list[CompletionItem]:
    runs = pipeline_runs.c
    query = (
        select(runs.id, runs.pipeline_name, runs.status)
        .where(runs.id.startswith(incomplete, autoescape=True))
        .order_by(runs.started_at.desc())
        .limit(LIMIT)
    )
    return _ids(
        context, lambda rows: [CompletionItem(row.id, help=f"{row.pipeline_name} {row.status}") for row in rows], query
    )


def approval_ids(context: click.Context, _: click.Parameter, incomplete: str) -> list[CompletionItem]:
    table = approvals.c
    query = (
        select(table.id, table.pipeline_name, table.step_name)
        .where(table.id.startswith(incomplete, autoescape=True), table.status == "pending")
        .order_by(table.created_at.desc())
        .limit(LIMIT)
    )
    return _ids(
        context,
        lambda rows: [CompletionItem(row.id, help=f"{row.pipeline_name} / {row.step_name}") for row in rows],
        query,
    )


Shown = Callable[[Sequence[Row[Any]]], list[CompletionItem]]


def _ids(context: click.Context, shown: Shown, query: Select[Any]) -> list[CompletionItem]:
    with contextlib.suppress(Exception):
        return asyncio.run(_read(_settings(context).database_url, shown, query))
    return []


async def _read(url: str, shown: Shown, query: Select[Any]) -> list[CompletionItem]:
    database = connect(url)
    try:
        return shown(await database.read(lambda connection: connection.execute(query).all()))
    finally:
        await database.dispose()
