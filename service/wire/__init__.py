"""What crosses the wire to and from the proxy, whoever is on the other side: SSE framing
both ways, JSON as read and written, which headers cross, OpenAI's error shape, request
bodies under their size limit, and abandoning work for a client that has gone."""

from __future__ import annotations

from .body import limited_stream, read_limited
from .decoding import BodyDecoder, decoded_body
from .disconnect import while_connected
from .errors import (
    AUTHENTICATION_ERROR,
    INVALID_REQUEST,
    RETRY_AFTER,
    SERVER_ERROR,
    UPSTREAM_ERROR,
    ErrorShape,
    ErrorShapes,
    ProxyError,
    UpstreamStatusError,
    error_body,
    install_error_handlers,
)
from .event_batches import joined_when_ready
from .headers import (
    API_KEY_HEADER,
    GOOGLE_API_KEY_HEADER,
    GOOGLE_CLIENT_HEADER,
    GOOGLE_KEY_PARAMETER,
    HeaderPairs,
    client_authorization,
    downstream_headers,
    upstream_authorization,
    upstream_headers,
)
from .json import JSON_MEDIA_TYPE, json_bytes, json_response, json_value
from .keepalive import KEEPALIVE, PingsBetweenEvents, keepalive_event
from .sse import (
    DONE,
    DONE_EVENT,
    EVENT_STREAM,
    EventStream,
    LineSplitter,
    data_event,
    data_payloads,
    event_payload,
)

__all__ = [
    "API_KEY_HEADER",
    "AUTHENTICATION_ERROR",
    "DONE",
    "DONE_EVENT",
    "EVENT_STREAM",
    "GOOGLE_API_KEY_HEADER",
    "GOOGLE_CLIENT_HEADER",
    "GOOGLE_KEY_PARAMETER",
    "INVALID_REQUEST",
    "JSON_MEDIA_TYPE",
    "KEEPALIVE",
    "RETRY_AFTER",
    "SERVER_ERROR",
    "UPSTREAM_ERROR",
    "BodyDecoder",
    "ErrorShape",
    "ErrorShapes",
    "EventStream",
    "HeaderPairs",
    "LineSplitter",
    "PingsBetweenEvents",
    "ProxyError",
    "UpstreamStatusError",
    "client_authorization",
    "data_event",
    "data_payloads",
    "decoded_body",
    "downstream_headers",
    "error_body",
    "event_payload",
    "install_error_handlers",
    "joined_when_ready",
    "json_bytes",
    "json_response",
    "json_value",
    "keepalive_event",
    "limited_stream",
    "read_limited",
    "upstream_authorization",
    "upstream_headers",
    "while_connected",
]
