"""What a request handler needs: the service, and who is calling (and that they may do what they ask)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request

from vectorstep.errors import NotFoundError
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.web.auth import Action, Auth, Principal
from vectorstep.web.service import Service


def service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def auth_of(request: Request) -> Auth:
    auth: Auth = request.app.state.auth
    return auth


def api_principal(request: Request) -> Principal:
    """The API takes Bearer tokens only: a browser's session cookie cannot be used to call it from elsewhere."""
    return auth_of(request).api_principal(request)


def api_allowed(action: Action) -> Callable[[Request], Principal]:
    """A dependency: the caller, who must have a role that may do `action` (else 403)."""

    def dependency(request: Request) -> Principal:
        principal = api_principal(request)
        principal.require(action)
        return principal

    return dependency


def visible_pipelines(service: Service, principal: Principal) -> list[LoadedPipeline]:
    """The loaded pipelines the principal sees (a pipeline with no `team` is everyone's), by name."""
    found = [loaded for loaded in service.project.pipelines.values() if _sees_pipeline(principal, loaded)]
    return sorted(found, key=lambda loaded: loaded.spec.name)


def visible_pipeline(service: Service, principal: Principal, name: str) -> LoadedPipeline:
    """The pipeline `name`: 404 naming only the pipelines the principal sees; 403 when it is another team's."""
    loaded = service.project.pipelines.get(name)
    if loaded is None:
        raise NotFoundError(unknown_pipeline(service, principal, name))
    if not _sees_pipeline(principal, loaded):
        principal.require_team(loaded.spec.team, f"pipeline {name}")
    return loaded


def unknown_pipeline(service: Service, principal: Principal, name: str) -> str:
    names = [loaded.spec.name for loaded in visible_pipelines(service, principal)]
    return f"no pipeline {name!r}{did_you_mean(name, names)}; pipelines: {', '.join(names) or 'none'}"


def _sees_pipeline(principal: Principal, loaded: LoadedPipeline) -> bool:
    return loaded.spec.team is None or principal.sees(loaded.spec.team)
