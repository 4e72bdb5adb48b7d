"""The API's own description (`/api/openapi.json`) and its browsable page (`/api/docs`), behind sign-in.

Both take a Bearer token or a signed-in UI session, with a role that may read.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from vectorstep.web.auth import Principal
from vectorstep.web.deps import auth_of
from vectorstep.web.headers import CONTENT_SECURITY_POLICY
from vectorstep.web.ui.pages import ui_principal

router = APIRouter(prefix="/api", include_in_schema=False)
SWAGGER_ASSETS = "https://cdn.jsdelivr.net"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


async def reader(request: Request) -> Principal:
    """A Bearer token; a browser opening /api/docs may use its UI session instead. Either must be allowed to read."""
    if request.headers.get("authorization") or not request.url.path.endswith("/docs"):
        principal = auth_of(request).api_principal(request)  # 401 without a valid token
    else:
        principal = await ui_principal(request)  # a browser: to the sign-in page and back
    principal.require("read")
    return principal


Reader = Annotated[Principal, Depends(reader)]


@router.get("/openapi.json")
async def openapi(request: Request, _: Reader) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/docs")
async def docs(_: Reader) -> HTMLResponse:
    page = get_swagger_ui_html(openapi_url="/api/openapi.json", title="VectorStep API")
    # The page's one inline script (its set-up) is allowed by its hash, nothing else inline.
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(bytes(page.body).decode())
    )
    policy = CONTENT_SECURITY_POLICY.replace(
        "script-src 'self'", f"script-src 'self' {SWAGGER_ASSETS} {hashes}"
    ).replace("style-src 'self'", f"style-src 'self' {SWAGGER_ASSETS}")
    page.headers["content-security-policy"] = policy.replace("img-src 'self' data:", "img-src 'self' data: https:")
    return page
