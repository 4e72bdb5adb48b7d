"""Replay in the UI: a form per pipeline (step, candidate, mode, K), and a page per replay that shows its
progress while this process answers the samples, then its report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from vectorstep.dispatch.replay import ReplayRequest, candidate_of, replayable_steps
from vectorstep.errors import NotFoundError, RequestRefused
from vectorstep.store.replay import REPLAY_SOURCE
from vectorstep.web.api.replays import MAX_PROMPT_CHARS, replay_document, start_replay
from vectorstep.web.deps import service_of, visible_pipeline
from vectorstep.web.ui.pages import Reader, Runner, form_values
from vectorstep.web.ui.render import page

router = APIRouter(prefix="/ui", include_in_schema=False)
MEASURES = [
    ("accuracy", "Accuracy", 2),
    ("mean_trust", "Mean trust", 2),
    ("escalation_rate", "Escalation rate", 2),
    ("escalation_on_incorrect", "… of answers marked incorrect (higher is better)", 2),
    ("escalation_on_correct", "… of answers marked correct (lower is better)", 2),
    ("cost", "Cost per sample (USD)", 4),
    ("latency_ms", "Latency per sample (ms)", 0),
]


async def _form_page(request: Request, name: str, principal: Any, **extra: Any) -> Response:
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
    steps = replayable_steps(service.project, name)
    reports = await service.replays.store.reports(name, teams=principal.scope, limit=20)
    values = extra.pop("values", {})
    return page(
        request,
        "replay.html",
        status_code=extra.pop("status", 200),
        spec=loaded.spec,
        steps=steps,
        reports=reports,
        settings=service.settings.spec.replay,
        values={"k": "20", "kind": "agent", **values},
        **extra,
    )


@router.get("/pipelines/{name}/replay", response_class=HTMLResponse)
async def replay_form(request: Request, name: str, principal: Reader) -> Response:
    return await _form_page(request, name, principal)


@router.post("/pipelines/{name}/replay", response_class=HTMLResponse)
async def replay_start(request: Request, name: str, principal: Runner) -> Response:
    values = await form_values(request)
    service = service_of(request)
    visible_pipeline(service, principal, name)
    kind, chosen = values.get("kind", ""), values.get("candidate", "").strip()
    try:
        k = int(values.get("k", "20"))
    except ValueError:
        return await _form_page(request, name, principal, error="K must be a whole number", values=values, status=400)
    try:
        prompt = values.get("prompt", "")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise RequestRefused(f"the candidate prompt is longer than {MAX_PROMPT_CHARS:,} characters")
        candidate = candidate_of(
            chosen if kind == "model" else None,
            chosen if kind == "agent" else None,
            prompt if kind == "prompt" else None,
            prompt_label="the prompt written in the form",
        )
        mode = values.get("mode") or None
        request_ = ReplayRequest(name, values.get("step", ""), candidate, mode, k)  # type: ignore[arg-type]
        run_id, _ = await start_replay(service, request_)
    except (RequestRefused, NotFoundError) as error:
        return await _form_page(request, name, principal, error=str(error), values=values, status=400)
    return RedirectResponse(f"/ui/replays/{run_id}", status_code=303)


@router.get("/replays/{run_id}", response_class=HTMLResponse)
async def replay_page(request: Request, run_id: str, principal: Reader) -> Response:
    service = service_of(request)
    progress = service.replays.running.get(run_id)
    if progress is not None:
        principal.require_team(progress.team, f"replay {run_id}")
        return page(request, "replay_report.html", run_id=run_id, progress=progress, document=None, measures=MEASURES)
    run = await service.runs.get_run(await service.runs.resolve_run_id(run_id), with_log=True)
    principal.require_team(run.team, f"replay {run_id}")
    document = replay_document(run) if run.source == REPLAY_SOURCE else None
    if document is None:
        raise NotFoundError(f"run {run_id} is not a replay")
    return page(request, "replay_report.html", run_id=run.run_id, progress=None, document=document, measures=MEASURES)
