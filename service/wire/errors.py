"""OpenAI's error shape `{"error": {message, type, param, code}}`: the proxy's own errors,
upstream errors re-shaped, and the exception handlers that make every failure answer in it,
or, under the paths of a front door that registered its own shape (`ErrorShapes`), in that
one, with the same status."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, HTTPConnection

INVALID_REQUEST = "invalid_request_error"
AUTHENTICATION_ERROR = "authentication_error"
UPSTREAM_ERROR = "upstream_error"
SERVER_ERROR = "server_error"
# nginx's "client closed request": logged by the server, read by nobody.
CLIENT_CLOSED_REQUEST = 499
# An OpenAI error body's `error`, and the HTTP status the proxy chose -> the error body the
# clients of another API read, and the status to answer it with (the same, unless that API
# pairs its errors with statuses of its own, as Google's does).
ErrorShape = Callable[[dict[str, Any], int], tuple[dict[str, Any], int]]
# Whether a request to a path two APIs share comes from the other API's client.
Asks = Callable[[HTTPConnection], bool]
# When to ask again, as an upstream (or a load balancer before it) says it with a 429 or a
# 503: kept on the proxy's answer, for the clients' SDKs wait as long as it says.
RETRY_AFTER = "retry-after"
# What separates a resource from the custom method it calls, in Google's paths.
CUSTOM_METHOD = ":"


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
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.param = param
        self.code = code
        self.headers = headers  # sent with the answer

    def body(self) -> dict[str, Any]:
        return error_body(
            self.message, error_type=self.error_type, param=self.param, code=self.code
        )


class UpstreamStatusError(ProxyError):
    """The upstream answered 4xx/5xx: its status, its Retry-After, and its error body
    re-shaped only when it is not OpenAI's shape already."""

    def __init__(
        self,
        status: int,
        raw_body: bytes,
        *,
        hint: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        self._upstream_body = openai_error_body(raw_body, status)
        message = str(self._upstream_body["error"].get("message", ""))
        if hint is not None:  # what the proxy knows that the upstream could not say
            message = f"{message} ({hint})"
            error = {**self._upstream_body["error"], "message": message}
            self._upstream_body = {**self._upstream_body, "error": error}
        headers = None if retry_after is None else {RETRY_AFTER: retry_after}
        super().__init__(status, message, error_type=UPSTREAM_ERROR, headers=headers)

    def body(self) -> dict[str, Any]:
        return self._upstream_body


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


class ErrorShapes:
    """The error shape each request is answered in: OpenAI's, but under a path that a front
    door registered with its own shape (the path itself, and every path below it), or, for
    `custom_methods`, a path below the prefix that calls a custom method (Google's
    `resource:verb`, as in `/v1/models/m:generateContent`: the Gemini API shares `/v1/models`
    with OpenAI's, and only its methods are its own), or, for `shared`, a path both APIs have
    (and below it) asked by the other API's client, as its `asks` tells.

    >>> shapes = ErrorShapes({"/v1/other_api": other_api_error_of})
    >>> body, status = shapes.shaped(request, error_body("no", error_type=...), 400)
    """

    def __init__(
        self,
        by_path: Mapping[str, ErrorShape] | None = None,
        *,
        custom_methods: Mapping[str, ErrorShape] | None = None,
        shared: Mapping[str, tuple[Asks, ErrorShape]] | None = None,
    ) -> None:
        self._by_path = dict(by_path or {})
        self._custom_methods = dict(custom_methods or {})
        self._shared = dict(shared or {})

    def shape_of(self, connection: HTTPConnection) -> ErrorShape | None:
        """The shape registered for the request, or None for OpenAI's."""
        path = connection.url.path
        for prefix, shape in self._by_path.items():
            if path == prefix or path.startswith(prefix + "/"):
                return shape
        for prefix, shape in self._custom_methods.items():
            if path.startswith(prefix + "/") and CUSTOM_METHOD in path.rpartition("/")[2]:
                return shape
        for prefix, (asks, shape) in self._shared.items():
            if (path == prefix or path.startswith(prefix + "/")) and asks(connection):
                return shape
        return None

    def shaped(
        self, connection: HTTPConnection, body: dict[str, Any], status: int
    ) -> tuple[dict[str, Any], int]:
        """An OpenAI error body as the client of the request reads errors, and its status."""
        shape = self.shape_of(connection)
        return (body, status) if shape is None else shape(body["error"], status)


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


def install_error_handlers(app: FastAPI, shapes: ErrorShapes) -> None:
    """Every failure of `app` answered in OpenAI's error shape, or in the one `shapes` gives
    the request's path."""

    def answer(
        request: Request,
        body: dict[str, Any],
        status: int,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        shaped, answered = shapes.shaped(request, body, status)
        return JSONResponse(shaped, answered, headers)

    async def proxy_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProxyError)
        return answer(request, exc.body(), exc.status, exc.headers)

    async def http_exception(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = f"http_{exc.status_code}"
        body = error_body(str(exc.detail), error_type=INVALID_REQUEST, code=code)
        return answer(request, body, exc.status_code, exc.headers)

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        param = ".".join(str(part) for part in first.get("loc", ())[1:]) or None
        message = str(first.get("msg", "invalid request"))
        return answer(request, error_body(message, error_type=INVALID_REQUEST, param=param), 400)

    async def client_gone(_: Request, exc: Exception) -> Response:
        return Response(status_code=CLIENT_CLOSED_REQUEST)

    async def unexpected(request: Request, exc: Exception) -> Response:
        # Starlette re-raises `exc` after this answer so that the server logs its traceback;
        # the client gets none (it may quote request content or internals).
        body = error_body("internal proxy error", error_type=SERVER_ERROR, code="internal_error")
        return answer(request, body, 500)

    app.add_exception_handler(ProxyError, proxy_error)
    app.add_exception_handler(HTTPException, http_exception)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ClientDisconnect, client_gone)
    app.add_exception_handler(Exception, unexpected)
