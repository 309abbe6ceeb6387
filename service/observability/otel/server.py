"""The server span: one per HTTP request whatever its route (probes and the metrics scrape
aside), so every front door, those to come included, gets one with no code of its own.

It continues the client's W3C trace context, is the current span while the request is
answered (the upstream requests' client spans are its children), hears the completions'
events through the request record's listener, and takes the record's facts (model, protocol,
calls, tokens, first byte, departure) when the request ends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from protocols import ErrorKind, ParseError

from ..request_record import SCOPE_KEY, RequestRecord, route_of
from . import conventions as sc

# Routes answered too often, and with too little to tell, to be worth a span each.
UNTRACED_ROUTES = frozenset({"probe", "metrics"})
# Parse errors after which a call was still made (under the declared name its written name
# spells; a forced call with {} arguments): repairs, not losses.
REPAIRS = frozenset({ErrorKind.TOOL_NAME_SPELLING, ErrorKind.TOOL_CHOICE_FALLBACK})
SERVER_ERROR = 500

# The request being answered in this task, for the upstream client's spans.
current_request: ContextVar[RequestSpan | None] = ContextVar(
    "toolcall_proxy_request_span", default=None
)


class ServerSpans:
    """`app.add_middleware(ServerSpans, tracer=..., capture_content=...)`, inside the request
    telemetry middleware (whose record it reads)."""

    def __init__(self, app: ASGIApp, *, tracer: Tracer, capture_content: bool) -> None:
        self._app = app
        self._tracer = tracer
        self._capture_content = capture_content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or route_of(scope["path"]) in UNTRACED_ROUTES:
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        parent = propagate.extract(headers)
        span = self._tracer.start_span(
            scope["method"], parent, SpanKind.SERVER, _request_attributes(scope, headers)
        )
        record: RequestRecord = scope[SCOPE_KEY]
        request = RequestSpan(span, capture_content=self._capture_content)
        record.listener = request
        attached = context.attach(trace.set_span_in_context(span, parent))
        current = current_request.set(request)

        async def watched_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                request.status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, watched_send)
        except Exception as exc:
            request.status = request.status or SERVER_ERROR
            span.record_exception(exc)
            raise
        finally:
            current_request.reset(current)
            context.detach(attached)
            request.end(record, scope)


class RequestSpan:
    """One request's server span, told what its completions did (a `CompletionListener`)."""

    def __init__(self, span: Span, *, capture_content: bool) -> None:
        self.span = span
        self.status = 0
        self._capture_content = capture_content
        self._counts: Counter[str] = Counter()
        self._error_kinds: Counter[str] = Counter()
        self._hosted_tools: list[str] = []
        self._operation: str | None = None
        self._upstream_requests = 0

    def tool_call(self, name: str) -> None:
        self.span.add_event(sc.TOOL_CALL_EVENT, {sc.TOOL_NAME: name})

    def parse_error(self, error: ParseError) -> None:
        self._error_kinds[error.kind] += 1
        if error.kind in REPAIRS:
            self._counts[sc.CALLS_REPAIRED] += 1
        attributes = {sc.PARSE_ERROR_KIND: str(error.kind)}
        if self._capture_content:  # both quote the model's output
            attributes[sc.PARSE_ERROR_MESSAGE] = error.message
            attributes[sc.PARSE_ERROR_ORIGINAL] = error.original
        self.span.add_event(sc.PARSE_ERROR_EVENT, attributes)

    def dropped_call(self, name: str) -> None:
        self._counts[sc.CALLS_DROPPED] += 1
        self.span.add_event(sc.DROPPED_CALL_EVENT, {sc.TOOL_NAME: name})

    def rescued_call(self, name: str) -> None:
        self._counts[sc.CALLS_RESCUED] += 1
        self.span.add_event(sc.RESCUED_CALL_EVENT, {sc.TOOL_NAME: name})

    def forced_call_retry(self) -> None:
        self._counts[sc.FORCED_CALL_ASKED_AGAIN] += 1
        self.span.add_event(sc.ASKED_AGAIN_EVENT)

    def invalid_call(self, name: str, problem: str, *, repaired: bool) -> None:
        """A call that failed its schema: repaired by asking again, or sent as written."""
        self._counts[sc.CALLS_REPAIRED if repaired else sc.CALLS_INVALID] += 1
        attributes = {sc.TOOL_NAME: name}
        if self._capture_content:  # it quotes the model's output
            attributes[sc.INVALID_CALL_PROBLEM] = problem
        event = sc.REPAIRED_CALL_EVENT if repaired else sc.INVALID_CALL_EVENT
        self.span.add_event(event, attributes)

    def call_repair_retry(self) -> None:
        self._counts[sc.CALLS_ASKED_AGAIN] += 1
        self.span.add_event(sc.CALLS_ASKED_AGAIN_EVENT)

    def hosted_tools_dropped(self, kinds: Sequence[str]) -> None:
        self._hosted_tools += kinds
        self.span.add_event(sc.HOSTED_TOOLS_EVENT, {sc.HOSTED_TOOLS_DROPPED: list(kinds)})

    def upstream_request(self, operation: str | None) -> int:
        """An upstream request is made for this one: its number, from 1 (a forced call
        asked again makes a second)."""
        self._operation = self._operation or operation
        self._upstream_requests += 1
        return self._upstream_requests

    def end(self, record: RequestRecord, scope: Scope) -> None:
        span = self.span
        route = scope.get("route")
        template = getattr(route, "path", None)
        if isinstance(template, str):
            span.update_name(f"{scope['method']} {template}")
            span.set_attribute(sc.HTTP_ROUTE, template)
        span.set_attributes(self._attributes(record))
        if self.status >= SERVER_ERROR:
            span.set_attribute(sc.ERROR_TYPE, str(self.status))
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def _attributes(self, record: RequestRecord) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            sc.HTTP_STATUS: self.status,
            sc.ROUTE: record.route,
            sc.REQUEST_ID: record.request_id,
            sc.PROTOCOL: record.protocol,
            sc.CALLS_PARSED: record.tool_calls,
            sc.UPSTREAM_REQUESTS: self._upstream_requests,
            **self._counts,
        }
        if record.model is not None:
            attributes[sc.REQUEST_MODEL] = record.model
            attributes[sc.REQUEST_STREAM] = record.stream
        if self._operation is not None:
            attributes[sc.OPERATION] = self._operation
        if record.prompt_tokens or record.completion_tokens:
            attributes[sc.INPUT_TOKENS] = record.prompt_tokens
            attributes[sc.OUTPUT_TOKENS] = record.completion_tokens
        if self._error_kinds:
            attributes[sc.PARSE_ERRORS] = self._error_kinds.total()
            attributes[sc.PARSE_ERROR_KINDS] = sorted(self._error_kinds)
        if self._hosted_tools:
            attributes[sc.HOSTED_TOOLS_DROPPED] = self._hosted_tools
        if record.first_byte is not None:
            attributes[sc.TIME_TO_FIRST_BYTE] = record.first_byte
        if record.client_disconnected:
            attributes[sc.CLIENT_DISCONNECTED] = True
        return attributes


def _request_attributes(scope: Scope, headers: Headers) -> dict[str, Any]:
    """What the request says of itself, keys aside: never its query string or credentials."""
    attributes: dict[str, Any] = {
        sc.HTTP_METHOD: scope["method"],
        sc.URL_PATH: scope["path"],
        sc.URL_SCHEME: scope.get("scheme", "http"),
    }
    if scope.get("client"):
        attributes[sc.CLIENT_ADDRESS] = scope["client"][0]
    if "user-agent" in headers:
        attributes[sc.USER_AGENT] = headers["user-agent"]
    return attributes
