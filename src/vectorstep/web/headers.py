"""Security headers on every answer: no framing, no sniffing, no referrer leaks, and a CSP with no inline script."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The UI's scripts and styles are files it serves itself (htmx, app.js, app.css): nothing inline runs.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    b"content-security-policy": CONTENT_SECURITY_POLICY.encode(),
    b"x-frame-options": b"DENY",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"no-referrer",
}


class SecurityHeaders:
    """Pure ASGI, so streamed answers (server-sent events) pass through untouched; a route's own CSP wins."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend((name, value) for name, value in HEADERS.items() if name not in present)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
