"""What the proxy tells its operators: Prometheus metrics, the DEBUG_PARSER_MW trace, the
log configuration and access line, the per-request record and telemetry they are built
from (the upstream's share of a request's time among them), and OpenTelemetry (`otel`)."""

from __future__ import annotations

from .access_log import LOGGER_NAME, LogFormat, use_stderr_unless_configured
from .debug import DebugMode, HighlightStyle, ParserDebug, ParserTrace, parse_traced
from .log_config import LogLevel, configure_logging, held_records, line_formatter
from .metrics import ProxyMetrics, StoreEvent, UpstreamFailure, prepare_multiprocess_dir
from .observer import CompletionObserver
from .request_record import NO_PROTOCOL, CompletionListener, RequestRecord, request_record
from .telemetry import RequestTelemetry
from .upstream_wait import ObservedClient

__all__ = [
    "LOGGER_NAME",
    "NO_PROTOCOL",
    "CompletionListener",
    "CompletionObserver",
    "DebugMode",
    "HighlightStyle",
    "LogFormat",
    "LogLevel",
    "ObservedClient",
    "ParserDebug",
    "ParserTrace",
    "ProxyMetrics",
    "RequestRecord",
    "RequestTelemetry",
    "StoreEvent",
    "UpstreamFailure",
    "configure_logging",
    "held_records",
    "line_formatter",
    "parse_traced",
    "prepare_multiprocess_dir",
    "request_record",
    "use_stderr_unless_configured",
]
