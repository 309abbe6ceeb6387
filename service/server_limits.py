"""What the server enforces before a request reaches the app's routes (and their auth): on
every connection, a bound on the request head's size and deadlines for reading the head and
the body; on the app, a cap on requests in flight. uvicorn has none of the first (its
keep-alive timeout only runs between requests), so a client could hold connections and
memory with a header that never ends; its own concurrency cap counts open connections too,
so idle ones would refuse every request, health probes included.

    uvicorn.run(app, **server_options(settings))  # every worker reads the settings itself
    app.add_middleware(InFlightLimit, limit=8, exempt=frozenset({"/healthz"}), shapes=shapes)
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any, ClassVar

from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .settings import Settings
from .wire import (
    INVALID_REQUEST,
    JSON_MEDIA_TYPE,
    SERVER_ERROR,
    ErrorShapes,
    error_body,
    json_bytes,
)

# A place frees whenever any request in flight ends; the OpenAI SDKs wait this long (they
# honour up to 60 s) before their retry, instead of their own backoff.
RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_header_bytes: int  # request line plus headers
    header_timeout: float  # from the connection (or the request's first byte) to its last header
    body_timeout: float  # from the last header to the body's last byte

    @classmethod
    def of(cls, settings: Settings) -> ServerLimits:
        return cls(
            max_header_bytes=settings.server_max_header_bytes,
            header_timeout=settings.server_header_timeout,
            body_timeout=settings.server_body_timeout,
        )


@functools.cache
def _environment_limits() -> ServerLimits:
    """Read once per worker process: every worker sees the environment the CLI wrote."""
    return ServerLimits.of(Settings())


def _refusal(status: int, reason: str, message: str, code: str) -> bytes:
    """A whole response written on the transport, in OpenAI's error shape."""
    body = json_bytes(error_body(message, error_type=INVALID_REQUEST, code=code))
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


HEADER_TOO_LARGE = _refusal(
    431, "Request Header Fields Too Large", "request headers too large", "headers_too_large"
)
HEADER_TIMEOUT = _refusal(408, "Request Timeout", "request headers too slow", "request_timeout")
# The answer beyond the cap on requests in flight, in the error shape of the request's path.
BUSY_BODY = error_body(
    "too many requests in flight; retry shortly", error_type=SERVER_ERROR, code="server_busy"
)


def busy(connection: HTTPConnection, shapes: ErrorShapes) -> Response:
    body, status = shapes.shaped(connection, BUSY_BODY, 503)
    return Response(
        json_bytes(body),
        status_code=status,
        headers={"retry-after": str(RETRY_AFTER_SECONDS)},
        media_type=JSON_MEDIA_TYPE,
    )


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head bounded and head and body on deadlines.

    Past the head bound: 431 and close. Head not complete in time (an idle new connection
    included): 408 and close. Body not complete in time: the connection is closed, which
    the app sees as the client leaving. The bound is checked per network read, so a head may
    overshoot it by one read (at most 256 KiB) before it is refused.
    """

    limits: ClassVar[ServerLimits | None] = None  # None: from the environment's settings

    @classmethod
    def with_limits(cls, limits: ServerLimits) -> type[GuardedHttpToolsProtocol]:
        """The protocol with these limits, for a server run in this process (a worker
        process cannot receive it: it reads the environment instead)."""
        return type(cls.__name__, (cls,), {"limits": limits})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = self.limits or _environment_limits()
        self._reading_head = True
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self._limits.header_timeout, HEADER_TIMEOUT)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._reading_head and self._head_bytes > self._limits.max_header_bytes:
            self._close(HEADER_TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self._limits.header_timeout, HEADER_TIMEOUT)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._arm(self._limits.body_timeout, None)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._reading_head = True  # whatever comes next is the next request's head
        self._head_bytes = 0
        super().on_message_complete()

    def _arm(self, seconds: float, answer: bytes | None) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._close, answer)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _close(self, answer: bytes | None) -> None:
        """Answer (unless a response may have started) and close the connection."""
        self._disarm()
        if self.transport.is_closing():
            return
        if answer is not None:
            self.transport.write(answer)
        self.transport.close()


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for the proxy's server: the guarded protocol, uvicorn's own
    keep-alive timeout and the largest WebSocket message. Not uvicorn's
    `limit_concurrency`: the app caps requests itself (`InFlightLimit`)."""
    return {
        "http": GuardedHttpToolsProtocol,
        "timeout_keep_alive": settings.server_keep_alive_timeout,
        # A Responses WebSocket message is a request body: held to the same limit.
        "ws_max_size": settings.max_request_bytes,
    }


class InFlightLimit:
    """ASGI middleware: at most `limit` requests in flight in this worker (from the head
    read to the answer's last byte); beyond it, 503 in the path's error shape with
    Retry-After, at once. Idle connections take no place. A path in `exempt` (the health
    probes) is neither counted nor refused: a liveness probe that got 503 from a busy worker
    would have it restarted."""

    def __init__(
        self, app: ASGIApp, *, limit: int, exempt: frozenset[str], shapes: ErrorShapes
    ) -> None:
        self._app = app
        self._limit = limit
        self._exempt = exempt
        self._shapes = shapes
        self._in_flight = 0  # one event loop per worker: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._exempt:
            await self._app(scope, receive, send)
        elif self._in_flight >= self._limit:
            await busy(HTTPConnection(scope), self._shapes)(scope, receive, send)
        else:
            self._in_flight += 1
            try:
                await self._app(scope, receive, send)
            finally:
                self._in_flight -= 1
