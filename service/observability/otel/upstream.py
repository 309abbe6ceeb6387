"""The upstream side: the proxy's httpx client with each exchange watched. Within a traced
request, an exchange is a client span, child of the request's server span, whose context
goes upstream as `traceparent` (so the model server's own spans join the trace); a GenAI
exchange (a chat or completion) also feeds the GenAI client metrics when they are on.

Watching takes place at `send` (an `ObservedClient` watch), so it sees every exchange the
proxy makes, through whatever transport (a proxy from the environment included), from the
request to the closing of its body; it reads a copy of the body's bytes, never alters them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from opentelemetry import propagate, trace
from opentelemetry.metrics import Histogram, Meter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ..upstream_wait import ObservedClient, Watch
from . import conventions as sc
from .answers import AnswerReader, operation_of, request_attributes, request_body
from .server import current_request

ERROR_STATUS = 400
# The conventions' advised bucket boundaries.
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
TOKEN_BUCKETS = tuple(4.0**power for power in range(14))  # 1 to 67,108,864


class GenAIInstruments:
    """`gen_ai.client.operation.duration` and `gen_ai.client.token.usage`."""

    def __init__(self, meter: Meter) -> None:
        self.duration: Histogram = meter.create_histogram(
            sc.OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=(*DURATION_BUCKETS, 40.96, 81.92),
        )
        self.tokens: Histogram = meter.create_histogram(
            sc.TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )


class UpstreamTelemetry:
    """What watches the upstream exchanges: the tracer and the GenAI instruments (each None
    when its signal is off)."""

    def __init__(
        self, tracer: Tracer | None, instruments: GenAIInstruments | None, *, capture_content: bool
    ) -> None:
        self._tracer = tracer
        self._instruments = instruments
        self._capture_content = capture_content

    def exchange(self, request: httpx.Request) -> Exchange | None:
        """The watch over `request`, or None when nothing wants it: outside a traced request
        (a readiness probe's model list) and not a GenAI operation for the metrics."""
        operation = operation_of(request.url.path)
        served = current_request.get()
        traced = self._tracer is not None and served is not None
        measured = self._instruments is not None and operation is not None
        if not (traced or measured):
            return None
        body = request_body(request) if operation is not None else {}
        attributes = _server_attributes(request)
        if operation is not None:
            attributes |= {sc.OPERATION: operation, sc.PROVIDER: sc.UPSTREAM_PROVIDER}
            attributes |= request_attributes(body, capture_content=self._capture_content)
        span = None
        if self._tracer is not None and served is not None:
            attributes[sc.UPSTREAM_ATTEMPT] = served.upstream_request(operation)
            name = request.method if operation is None else f"{operation} {body.get('model', '')}"
            span = self._tracer.start_span(name.strip(), None, SpanKind.CLIENT, attributes)
            carrier: dict[str, str] = {}
            propagate.inject(carrier, trace.set_span_in_context(span))
            request.headers.update(carrier)  # replaces the client's own, which was forwarded
        instruments = self._instruments if operation is not None else None
        return Exchange(span, instruments, attributes, capture_content=self._capture_content)


class Exchange:
    """One upstream request, watched until its body is closed."""

    def __init__(
        self,
        span: Span | None,
        instruments: GenAIInstruments | None,
        attributes: dict[str, Any],
        *,
        capture_content: bool,
    ) -> None:
        self._span = span
        self._instruments = instruments
        self._attributes = attributes
        self._capture_content = capture_content
        self._started = time.perf_counter()
        self._reader: AnswerReader | None = None
        self._ended = False

    def responded(self, response: httpx.Response) -> None:
        """The status came; the body is yet to be read (and watched while it is)."""
        status = response.status_code
        self._set({sc.HTTP_STATUS: status})
        if status >= ERROR_STATUS:
            self._failed(str(status))
        elif sc.OPERATION in self._attributes:
            self._reader = AnswerReader(
                response.headers, self._started, capture_content=self._capture_content
            )
        assert isinstance(response.stream, httpx.AsyncByteStream)  # an async client's
        response.stream = WatchedBody(response.stream, self)

    def received(self, chunk: bytes) -> None:
        if self._reader is not None:
            self._reader.feed(chunk)

    def failed(self, exc: Exception) -> None:
        """The exchange broke (no answer, or its body cut off): recorded, and ended."""
        if self._span is not None:
            self._span.record_exception(exc)
        self._failed(_error_type(exc))
        self.end(read_to_end=True)

    def abandoned(self) -> None:
        """The wait for the answer was cancelled: the client left, or the deadline passed."""
        self.end(read_to_end=False)

    def end(self, *, read_to_end: bool) -> None:
        """Once: the body was closed, read to its end or not (the client left)."""
        if self._ended:
            return
        self._ended = True
        duration = time.perf_counter() - self._started
        answer = {} if self._reader is None else self._reader.attributes()
        self._set(answer)
        if not read_to_end:
            self._set({sc.UPSTREAM_ABANDONED: True})
        if self._span is not None:
            self._span.end()
        if self._instruments is not None:
            self._measure(duration, answer)

    def _set(self, attributes: dict[str, Any]) -> None:
        self._attributes |= attributes
        if self._span is not None:
            self._span.set_attributes(attributes)

    def _failed(self, error_type: str) -> None:
        self._set({sc.ERROR_TYPE: error_type})
        if self._span is not None:
            self._span.set_status(Status(StatusCode.ERROR))

    def _measure(self, duration: float, answer: dict[str, Any]) -> None:
        assert self._instruments is not None
        names = (sc.OPERATION, sc.PROVIDER, sc.REQUEST_MODEL, sc.RESPONSE_MODEL, sc.ERROR_TYPE)
        common = {name: self._attributes[name] for name in names if name in self._attributes}
        common |= {k: v for k, v in self._attributes.items() if k.startswith("server.")}
        self._instruments.duration.record(duration, common)
        for name, kind in ((sc.INPUT_TOKENS, "input"), (sc.OUTPUT_TOKENS, "output")):
            if name in answer:
                self._instruments.tokens.record(answer[name], {**common, sc.TOKEN_TYPE: kind})


class WatchedBody(httpx.AsyncByteStream):
    """A response body whose bytes the exchange sees pass, and whose closing ends it."""

    def __init__(self, body: httpx.AsyncByteStream, exchange: Exchange) -> None:
        self._body = body
        self._exchange = exchange
        self._read_to_end = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._body:
                self._exchange.received(chunk)
                yield chunk
        except Exception as exc:
            self._exchange.failed(exc)
            raise
        self._read_to_end = True

    async def aclose(self) -> None:
        try:
            await self._body.aclose()
        finally:
            self._exchange.end(read_to_end=self._read_to_end)


class WatchedClient(ObservedClient):
    """The proxy's client, each exchange also watched by `UpstreamTelemetry.exchange`."""

    def __init__(self, telemetry: UpstreamTelemetry, **options: Any) -> None:
        super().__init__(**options)
        self._telemetry = telemetry

    def watches(self, request: httpx.Request) -> list[Watch]:
        exchange = self._telemetry.exchange(request)
        return [*super().watches(request), *([] if exchange is None else [exchange])]


def _server_attributes(request: httpx.Request) -> dict[str, Any]:
    url = request.url
    attributes: dict[str, Any] = {sc.HTTP_METHOD: request.method, sc.SERVER_ADDRESS: url.host}
    if url.port is not None:
        attributes[sc.SERVER_PORT] = url.port
    return attributes


def _error_type(exc: Exception) -> str:
    """As the conventions advise: "timeout" for a timeout, else the exception's full name."""
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return "timeout"
    return f"{type(exc).__module__}.{type(exc).__qualname__}"
