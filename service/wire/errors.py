"""OpenAI's error shape `{"error": {message, type, param, code}}`: the proxy's own errors,
upstream errors re-shaped, and the exception handlers that make every failure answer in it."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

INVALID_REQUEST = "invalid_request_error"
AUTHENTICATION_ERROR = "authentication_error"
UPSTREAM_ERROR = "upstream_error"
SERVER_ERROR = "server_error"
# nginx's "client closed request": logged by the server, read by nobody.
CLIENT_CLOSED_REQUEST = 499


class ProxyError(Exception):
    """A failure with the HTTP status and OpenAI error fields the client should see.

    >>> raise ProxyError(400, "'messages' must be a non-empty list", param="messages")
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return error_body(
            self.message, error_type=self.error_type, param=self.param, code=self.code
        )


class UpstreamStatusError(ProxyError):
    """The upstream answered 4xx/5xx: its status, and its error body re-shaped only when
    it is not OpenAI's shape already."""

    def __init__(self, status: int, raw_body: bytes, *, hint: str | None = None) -> None:
        self._upstream_body = openai_error_body(raw_body, status)
        message = str(self._upstream_body["error"].get("message", ""))
        if hint is not None:  # what the proxy knows that the upstream could not say
            message = f"{message} ({hint})"
            error = {**self._upstream_body["error"], "message": message}
            self._upstream_body = {**self._upstream_body, "error": error}
        super().__init__(status, message, error_type=UPSTREAM_ERROR)

    def body(self) -> dict[str, Any]:
        return self._upstream_body


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def openai_error_body(raw: bytes, status: int) -> dict[str, Any]:
    """An upstream error body as OpenAI's shape: kept when it already is, else wrapped."""
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), dict):
        return decoded
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), str):
        message = decoded["error"]
    elif isinstance(decoded, dict) and isinstance(decoded.get("detail"), str):
        message = decoded["detail"]  # FastAPI-style upstreams
    else:
        message = raw.decode("utf-8", "replace").strip() or f"upstream returned HTTP {status}"
    return error_body(message, error_type=UPSTREAM_ERROR, code=f"upstream_http_{status}")


async def _proxy_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return JSONResponse(exc.body(), status_code=exc.status)


async def _http_exception(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        error_body(str(exc.detail), error_type=INVALID_REQUEST, code=f"http_{exc.status_code}"),
        status_code=exc.status_code,
        headers=exc.headers,
    )


async def _validation_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    param = ".".join(str(part) for part in first.get("loc", ())[1:]) or None
    return JSONResponse(
        error_body(
            str(first.get("msg", "invalid request")), error_type=INVALID_REQUEST, param=param
        ),
        status_code=400,
    )


async def _client_gone(_: Request, exc: Exception) -> Response:
    return Response(status_code=CLIENT_CLOSED_REQUEST)


async def _unexpected(_: Request, exc: Exception) -> Response:
    # Starlette re-raises `exc` after this answer so that the server logs its traceback;
    # the client gets none (it may quote request content or internals).
    return JSONResponse(
        error_body("internal proxy error", error_type=SERVER_ERROR, code="internal_error"),
        status_code=500,
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ProxyError, _proxy_error)
    app.add_exception_handler(HTTPException, _http_exception)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)
