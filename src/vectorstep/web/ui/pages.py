"""The UI's pages under /ui. Every page needs a signed-in session when tokens are configured; forms carry CSRF."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.status import RunStatus
from vectorstep.errors import NotFoundError, PayloadError
from vectorstep.intake.generic import manual_context
from vectorstep.store.feedback import LABELS, Mark
from vectorstep.store.runs import RunFilter
from vectorstep.web.auth import SESSION_KEY, Principal, check_csrf
from vectorstep.web.deps import auth_of, service_of
from vectorstep.web.redact import redacted, redacted_yaml
from vectorstep.web.ui.render import page
from vectorstep.web.ui.run_view import run_view

router = APIRouter(prefix="/ui", include_in_schema=False)
PAGE_SIZE = 50
KEEPALIVE_SECONDS = 15
STATUSES = [status.value for status in RunStatus]
STAGES = ["testing", "production"]


class SignInRequired(Exception):
    pass


async def ui_principal(request: Request) -> Principal:
    principal = auth_of(request).from_session(request)
    if principal is None:
        raise SignInRequired
    request.state.principal = principal
    request.state.pending_approvals = await service_of(request).approvals.count_pending()
    return principal


Person = Annotated[Principal, Depends(ui_principal)]


async def _sign_in(request: Request, _: Exception) -> Response:
    if request.headers.get("hx-request") or "text/event-stream" in request.headers.get("accept", ""):
        return Response("sign in first", status_code=401)
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?next={quote(target)}", status_code=303)


def install(app: FastAPI) -> None:
    app.add_exception_handler(SignInRequired, _sign_in)


async def _form(request: Request) -> dict[str, str]:
    form = await request.form()
    values = {key: value for key, value in form.items() if isinstance(value, str)}
    check_csrf(request, values.get("csrf"))
    return values


# -- signing in ------------------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, next: str = "/ui/") -> Response:
    if not auth_of(request).enabled:
        return RedirectResponse("/ui/", status_code=303)
    return page(request, "login.html", next=_local(next), failed=False)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    values = await _form(request)
    principal = auth_of(request).check_token(values.get("token", "").strip())
    target = _local(values.get("next", "/ui/"))
    if principal is None:
        return page(request, "login.html", status_code=401, next=target, failed=True)
    request.session.clear()  # a new session for the signed-in person (and a fresh CSRF token)
    request.session[SESSION_KEY] = {"name": principal.name, "team": principal.team}
    return RedirectResponse(target, status_code=303)


@router.post("/logout")
async def logout(request: Request) -> Response:
    await _form(request)
    request.session.clear()
    return RedirectResponse("/ui/login", status_code=303)


def _local(target: str) -> str:
    """Only ever send people back into the UI (no open redirect)."""
    return target if target.startswith("/ui") and not target.startswith("//") else "/ui/"


# -- dashboard and runs ------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def dashboard(request: Request, _: Person) -> Response:
    service = service_of(request)
    counts = await service.runs.status_counts(service.clock.now() - timedelta(hours=24))
    recent = await service.runs.list_runs(RunFilter(), limit=10)
    pending = await service.approvals.list_approvals(status=ApprovalStatus.PENDING, limit=10)
    pipelines = sorted(service.project.pipelines.values(), key=lambda loaded: loaded.spec.name)
    return page(
        request,
        "dashboard.html",
        counts=counts,
        total=sum(counts.values()),
        recent=recent,
        pending=pending,
        pipelines=pipelines,
        blocked=service.blocked,
    )


@router.get("/runs", response_class=HTMLResponse)
async def runs_page(
    request: Request,
    _: Person,
    status: str = "",
    pipeline: str = "",
    stage: str = "",
    team: str = "",
    offset: int = 0,
) -> Response:
    service = service_of(request)
    if status and status not in STATUSES:
        raise PayloadError(f"unknown status {status!r}; expected one of: {', '.join(STATUSES)}")
    where = RunFilter(status=status or None, pipeline=pipeline or None, stage=stage or None, team=team or None)
    offset = max(0, offset)
    found = await service.runs.list_runs(where, limit=PAGE_SIZE + 1, offset=offset)
    filters = {"status": status, "pipeline": pipeline, "stage": stage, "team": team}
    return page(
        request,
        "runs.html",
        runs=found[:PAGE_SIZE],
        filters=filters,
        query="&".join(f"{key}={quote(value)}" for key, value in filters.items() if value),
        offset=offset,
        newer=max(0, offset - PAGE_SIZE) if offset else None,
        older=offset + PAGE_SIZE if len(found) > PAGE_SIZE else None,
        statuses=STATUSES,
        stages=STAGES,
        pipelines=sorted(service.project.pipelines),
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: str, _: Person) -> Response:
    return page(request, "run.html", run=await _run_view(request, run_id))


@router.get("/runs/{run_id}/live", response_class=HTMLResponse)
async def run_live(request: Request, run_id: str, _: Person) -> Response:
    """The changing part of a run's page, fetched again when the run moves."""
    return page(request, "run_live.html", run=await _run_view(request, run_id))


async def _run_view(request: Request, run_id: str) -> Any:
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    run = await service.runs.get_run(found, with_log=True)
    return run_view(run, await service.approvals.for_run(found), await service.feedback.marks(found))


@router.get("/runs/{run_id}/events")
async def run_events(request: Request, run_id: str, _: Person) -> StreamingResponse:
    """Server-sent events while the run moves: `step`, `log`, and `finished` (then the stream ends)."""
    service = service_of(request)
    run = await service.runs.get_run(await service.runs.resolve_run_id(run_id))

    async def stream() -> AsyncIterator[str]:
        if run.status.is_terminal:
            yield _event("finished")
            return
        queue = service.live.subscribe(run.run_id)
        try:
            while True:
                try:
                    kind = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": still here\n\n"  # a comment keeps proxies from closing an idle stream
                    continue
                await asyncio.sleep(0.2)  # a burst of events becomes one refresh
                while not queue.empty():
                    kind = "finished" if queue.get_nowait() == "finished" else kind
                yield _event(kind)
                if kind == "finished":
                    return
        finally:
            service.live.unsubscribe(run.run_id, queue)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


def _event(kind: str) -> str:
    return f"event: {kind}\ndata: {kind}\n\n"


@router.post("/runs/{run_id}/feedback", response_class=HTMLResponse)
async def mark(request: Request, run_id: str, principal: Person) -> Response:
    values = await _form(request)
    label = values.get("label", "")
    if label not in LABELS:
        raise PayloadError(f"a mark is one of: {', '.join(LABELS)}")
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    step = values.get("step") or None
    comment = values.get("comment", "").strip() or None
    await service.mark(Mark(found, step, label, comment, principal.name, service.clock.now()))
    if request.headers.get("hx-request"):
        view = await _run_view(request, found)
        marks = view.step_marks.get(step, []) if step else view.run_marks
        return page(request, "feedback.html", run=view, mark_step=step, marks=marks)
    return RedirectResponse(f"/ui/runs/{found}", status_code=303)


# -- approvals ---------------------------------------------------------------------------------------


@router.get("/approvals", response_class=HTMLResponse)
async def approvals_page(request: Request, _: Person) -> Response:
    service = service_of(request)
    pending = await service.approvals.list_approvals(status=ApprovalStatus.PENDING, limit=200)
    recent = [
        approval
        for approval in await service.approvals.list_approvals(limit=50)
        if approval.status is not ApprovalStatus.PENDING
    ]
    return page(request, "approvals.html", pending=pending, recent=recent)


@router.get("/approvals/{approval_id}", response_class=HTMLResponse)
async def approval_page(request: Request, approval_id: str, _: Person, done: str = "") -> Response:
    service = service_of(request)
    approval = await service.approvals.get_approval(approval_id)
    if service.engine.desk is not None:
        approval = await service.engine.desk.settle(approval)
    try:
        run = await service.runs.get_run(approval.run_id)
    except NotFoundError:
        run = None
    return page(request, "approval.html", approval=approval, run=run, done=done)


@router.post("/approvals/{approval_id}/decide")
async def decide(request: Request, approval_id: str, principal: Person) -> Response:
    values = await _form(request)
    decision = values.get("decision")
    if decision not in ("approve", "reject"):
        raise PayloadError("the decision is approve or reject")
    approval, changed = await service_of(request).decide(approval_id, decision == "approve", principal.name)
    done = "yes" if changed else "already"
    return RedirectResponse(f"/ui/approvals/{approval.id}?done={done}", status_code=303)


# -- pipelines ---------------------------------------------------------------------------------------


@router.get("/pipelines", response_class=HTMLResponse)
async def pipelines_page(request: Request, _: Person, reloaded: str = "") -> Response:
    service = service_of(request)
    pipelines = sorted(service.project.pipelines.values(), key=lambda loaded: loaded.spec.name)
    return page(
        request,
        "pipelines.html",
        pipelines=pipelines,
        blocked=service.blocked,
        problems=service.problems(),
        reloaded=reloaded,
    )


@router.get("/pipelines/{name}", response_class=HTMLResponse)
async def pipeline_page(request: Request, name: str, _: Person) -> Response:
    service = service_of(request)
    loaded = service.pipeline(name)
    recent = await service.runs.list_runs(RunFilter(pipeline=name), limit=20)
    try:
        source = redacted_yaml(loaded.path.read_text(encoding="utf-8"))
    except OSError:
        source = None
    effective = redacted(loaded.spec.model_dump(mode="json", by_alias=True, exclude_none=True))
    return page(
        request,
        "pipeline.html",
        loaded=loaded,
        spec=loaded.spec,
        source=source,
        effective=effective,
        problems=service.blocked.get(name, []),
        recent=recent,
    )


@router.post("/pipelines/reload")
async def reload(request: Request, _: Person) -> Response:
    await _form(request)
    problems = await service_of(request).reload()
    return RedirectResponse(f"/ui/pipelines?reloaded={len(problems)}", status_code=303)


@router.post("/pipelines/{name}/run")
async def run_now(request: Request, name: str, principal: Person) -> Response:
    values = await _form(request)
    service = service_of(request)
    loaded = service.pipeline(name)
    context = manual_context(
        service.clock.now(),
        pipeline=name,
        summary=values.get("summary", "").strip(),
        team=principal.team,
        metadata={"started_by": principal.name},
    )
    outcome = await service.accept(loaded, context, gated=False)
    if outcome.status == "overloaded":
        raise HTTPException(429, detail="too many runs are in flight (concurrency.max_runs); try again in a moment")
    return RedirectResponse(f"/ui/runs/{outcome.run_id}", status_code=303)
