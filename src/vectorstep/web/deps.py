"""What a request handler needs: the service, and who is calling."""

from __future__ import annotations

from fastapi import Request

from vectorstep.web.auth import Auth, Principal
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
