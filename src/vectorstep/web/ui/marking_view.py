"""The marking queue a page shows: the steps left to mark for the filters given, within the reader's teams."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import Request

from vectorstep.store.marking import MarkingRepository, Queue, QueueFilter
from vectorstep.web.deps import service_of


async def marking_queue(
    request: Request, teams: tuple[str, ...] | None, *, pipeline: str, team: str, stage: str
) -> Queue:
    where = QueueFilter(stage=stage or None, pipeline=pipeline or None, team=team or None, teams=teams)
    return await MarkingRepository(service_of(request).database).queue(where)


async def queue_at(request: Request, teams: tuple[str, ...] | None, url: str) -> Queue:
    """The queue of a marking page's own URL (`/ui/marking?pipeline=…`)."""
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    given = {key: query.get(key, [""])[0] for key in ("pipeline", "team", "stage")}
    return await marking_queue(request, teams, **given)
