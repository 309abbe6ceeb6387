"""OpenAI's error shape `{"error": {message, type, param, code}}`: the proxy's own errors,
upstream errors re-shaped, and the exception handlers that make every failure answer in it;
under the Anthropic API's paths, in Anthropic's shape `{"type": "error", "error": {type,
message}}` instead, with the same status."""

from __future__ import annotations

import json
from collections.abc import Mapping
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
# Paths of the Anthropic API (`/v1/messages`, `/v1/messages/count_tokens`, and any other
# under it): its clients read errors in its shape.
ANTHROPIC_PATH_PREFIX = "/v1/messages"
# Anthropic's error types by HTTP status (its documented pairs, and the proxy's 502 and 504,
# which Anthropic's clients know as an API error and a timeout).
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
# An error mid-stream has no status of its own: its code says what it was.
ANTHROPIC_TYPE_BY_CODE = {"upstream_timeout": "timeout_error", "server_busy": "overloaded_error"}


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


def speaks_anthropic(path: str) -> bool:
    """Whether a request to `path` is answered in Anthropic's error shape."""
    return path == ANTHROPIC_PATH_PREFIX or path.startswith(ANTHROPIC_PATH_PREFIX + "/")


def anthropic_error_type(status: int) -> str:
    return ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )


def anthropic_error_body(message: str, error_type: str) -> dict[str, Any]:
    """`{"type": "error", "error": {"type": ..., "message": ...}}`, Anthropic's error body and
    the data of its streams' `error` event."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_error_of(error: dict[str, Any], status: int | None = None) -> dict[str, Any]:
    """An OpenAI error body's `error` in Anthropic's shape: typed by the status it was
    answered with, or, mid-stream, by its code; the field at fault, which Anthropic's shape
    has no place for, leads the message."""
    message = str(error.get("message") or "upstream failed")
    if error.get("param"):
        message = f"{error['param']}: {message}"
    if status is not None:
        return anthropic_error_body(message, anthropic_error_type(status))
    code = str(error.get("code"))
    return anthropic_error_body(message, ANTHROPIC_TYPE_BY_CODE.get(code, "api_error"))


def shaped_error(path: str, body: dict[str, Any], status: int) -> dict[str, Any]:
    """An OpenAI error body as the client of `path` reads errors."""
    return anthropic_error_of(body["error"], status) if speaks_anthropic(path) else body


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


def _error_response(
    request: Request,
    body: dict[str, Any],
    status: int,
    headers: Mapping[str, str] | None = None,
) -> Response:
    return JSONResponse(shaped_error(request.url.path, body, status), status, headers)


async def _proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return _error_response(request, exc.body(), exc.status)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = error_body(str(exc.detail), error_type=INVALID_REQUEST, code=f"http_{exc.status_code}")
    return _error_response(request, body, exc.status_code, exc.headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    param = ".".join(str(part) for part in first.get("loc", ())[1:]) or None
    message = str(first.get("msg", "invalid request"))
    body = error_body(message, error_type=INVALID_REQUEST, param=param)
    return _error_response(request, body, 400)


async def _client_gone(_: Request, exc: Exception) -> Response:
    return Response(status_code=CLIENT_CLOSED_REQUEST)


async def _unexpected(request: Request, exc: Exception) -> Response:
    # Starlette re-raises `exc` after this answer so that the server logs its traceback;
    # the client gets none (it may quote request content or internals).
    body = error_body("internal proxy error", error_type=SERVER_ERROR, code="internal_error")
    return _error_response(request, body, 500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ProxyError, _proxy_error)
    app.add_exception_handler(HTTPException, _http_exception)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)
