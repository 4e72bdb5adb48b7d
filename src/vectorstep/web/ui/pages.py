"""The UI's pages under /ui. Every page needs a signed-in session when tokens are configured; forms carry CSRF."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.status import RunStatus
from vectorstep.errors import NotFoundError, PayloadError
from vectorstep.intake.generic import manual_context
from vectorstep.readiness import pipeline_readiness
from vectorstep.store.feedback import LABELS, Mark
from vectorstep.store.insights import InsightRepository
from vectorstep.store.runs import RunFilter
from vectorstep.web.auth import LOCAL, SESSION_HOURS, SESSION_KEY, Action, Principal, check_csrf, principal_of
from vectorstep.web.deps import auth_of, service_of, visible_pipeline, visible_pipelines
from vectorstep.web.redact import redacted, redacted_yaml
from vectorstep.web.ui.insight_view import period_of, trend_chart
from vectorstep.web.ui.marking_view import queue_at
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
    """The signed-in person: a live server-side session, opened with a token that is still configured unchanged."""
    auth, service = auth_of(request), service_of(request)
    if not auth.enabled:
        principal = LOCAL
    else:
        found = auth.session_token(request.session.get(SESSION_KEY))
        if found is None or not await service.sessions.alive(found[1], found[0].name, service.clock.now()):
            request.session.clear()
            raise SignInRequired
        principal = principal_of(found[0])
    request.state.principal = principal
    request.state.pending_approvals = await service.approvals.count_pending(principal.scope)
    return principal


def ui_allowed(action: Action) -> Callable[[Request], Awaitable[Principal]]:
    async def dependency(request: Request) -> Principal:
        principal = await ui_principal(request)
        principal.require(action)
        return principal

    return dependency


Reader = Annotated[Principal, Depends(ui_allowed("read"))]
Marker = Annotated[Principal, Depends(ui_allowed("mark"))]
Decider = Annotated[Principal, Depends(ui_allowed("decide"))]
Runner = Annotated[Principal, Depends(ui_allowed("run"))]
Reloader = Annotated[Principal, Depends(ui_allowed("reload"))]


async def _sign_in(request: Request, _: Exception) -> Response:
    if request.headers.get("hx-request") or "text/event-stream" in request.headers.get("accept", ""):
        return Response("sign in first", status_code=401)
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?next={quote(target)}", status_code=303)


def install(app: FastAPI) -> None:
    app.add_exception_handler(SignInRequired, _sign_in)


async def form_values(request: Request) -> dict[str, str]:
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
    values = await form_values(request)
    auth, service = auth_of(request), service_of(request)
    token = auth.check_token(values.get("token", "").strip())
    target = _local(values.get("next", "/ui/"))
    if token is None:
        return page(request, "login.html", status_code=401, next=target, failed=True)
    if not principal_of(token).may("read"):
        refused = (
            f"{token.name} has role {token.role}: it may only post events. "
            "Sign in with a viewer, operator or admin token."
        )
        return page(request, "login.html", status_code=403, next=target, failed=True, refused=refused)
    session_id = await service.sessions.open(token.name, service.clock.now(), timedelta(hours=SESSION_HOURS))
    request.session.clear()  # a new session for the signed-in person (and a fresh CSRF token)
    request.session[SESSION_KEY] = {"name": token.name, "sid": session_id, "key": auth.fingerprint(token)}
    return RedirectResponse(target, status_code=303)


@router.post("/logout")
async def logout(request: Request) -> Response:
    await form_values(request)
    found = auth_of(request).session_token(request.session.get(SESSION_KEY))
    if found is not None:  # ended for every copy of the cookie, in every process
        service = service_of(request)
        await service.sessions.end(found[1], service.clock.now())
    request.session.clear()
    return RedirectResponse("/ui/login", status_code=303)


def _local(target: str) -> str:
    """Only ever send people back into the UI (no open redirect)."""
    inside = target.startswith("/ui") or target == "/api/docs"
    return target if inside and not target.startswith("//") else "/ui/"


# -- dashboard and runs ------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def dashboard(request: Request, principal: Reader) -> Response:
    service = service_of(request)
    scope = principal.scope
    counts = await service.runs.status_counts(service.clock.now() - timedelta(hours=24), scope)
    recent = await service.runs.list_runs(RunFilter(teams=scope), limit=10)
    pending = await service.approvals.list_approvals(status=ApprovalStatus.PENDING, limit=10, teams=scope)
    pipelines = visible_pipelines(service, principal)
    days = period_of("14d", service.clock.now())
    trend = await InsightRepository(service.database).trust_trend(days.where(None, None, scope))
    return page(
        request,
        "dashboard.html",
        trend=trend_chart(trend, days.buckets),
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
    principal: Reader,
    status: str = "",
    pipeline: str = "",
    stage: str = "",
    team: str = "",
    offset: int = 0,
) -> Response:
    service = service_of(request)
    if status and status not in STATUSES:
        raise PayloadError(f"unknown status {status!r}; expected one of: {', '.join(STATUSES)}")
    where = RunFilter(
        status=status or None, pipeline=pipeline or None, stage=stage or None, team=team or None, teams=principal.scope
    )
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
        pipelines=[loaded.spec.name for loaded in visible_pipelines(service, principal)],
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: str, principal: Reader) -> Response:
    return page(request, "run.html", run=await _run_view(request, run_id, principal))


@router.get("/runs/{run_id}/live", response_class=HTMLResponse)
async def run_live(request: Request, run_id: str, principal: Reader) -> Response:
    """The changing part of a run's page, fetched again when the run moves."""
    return page(request, "run_live.html", run=await _run_view(request, run_id, principal))


async def _run_view(request: Request, run_id: str, principal: Principal) -> Any:
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    run = await service.runs.get_run(found, with_log=True)
    principal.require_team(run.team, f"run {found}")
    return run_view(run, await service.approvals.for_run(found), await service.feedback.marks(found))


@router.get("/runs/{run_id}/events")
async def run_events(request: Request, run_id: str, principal: Reader) -> StreamingResponse:
    """Server-sent events while the run moves: `step`, `log`, and `finished` (then the stream ends)."""
    service = service_of(request)
    run = await service.runs.get_run(await service.runs.resolve_run_id(run_id))
    principal.require_team(run.team, f"run {run.run_id}")

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
async def mark(request: Request, run_id: str, principal: Marker) -> Response:
    values = await form_values(request)
    label = values.get("label", "")
    if label not in LABELS:
        raise PayloadError(f"a mark is one of: {', '.join(LABELS)}")
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    principal.require_team((await service.runs.get_run(found)).team, f"run {found}")
    step = values.get("step") or None
    comment = values.get("comment", "").strip() or None
    await service.mark(Mark(found, step, label, comment, principal.name, service.clock.now()))
    back = values.get("back", "")
    if back.startswith("/ui/marking"):  # from the marking queue: the row goes, the coverage is told again
        if request.headers.get("hx-request"):
            return page(
                request, "marking_coverage.html", queue=await queue_at(request, principal.scope, back), oob=True
            )
        return RedirectResponse(_local(back), status_code=303)
    if request.headers.get("hx-request"):
        view = await _run_view(request, found, principal)
        marks = view.step_marks.get(step, []) if step else view.run_marks
        return page(request, "feedback.html", run=view, mark_step=step, marks=marks)
    return RedirectResponse(f"/ui/runs/{found}", status_code=303)


# -- approvals ---------------------------------------------------------------------------------------


@router.get("/approvals", response_class=HTMLResponse)
async def approvals_page(request: Request, principal: Reader) -> Response:
    service = service_of(request)
    scope = principal.scope
    pending = await service.approvals.list_approvals(status=ApprovalStatus.PENDING, limit=200, teams=scope)
    recent = [
        approval
        for approval in await service.approvals.list_approvals(limit=50, teams=scope)
        if approval.status is not ApprovalStatus.PENDING
    ]
    return page(request, "approvals.html", pending=pending, recent=recent)


@router.get("/approvals/{approval_id}", response_class=HTMLResponse)
async def approval_page(request: Request, approval_id: str, principal: Reader, done: str = "") -> Response:
    service = service_of(request)
    approval = await service.approvals.get_approval(approval_id)
    principal.require_team(approval.team, f"approval {approval.id}")
    if service.engine.desk is not None:
        approval = await service.engine.desk.settle(approval)
    try:
        run = await service.runs.get_run(approval.run_id)
    except NotFoundError:
        run = None
    return page(request, "approval.html", approval=approval, run=run, done=done)


@router.post("/approvals/{approval_id}/decide")
async def decide(request: Request, approval_id: str, principal: Decider) -> Response:
    values = await form_values(request)
    decision = values.get("decision")
    if decision not in ("approve", "reject"):
        raise PayloadError("the decision is approve or reject")
    service = service_of(request)
    waiting = await service.approvals.get_approval(approval_id)
    principal.require_team(waiting.team, f"approval {waiting.id}")
    approval, changed = await service.decide(waiting.id, decision == "approve", principal.name)
    done = "yes" if changed else "already"
    return RedirectResponse(f"/ui/approvals/{approval.id}?done={done}", status_code=303)


# -- pipelines ---------------------------------------------------------------------------------------


@router.get("/pipelines", response_class=HTMLResponse)
async def pipelines_page(request: Request, principal: Reader, reloaded: str = "") -> Response:
    service = service_of(request)
    return page(
        request,
        "pipelines.html",
        pipelines=visible_pipelines(service, principal),
        blocked=service.blocked,
        problems=service.problems() if principal.may("configure") else [],
        reloaded=reloaded,
    )


@router.get("/pipelines/{name}", response_class=HTMLResponse)
async def pipeline_page(request: Request, name: str, principal: Reader) -> Response:
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
    recent = await service.runs.list_runs(RunFilter(pipeline=name, teams=principal.scope), limit=20)
    source, effective = None, None
    if principal.may("configure"):  # the file and the configuration as loaded: for admins
        with contextlib.suppress(OSError):
            source = redacted_yaml(loaded.path.read_text(encoding="utf-8"))
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
        readiness=await pipeline_readiness(
            loaded, service.project.agents, service.database, now=service.clock.now(), teams=principal.scope
        ),
    )


@router.post("/pipelines/reload")
async def reload(request: Request, _: Reloader) -> Response:
    await form_values(request)
    problems = await service_of(request).reload(announce=True)
    return RedirectResponse(f"/ui/pipelines?reloaded={len(problems)}", status_code=303)


@router.post("/pipelines/{name}/run")
async def run_now(request: Request, name: str, principal: Runner) -> Response:
    values = await form_values(request)
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
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
