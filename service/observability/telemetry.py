"""The ASGI middleware that watches every request on the wire: it gives the request its id
(`X-Request-ID`, echoed in the response), times it, counts what an event stream sends and
whether the client left early, then hands the finished record to the metrics and the
access log. A whole answer that asked the upstream says what the proxy added to it
(`x-toolcall-proxy-overhead-ms`). Per body write it only counts; everything else happens
once per request."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .access_log import log_access
from .log_config import current_request_id
from .metrics import ProxyMetrics
from .request_record import SCOPE_KEY, SESSION_HEADER, RequestRecord, new_record
from .upstream_wait import current_record

REQUEST_ID_HEADER = b"x-request-id"
OVERHEAD_HEADER = b"x-toolcall-proxy-overhead-ms"
# Said by this proxy alone: an upstream's (another proxy's) would be about another request.
PROXY_HEADERS = (REQUEST_ID_HEADER, OVERHEAD_HEADER)
MILLISECONDS = 1000
EVENT_STREAM = b"text/event-stream"
# What ends every server-sent event (as the proxy writes them, and OpenAI-compatible servers);
# one body write may carry several events.
EVENT_END = b"\n\n"
# The status an exception that escaped every handler becomes (the server answers it so).
UNHANDLED_STATUS = 500


class RequestTelemetry:
    """`app.add_middleware(RequestTelemetry, metrics=..., access_log=True)`. While a request
    is answered, its id is `log_config.current_request_id` (every JSON log line carries it)."""

    def __init__(self, app: ASGIApp, *, metrics: ProxyMetrics, access_log: bool) -> None:
        self._app = app
        self._metrics = metrics
        self._access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        record = new_record(scope, headers.get("x-request-id"), headers.get(SESSION_HEADER))
        scope[SCOPE_KEY] = record
        wire = _Wire(record, receive, send, self._metrics, self._finished)
        request_id = current_request_id.set(record.request_id)
        current = current_record.set(record)
        try:
            await self._app(scope, wire.receive, wire.send)
        except BaseException:
            record.status = record.status or UNHANDLED_STATUS
            raise
        finally:
            wire.finish()  # if the last byte never went out
            current_record.reset(current)
            current_request_id.reset(request_id)

    def _finished(self, record: RequestRecord) -> None:
        self._metrics.observe_request(record)
        if self._access_log:
            log_access(record)


class _Wire:
    """One request's ASGI channels, watched."""

    __slots__ = (
        "_complete",
        "_metrics",
        "_on_finish",
        "_receive",
        "_record",
        "_send",
        "_started",
        "_unsent",
    )

    def __init__(
        self,
        record: RequestRecord,
        receive: Receive,
        send: Send,
        metrics: ProxyMetrics,
        on_finish: Callable[[RequestRecord], None],
    ) -> None:
        self._record = record
        self._receive = receive
        self._send = send
        self._metrics = metrics
        self._on_finish = on_finish
        self._started = time.perf_counter()
        self._complete = False
        self._unsent: int | None = None  # body bytes still due, when a content-length says

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" and not self._complete:
            self._record.client_disconnected = True
        return message

    async def send(self, message: Message) -> None:
        record = self._record
        if message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body and record.event_stream:
                if record.first_byte is None:
                    record.first_byte = time.perf_counter() - self._started
                record.chunks_sent += body.count(EVENT_END)
                record.bytes_sent += len(body)
            if self._unsent is not None:
                self._unsent -= len(body)
            if not message.get("more_body", False) or self._unsent == 0:
                # Before the last byte goes out: whoever reads the answer to its end (a test,
                # a scraper right after) finds the request already counted and logged. With a
                # content-length that is the last declared byte: a relay sends its closing
                # empty message only after the client may already have read the whole body.
                self.finish()
        elif message["type"] == "http.response.start":
            message = self._start(message)
        await self._send(message)

    def _start(self, message: Message) -> Message:
        """Note the status and stream kind; the response gets this request's id (replacing
        any the upstream sent, which would name a different request) and, whole, the
        proxy's overhead (a stream's is known only at its first byte: in the metrics)."""
        record = self._record
        record.status = message["status"]
        record.response_started = time.perf_counter() - self._started
        headers = [
            (name, value)
            for name, value in message.get("headers", ())
            if name.lower() not in PROXY_HEADERS
        ]
        content_type = next((v for n, v in headers if n.lower() == b"content-type"), b"")
        length = next((v for n, v in headers if n.lower() == b"content-length"), b"")
        self._unsent = int(length) if length.isdigit() else None
        if content_type.startswith(EVENT_STREAM):
            record.event_stream = True
            self._metrics.streams_in_progress.inc()
        headers.append((REQUEST_ID_HEADER, record.request_id.encode()))
        overhead = record.overhead
        if overhead is not None:
            headers.append((OVERHEAD_HEADER, f"{overhead * MILLISECONDS:.2f}".encode()))
        return {**message, "headers": headers}

    def finish(self) -> None:
        """Record the request, once: at its last byte, or when the app returns without one."""
        if self._complete:
            return
        self._complete = True
        self._record.duration = time.perf_counter() - self._started
        if self._record.event_stream:
            self._metrics.streams_in_progress.dec()
        self._on_finish(self._record)
