"""The service's HTTP face: `create_app(settings)` serves the webhook, the API, the UI and `/metrics`.

The app's lifespan starts the `Service` (database, engine, and the dispatcher that drives runs:
this process on SQLite, the job queue's workers on PostgreSQL) and stops it, letting runs in
flight finish for a while.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from vectorstep.clock import Clock
from vectorstep.spec.settings import Settings
from vectorstep.web.api import router as api_router
from vectorstep.web.api.webhook import router as webhook_router
from vectorstep.web.auth import SESSION_HOURS, Auth
from vectorstep.web.deps import api_allowed, service_of
from vectorstep.web.docs import ASSETS as DOCS_ASSETS
from vectorstep.web.docs import ASSETS_PATH as DOCS_ASSETS_PATH
from vectorstep.web.docs import router as docs_router
from vectorstep.web.errors import install_error_handlers
from vectorstep.web.headers import SecurityHeaders
from vectorstep.web.limits import BodyLimit
from vectorstep.web.service import Service
from vectorstep.web.ui.calibration_pages import router as calibration_ui_router
from vectorstep.web.ui.insight_pages import router as insight_ui_router
from vectorstep.web.ui.pages import install as install_sign_in
from vectorstep.web.ui.pages import router as ui_router
from vectorstep.web.ui.replay_pages import router as replay_ui_router
from vectorstep.web.ui.version_pages import router as version_ui_router

STATIC = Path(__file__).parent / "ui" / "static"
SESSION_COOKIE = "vectorstep_session"


def create_app(settings: Settings, *, clock: Clock | None = None, workers_inline: bool = True) -> FastAPI:
    """`workers_inline`: on PostgreSQL this process also takes runs off the queue (otherwise only
    `vectorstep worker` processes do)."""
    service = Service(settings, clock=clock, workers_inline=workers_inline)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title="VectorStep",
        version=version("vectorstep"),
        summary="Multi-step agent pipelines whose steps act only when their trust vector allows.",
        lifespan=lifespan,
        # Served below, behind the same sign-in as everything else.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    # Set VECTORSTEP_SESSION_SECRET to keep people signed in across restarts and processes.
    session_secret = os.environ.get("VECTORSTEP_SESSION_SECRET") or secrets.token_urlsafe(32)
    app.state.service = service
    app.state.auth = Auth(settings.spec.auth.tokens, session_secret)
    public_url = settings.spec.server.public_url or ""
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit)
    app.add_middleware(
        SessionMiddleware,
        secret_key=session_secret,
        session_cookie=SESSION_COOKIE,
        max_age=SESSION_HOURS * 3600,
        same_site="strict",
        https_only=public_url.startswith("https://"),
    )
    install_error_handlers(app)
    install_sign_in(app)
    app.include_router(webhook_router)
    app.include_router(api_router)
    app.include_router(ui_router)
    app.include_router(calibration_ui_router)
    app.include_router(insight_ui_router)
    app.include_router(replay_ui_router)
    app.include_router(version_ui_router)
    app.include_router(docs_router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="static")
    app.mount(DOCS_ASSETS_PATH, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")

    @app.get("/health", tags=["service"])
    async def health(request: Request) -> JSONResponse:
        """Open to everyone: whether the service and its database answer."""
        served = service_of(request)
        database_ok = await served.database_answers()
        body: dict[str, object] = {
            "status": "ok" if database_ok else "degraded",
            "database": database_ok,
            "runs_in_flight": served.dispatcher.in_flight,
            "dispatch": served.dispatcher.name,
            "warming": served.warming,
            "agent_runtime": served.engine.runtime.health(),
        }
        if database_ok and served.queued:  # the queue's workers that beat, in every process
            body["workers"] = await served.dispatcher.workers()
        return JSONResponse(body, status_code=200 if database_ok else 503)

    @app.get("/metrics", tags=["service"], dependencies=[Depends(api_allowed("read"))])
    async def metrics(request: Request) -> Response:
        """Prometheus metrics of production runs (SYSTEM.md §15)."""
        return Response(await service_of(request).metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return Response(status_code=307, headers={"location": "/ui/"})

    return app
