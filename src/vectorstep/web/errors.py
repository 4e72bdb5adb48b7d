"""Errors to HTTP answers, in one place: a user's mistake is a 4xx that says what was wrong, never a 500.

API callers get JSON; UI pages get a page in the same layout.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from vectorstep.domain.secrets import SECRETS
from vectorstep.domain.storable import storable
from vectorstep.errors import ConfigError, NotFoundError, PayloadError, Problem, RequestRefused
from vectorstep.web.limits import BodyTooLarge, too_large_detail
from vectorstep.web.ui.render import error_page


def problem_json(problem: Problem) -> dict[str, Any]:
    message = SECRETS.mask(problem.message)
    return {"file": problem.file, "line": problem.line, "key": problem.key_path, "message": message}


def _answer(request: Request, status: int, error: str, detail: str, **extra: Any) -> Response:
    detail = SECRETS.mask(detail)
    if request.url.path.startswith("/ui"):
        return error_page(request, status, detail)
    return JSONResponse({"error": error, "detail": detail, **extra}, status_code=status)


async def _payload(request: Request, error: Exception) -> Response:
    return _answer(request, 400, "bad_payload", str(error))


async def _refused(request: Request, error: Exception) -> Response:
    return _answer(request, 400, "refused", str(error))


async def _config(request: Request, error: Exception) -> Response:
    assert isinstance(error, ConfigError)
    problems = [problem_json(problem) for problem in error.problems]
    return _answer(request, 422, "invalid", str(error), problems=problems)


async def _too_large(request: Request, _: Exception) -> Response:
    return _answer(request, 413, "too_large", too_large_detail())


async def _not_found(request: Request, error: Exception) -> Response:
    return _answer(request, 404, "not_found", str(error))


async def _http(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if request.url.path.startswith("/ui") and not request.headers.get("hx-request"):
        return error_page(request, error.status_code, str(error.detail))
    return await http_exception_handler(request, error)


async def _invalid(request: Request, error: Exception) -> Response:
    """FastAPI's own 422, with the input it quotes made writable as JSON: a lone surrogate as its
    escape, `NaN` and `±Infinity` (which the body parser lets through) as strings, secrets masked."""
    assert isinstance(error, RequestValidationError)
    return JSONResponse({"detail": storable(jsonable_encoder(error.errors()))}, status_code=422)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(PayloadError, _payload)
    app.add_exception_handler(ConfigError, _config)
    app.add_exception_handler(NotFoundError, _not_found)
    app.add_exception_handler(RequestRefused, _refused)
    app.add_exception_handler(BodyTooLarge, _too_large)
