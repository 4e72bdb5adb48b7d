"""Who is calling, and what they may do: API tokens (Bearer, compared in constant time) and UI sessions.

With no tokens configured, the service is open — and `vectorstep serve` then refuses to listen
beyond localhost. A token has a role (what it may do) and a team scope (whose runs, approvals and
pipelines it sees); docs/security.md has the table. The UI signs in with a token into a signed,
HTTP-only session cookie that names a server-side session: signing out ends it everywhere, and so
does rotating or removing the token. Forms carry a per-session CSRF token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from fastapi import HTTPException, Request, status

from vectorstep.spec.service import Role, TokenSpec

SESSION_KEY = "principal"
CSRF_KEY = "csrf"
SESSION_HOURS = 12

Action = Literal["intake", "read", "decide", "mark", "run", "reload", "configure"]
ROLE_ACTIONS: dict[Role, frozenset[Action]] = {
    "intake": frozenset({"intake"}),
    "viewer": frozenset({"read"}),
    "operator": frozenset({"read", "decide", "mark", "run"}),
    "admin": frozenset({"intake", "read", "decide", "mark", "run", "reload", "configure"}),
}
_DOING: dict[Action, str] = {
    "intake": "post events to /webhook",
    "read": "read runs, approvals and pipelines",
    "decide": "decide approvals",
    "mark": "mark runs",
    "run": "start runs",
    "reload": "reload pipelines",
    "configure": "see or check configuration",
}


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role = "admin"
    teams: tuple[str, ...] | None = None  # None: not limited to teams

    @property
    def team(self) -> str | None:
        """The team what it starts belongs to: its first team."""
        return self.teams[0] if self.teams else None

    @property
    def scope(self) -> tuple[str, ...] | None:
        """The teams it sees, or None for all of them (an admin, or a token not limited to teams)."""
        return None if self.role == "admin" else self.teams

    def may(self, action: Action) -> bool:
        return action in ROLE_ACTIONS[self.role]

    def sees(self, team: str | None) -> bool:
        scope = self.scope
        return scope is None or (team is not None and team in scope)

    def require(self, action: Action) -> None:
        if not self.may(action):
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                detail=f"{self.name} (role {self.role}) may not {_DOING[action]}; "
                f"that takes role {' or '.join(_roles_for(action))}",
            )

    def require_team(self, team: str | None, what: str) -> None:
        if not self.sees(team):
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                detail=f"{what} belongs to {f'team {team}' if team else 'no team'}; "
                f"{self.name} sees only {', '.join(self.scope or ())}",
            )


def _roles_for(action: Action) -> list[str]:
    return [role for role, actions in ROLE_ACTIONS.items() if action in actions]


LOCAL = Principal("local")


def principal_of(token: TokenSpec) -> Principal:
    return Principal(token.name, token.role, token.scope)


class Auth:
    def __init__(self, tokens: Iterable[TokenSpec], secret: str) -> None:
        self._tokens = list(tokens)
        self._secret = secret.encode()

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def check_token(self, given: str) -> TokenSpec | None:
        """Every token is compared, in constant time, so timing tells nothing about which one matched."""
        found: TokenSpec | None = None
        for token in self._tokens:
            if hmac.compare_digest(token.token.encode(), given.encode()):
                found = token
        return found

    def fingerprint(self, token: TokenSpec) -> str:
        """What a session remembers of its token: rotating the token changes it (and ends the session)."""
        return hmac.new(self._secret, token.token.encode(), hashlib.sha256).hexdigest()[:32]

    def from_bearer(self, request: Request) -> Principal | None:
        if not self.enabled:
            return LOCAL
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        token = self.check_token(given.strip())
        return principal_of(token) if token is not None else None

    def session_token(self, data: object) -> tuple[TokenSpec, str] | None:
        """The token a session cookie was opened with, if it is still configured unchanged, and its session id."""
        if not isinstance(data, dict):
            return None
        name, session_id, fingerprint = data.get("name"), data.get("sid"), data.get("key")
        if not (isinstance(name, str) and isinstance(session_id, str) and isinstance(fingerprint, str)):
            return None
        for token in self._tokens:
            if token.name == name and hmac.compare_digest(self.fingerprint(token), fingerprint):
                return token, session_id
        return None

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
