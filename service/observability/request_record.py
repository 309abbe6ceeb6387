"""What the proxy learns about one HTTP request, from the wire (status, timings, bytes) and
from the handler (model, protocol, calls, tokens): read once at the end by the metrics and
the access log. The telemetry middleware creates it; handlers reach it by `request_record`."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request
from starlette.types import Scope

from protocols import ParseError

# The ASGI scope key the record travels under (extension keys are namespaced by convention).
SCOPE_KEY = "toolcall_proxy.record"
NO_PROTOCOL = "none"  # the proxy parsed nothing: a relay, a model list, a probe
# A client's X-Request-ID is echoed and logged only if it looks like an id: anything longer
# or with other characters could forge log lines, so it is replaced by a fresh one.
CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# The session a client says a request belongs to (Claude Code names its session in this
# header on every request, for gateways to group a session's requests by): logged beside the
# request id, under the same rule.
SESSION_HEADER = "x-claude-code-session-id"

# Endpoint kinds by exact path, then by prefix; a bounded `route` label for any path.
ROUTE_BY_PATH = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/v1/responses/input_tokens": "count_tokens",
    "/v1/models": "models",
    "/healthz": "probe",
    "/readyz": "probe",
    "/metrics": "metrics",
}
# The Gemini API's model methods, by the `:verb` ending the path (`/v1beta/models/m:countTokens`).
ROUTE_BY_METHOD = {
    "generateContent": "gemini",
    "streamGenerateContent": "gemini",
    "countTokens": "count_tokens",
}
ROUTE_BY_PREFIX = (
    ("/v1/responses/", "responses"),  # a stored response read back, and the like
    ("/v1beta/models", "models"),
    ("/v1/", "passthrough"),
    ("/demo/", "demo"),
)
OTHER_ROUTE = "other"


class CompletionListener(Protocol):
    """Hears what happens inside a request's completions as it happens: its OpenTelemetry
    span, when tracing is on (the metrics and the access log read the record at the end)."""

    def tool_call(self, name: str) -> None: ...
    def parse_error(self, error: ParseError) -> None: ...
    def dropped_call(self, name: str) -> None: ...
    def rescued_call(self, name: str) -> None: ...
    def forced_call_retry(self) -> None: ...
    def invalid_call(self, name: str, problem: str, *, repaired: bool) -> None: ...
    def call_repair_retry(self) -> None: ...
    def hosted_tools_dropped(self, kinds: Sequence[str]) -> None: ...


@dataclass(slots=True)
class RequestRecord:
    """One request's facts. Handlers fill the middle block; the middleware the rest."""

    request_id: str
    method: str
    path: str
    route: str
    session: str | None = None  # the client's session, when it names a sane one
    # Told by the handler:
    model: str | None = None
    protocol: str = NO_PROTOCOL
    stream: bool = False
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Seen on the wire:
    status: int = 0
    duration: float = 0.0
    first_byte: float | None = None  # seconds to the first body byte of an event stream
    event_stream: bool = False
    chunks_sent: int = 0
    bytes_sent: int = 0
    client_disconnected: bool = False
    response_started: float | None = None  # seconds to the response's status and headers
    # Seen on the upstream client (`upstream_wait.py`):
    upstream_requests: int = 0
    upstream_waited: float = 0.0  # seconds, from each request to the first byte of its body
    # Told each event as it happens, when tracing is on:
    listener: CompletionListener | None = None

    @property
    def overhead(self) -> float | None:
        """Seconds the proxy itself added: to the first byte of a stream, or to the start of
        a whole answer, less the time it waited on the upstream. None when it asked none, or
        sent nothing yet. A stream that opens before the upstream's first chunk (the
        Responses API's `response.created`) added nothing by this count: 0."""
        mark = self.first_byte if self.event_stream else self.response_started
        if not self.upstream_requests or mark is None:
            return None
        return max(0.0, mark - self.upstream_waited)


def new_record(
    scope: Scope, client_request_id: str | None, session: str | None = None
) -> RequestRecord:
    """A record for an HTTP scope, keeping the client's request id and session when they are
    sane ones."""
    path: str = scope["path"]
    if client_request_id is None or not CLIENT_REQUEST_ID.fullmatch(client_request_id):
        client_request_id = uuid.uuid4().hex
    if session is not None and not CLIENT_REQUEST_ID.fullmatch(session):
        session = None
    return RequestRecord(client_request_id, scope["method"], path, route_of(path), session)


def route_of(path: str) -> str:
    route = ROUTE_BY_PATH.get(path)
    if route is not None:
        return route
    _, method_separator, method = path.rpartition(":")
    if method_separator and "/" not in method and (route := ROUTE_BY_METHOD.get(method)):
        return route
    for prefix, kind in ROUTE_BY_PREFIX:
        if path.startswith(prefix):
            return kind
    return OTHER_ROUTE


def request_record(request: Request) -> RequestRecord:
    """The record of the request being handled (the telemetry middleware put it there)."""
    record: RequestRecord = request.scope[SCOPE_KEY]
    return record
