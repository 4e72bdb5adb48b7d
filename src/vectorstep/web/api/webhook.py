"""`POST /webhook` (SYSTEM.md §12): normalise, resolve, dedup, stage gate, concurrency cap, then 202 with the run id."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse

from vectorstep.domain.bounded_json import UnboundedJSON, parse_bounded_json
from vectorstep.errors import PayloadError
from vectorstep.intake import SOURCES, Strategy, normalise
from vectorstep.intake.resolve import resolve
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of, unknown_pipeline, visible_pipelines
from vectorstep.web.service import Service

router = APIRouter(tags=["intake"])
RETRY_AFTER_SECONDS = 5


@router.post(
    "/webhook",
    status_code=202,
    responses={
        200: {"description": "deduplicated (the existing run id) or skipped_testing"},
        202: {
            "description": "accepted (the new run id; `replaces_run_id` when it takes over a lost run of the same "
            "event), or ignored_resolved: a resolved Alertmanager alert"
        },
        400: {"description": "the payload is not what the source sends (the reason is in `detail`)"},
        422: {"description": "no pipeline matches, or the pipeline cannot run (its problems are listed)"},
        429: {"description": "overloaded: too many runs in flight; retry later"},
    },
)
async def webhook(
    request: Request,
    principal: Annotated[Principal, Depends(api_allowed("intake"))],
    source: Annotated[str | None, Query(description="alertmanager, generic or grafana")] = None,
    x_pipeline_source: Annotated[str | None, Header()] = None,
    allow_testing: Annotated[bool, Query(description="also run pipelines in stage `testing`")] = False,
    strategy: Annotated[Strategy, Query(description="Alertmanager: most_severe alert or common_labels")] = (
        "most_severe"
    ),
) -> JSONResponse:
    """An event from Alertmanager, Grafana or any producer; the run row exists before the 202."""
    service = service_of(request)
    chosen = source or x_pipeline_source
    if chosen is None:
        raise PayloadError(f"say which source sent this: ?source= or X-Pipeline-Source: {' | '.join(SOURCES)}")
    context = normalise(chosen, await _json_body(request), service.clock.now(), strategy=strategy)
    context = replace(context, team=_event_team(principal, context.team))
    resolved = chosen == "alertmanager" and context.metadata.get("status") == "resolved"
    if resolved and service.settings.spec.intake.alertmanager.resolved == "ignore":
        detail = "a resolved alert starts no run (intake.alertmanager.resolved: run changes that)"
        return JSONResponse({"status": "ignored_resolved", "detail": detail}, status_code=202)
    loaded = resolve(context, visible_pipelines(service, principal))
    if loaded is None:
        detail = _no_match(context.pipeline, service, principal)
        return JSONResponse({"status": "no_match", "detail": detail}, status_code=422)
    outcome = await service.accept(loaded, context, gated=True, allow_testing=allow_testing)
    body: dict[str, Any] = {"status": outcome.status, "run_id": outcome.run_id, "pipeline": outcome.pipeline}
    if outcome.status == "accepted":
        if outcome.replaces:
            body["replaces_run_id"] = outcome.replaces
            body["detail"] = (
                f"run {outcome.replaces} of this event was lost (interrupted, or failed by VectorStep itself): "
                "this run starts its work again"
            )
        return JSONResponse(body, status_code=202)
    if outcome.status == "overloaded":
        body["detail"] = _overloaded(service)
        return JSONResponse(body, status_code=429, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    if outcome.status == "skipped_testing":
        body["detail"] = f"pipeline {loaded.spec.name} is in stage testing; send allow_testing=true to run it"
    else:
        body["detail"] = f"run {outcome.run_id} already handles this event"
    return JSONResponse(body, status_code=200)


async def _json_body(request: Request) -> Any:
    """The body as JSON, within bounds: size (counted while it arrives), depth, and no NaN or Infinity."""
    body = await request.body()
    if not body.strip():
        raise PayloadError("the request has no body; send the event as JSON")
    try:
        return parse_bounded_json(body)
    except UnboundedJSON as error:
        raise PayloadError(str(error)) from None


def _overloaded(service: Service) -> str:
    concurrency = service.settings.spec.concurrency
    if service.queued:
        return f"{concurrency.max_queued} runs wait for a worker (concurrency.max_queued); retry later"
    return f"{concurrency.max_runs} runs are in flight (concurrency.max_runs); retry later"


def _event_team(principal: Principal, sent: str | None) -> str | None:
    """A token limited to teams speaks for them: the event's own team when it is one of them, else its first."""
    if principal.teams is None or sent in principal.teams:
        return sent
    return principal.teams[0]


def _no_match(named: str | None, service: Service, principal: Principal) -> str:
    if named:
        return unknown_pipeline(service, principal, named)
    return "no pipeline's trigger.match holds for this event (tried by priority, then file name)"
