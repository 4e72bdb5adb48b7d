"""The API's own description (`/api/openapi.json`) and its browsable page (`/api/docs`), behind sign-in.

Both take a Bearer token or a signed-in UI session, with a role that may read. The page's Swagger UI
is served from this service (the files of the `fastapi-offline` package), so it works offline and
its Content Security Policy allows nothing from elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from vectorstep.web.auth import Principal
from vectorstep.web.deps import auth_of
from vectorstep.web.headers import CONTENT_SECURITY_POLICY
from vectorstep.web.ui.pages import SignInRequired, ui_principal

router = APIRouter(prefix="/api", include_in_schema=False)
ASSETS_PATH = "/api/docs/assets"
ASSETS = Path(str(files("fastapi_offline") / "static"))
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


async def reader(request: Request) -> Principal:
    """A Bearer token, or the UI session of a browser (the page fetches the description with it).

    Without either, the page sends a browser to sign in and the description answers 401. Either
    way, the principal must be allowed to read.
    """
    if request.headers.get("authorization"):
        principal = auth_of(request).api_principal(request)
    else:
        try:
            principal = await ui_principal(request)
        except SignInRequired:
            if request.url.path.endswith("/docs"):
                raise  # to the sign-in page and back
            principal = auth_of(request).api_principal(request)  # 401
    principal.require("read")
    return principal


Reader = Annotated[Principal, Depends(reader)]


@router.get("/openapi.json")
async def openapi(request: Request, _: Reader) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/docs")
async def docs(_: Reader) -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url="/api/openapi.json",
        title="VectorStep API",
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
    )
    # The page's one inline script (its set-up) is allowed by its hash, nothing else inline.
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(bytes(page.body).decode())
    )
    page.headers["content-security-policy"] = CONTENT_SECURITY_POLICY.replace(
        "script-src 'self'", f"script-src 'self' {hashes}"
    )
    return page
