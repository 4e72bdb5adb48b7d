"""Who is calling: API tokens from `auth.tokens` (Bearer, compared in constant time) and UI sessions.

With no tokens configured, the service is open — and `vectorstep serve` then refuses to listen
beyond localhost. The UI signs in with a token into a signed, HTTP-only session cookie; its forms
carry a per-session CSRF token.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from fastapi import HTTPException, Request, status

from vectorstep.spec.service import TokenSpec

SESSION_KEY = "principal"
CSRF_KEY = "csrf"


@dataclass(frozen=True)
class Principal:
    name: str
    team: str | None = None


LOCAL = Principal("local")


class Auth:
    def __init__(self, tokens: list[TokenSpec]) -> None:
        self._tokens = tokens

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def check_token(self, given: str) -> Principal | None:
        """Every token is compared, in constant time, so timing tells nothing about which one matched."""
        found: Principal | None = None
        for token in self._tokens:
            if hmac.compare_digest(token.token.encode(), given.encode()):
                found = Principal(token.name, token.team)
        return found

    def from_bearer(self, request: Request) -> Principal | None:
        if not self.enabled:
            return LOCAL
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self.check_token(token.strip())

    def from_session(self, request: Request) -> Principal | None:
        if not self.enabled:
            return LOCAL
        data = request.session.get(SESSION_KEY)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        # A token removed from the configuration ends the sessions it opened.
        if not any(token.name == data["name"] for token in self._tokens):
            return None
        return Principal(data["name"], data.get("team"))

    def api_principal(self, request: Request) -> Principal:
        principal = self.from_bearer(request)
        if principal is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                detail="a valid API token is required (Authorization: Bearer <token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return principal


def csrf_token(request: Request) -> str:
    token = request.session.get(CSRF_KEY)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(24)
        request.session[CSRF_KEY] = token
    return token


def check_csrf(request: Request, given: str | None) -> None:
    expected = request.session.get(CSRF_KEY)
    if not isinstance(expected, str) or not given or not hmac.compare_digest(expected, given):
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="the form is stale or was not sent from this site")
