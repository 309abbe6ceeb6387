"""Every Prometheus collector the proxy exports, in one place, and their exposition.

Each app gets its own registry (tests build many apps in one process). With several uvicorn
workers, set PROMETHEUS_MULTIPROC_DIR: prometheus-client then keeps values in files there
and every worker's `/metrics` answers with the sum over all workers.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import start_http_server
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from .request_record import RequestRecord

logger = logging.getLogger(__name__)

PREFIX = "toolcall_proxy_"
MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Time to the first byte of a stream: tens of ms for a short cached prompt, tens of seconds
# for a long prompt's prefill on a busy server.
FIRST_BYTE_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)
# What the proxy itself adds to a request: well under a millisecond to tens of milliseconds
# (a long history rendered, a large answer parsed whole).
OVERHEAD_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
# Whole requests and upstream exchanges: a long agent turn streams for minutes, up to the
# default total upstream deadline of 600 s.
DURATION_BUCKETS = (
    *(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0),
    *(60.0, 120.0, 180.0, 300.0, 600.0),
)
# Label values that clients choose are capped: the first ones seen are kept, later ones are
# counted as `other`, so a client inventing names cannot grow the series without bound.
MAX_MODEL_LABELS = 32
MAX_TOOL_LABELS = 64  # agents declare tens of tools; MCP servers add a few dozen more
MAX_LABEL_CHARS = 128
OTHER = "other"
NONE = "none"


class UpstreamFailure(StrEnum):
    """`kind` of `toolcall_proxy_upstream_errors_total`."""

    STATUS = "status"  # answered a redirect (never followed), 4xx or 5xx
    TIMEOUT = "timeout"  # no answer, or no next byte, in time
    CONNECT = "connect"  # no connection, or it broke before the status
    MID_STREAM = "mid_stream"  # broke, or sent an error event, after a 2xx status
    BAD_RESPONSE = "bad_response"  # 2xx, but a body or chunk that is not a JSON object


class CallOutcome(StrEnum):
    """`outcome` of `toolcall_proxy_invalid_tool_calls_total`."""

    REPAIRED = "repaired"  # asked for again, and the new reply's calls passed
    SENT = "sent"  # sent as written, with an error record


class StoreEvent(StrEnum):
    """`event` of `toolcall_proxy_response_store_events_total`."""

    HIT = "hit"  # a named response or item was found
    MISS = "miss"  # not found: expired, evicted, never stored, or another client's
    STORED = "stored"  # a response was kept
    EVICTED = "evicted"  # an entry was dropped to keep within the count or the byte budget
    ERROR = "error"  # the store's backend did not answer (a lookup: 503; a write: logged)


class BoundedLabel:
    """Label values for a client-chosen name: the first `limit` distinct ones as themselves,
    every later (or overlong, empty or unprintable) one as "other", and None as "none"."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: set[str] = set()

    def __call__(self, value: str | None) -> str:
        if value is None:
            return NONE
        if value in self._kept:
            return value
        if (
            len(self._kept) >= self._limit
            or not value
            or len(value) > MAX_LABEL_CHARS
            or not value.isprintable()  # a lone surrogate would break every later scrape
        ):
            return OTHER
        self._kept.add(value)
        return value


class ProxyMetrics:
    """The collectors, registered in `registry` (a fresh one by default).

    >>> metrics = ProxyMetrics()
    >>> metrics.upstream_errors.labels(UpstreamFailure.TIMEOUT).inc()
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.model_label = BoundedLabel(MAX_MODEL_LABELS)
        self.tool_label = BoundedLabel(MAX_TOOL_LABELS)

        def counter(name: str, documentation: str, *labels: str) -> Counter:
            return Counter(PREFIX + name, documentation, labels, registry=self.registry)

        def histogram(name: str, documentation: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(
                PREFIX + name, documentation, ["route"], registry=self.registry, buckets=buckets
            )

        self.requests = counter(
            "requests_total",
            "HTTP requests answered.",
            *("route", "model", "protocol", "stream", "status_class"),
        )
        self.request_duration = histogram(
            "request_duration_seconds", "From request to last byte sent.", DURATION_BUCKETS
        )
        self.first_byte = histogram(
            "time_to_first_byte_seconds",
            "From request to the first body byte of a streamed (SSE) answer.",
            FIRST_BYTE_BUCKETS,
        )
        self.overhead = histogram(
            "overhead_seconds",
            "What the proxy itself added to a request that asked the upstream: to the first"
            " byte of a stream, or to a whole answer, less the time it waited on the upstream.",
            OVERHEAD_BUCKETS,
        )
        self.upstream_duration = Histogram(
            PREFIX + "upstream_request_duration_seconds",
            "From sending an upstream request to the end of its answer.",
            registry=self.registry,
            buckets=DURATION_BUCKETS,
        )
        self.upstream_errors = counter("upstream_errors_total", "Upstream failures.", "kind")
        self.tool_calls = counter(
            "tool_calls_total", "Tool calls sent to clients.", "protocol", "tool"
        )
        self.parse_failures = counter(
            "parse_failures_total",
            "Model output that could not become a call as written.",
            *("protocol", "kind"),
        )
        self.dropped_calls = counter(
            "dropped_tool_calls_total",
            "Calls beyond the first, dropped because parallel_tool_calls is false.",
            "protocol",
        )
        self.repeated_calls = counter(
            "repeated_tool_calls_total",
            "Calls identical to one made earlier in the same answer: not sent again.",
            "protocol",
        )
        self.answers_ended_early = counter(
            "answers_ended_early_total",
            "Streamed answers whose upstream stream the proxy closed before the model's output"
            " ended, by why: single_call, repeated_calls, invented_result.",
            *("protocol", "reason"),
        )
        self.rescued_calls = counter(
            "rescued_tool_calls_total",
            "Calls an upstream that calls tools itself left in its text, parsed out of it.",
            "protocol",
        )
        self.forced_call_retries = counter(
            "forced_call_retries_total",
            "Forced calls asked for again after a reply that held none.",
            "protocol",
        )
        self.invalid_calls = counter(
            "invalid_tool_calls_total",
            "Calls whose arguments did not follow their tool's schema, by what came of them:"
            " repaired (asked for again, and the new reply's calls passed) or sent as written.",
            *("protocol", "outcome"),
        )
        self.call_repair_retries = counter(
            "call_repair_retries_total",
            "Answers asked for again because a call's arguments did not follow its tool's schema.",
            "protocol",
        )
        self.dropped_hosted_tools = counter(
            "dropped_hosted_tools_total",
            "Hosted tools (web search, file search...) left out of what the model sees.",
            "type",
        )
        self.streams_in_progress = Gauge(
            PREFIX + "streams_in_progress",
            "SSE answers being sent now.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.client_disconnects = counter(
            "client_disconnects_total", "Clients that left before their answer ended.", "route"
        )
        self.chunks_sent = counter(
            "sse_chunks_sent_total", "Events (chunks) written to SSE answers.", "route"
        )
        self.bytes_sent = counter("sse_sent_bytes_total", "Bytes written to SSE answers.", "route")
        self.tokens = counter(
            "upstream_tokens_total",
            "Tokens the upstream reported in its usage, by kind (prompt, completion).",
            *("kind", "model"),
        )
        self.response_store = counter(
            "response_store_events_total",
            "The Responses store's lookups (hit, miss), writes, evictions and errors.",
            "event",
        )
        self._exposed = _multiprocess_registry() if _multiprocess() else self.registry

    def observe_request(self, record: RequestRecord) -> None:
        """Count one finished request (called once, by the telemetry middleware)."""
        route, model = record.route, self.model_label(record.model)
        stream = "true" if record.stream else "false"
        status_class = f"{record.status // 100}xx"
        self.requests.labels(route, model, record.protocol, stream, status_class).inc()
        self.request_duration.labels(route).observe(record.duration)
        if record.first_byte is not None:
            self.first_byte.labels(route).observe(record.first_byte)
        overhead = record.overhead
        if overhead is not None:
            self.overhead.labels(route).observe(overhead)
        if record.event_stream:
            self.chunks_sent.labels(route).inc(record.chunks_sent)
            self.bytes_sent.labels(route).inc(record.bytes_sent)
        if record.client_disconnected:
            self.client_disconnects.labels(route).inc()
        if record.prompt_tokens or record.completion_tokens:
            self.tokens.labels("prompt", model).inc(record.prompt_tokens)
            self.tokens.labels("completion", model).inc(record.completion_tokens)

    def exposition(self) -> bytes:
        """The Prometheus text format: this process's values, or every worker's summed."""
        return generate_latest(self._exposed)

    @contextmanager
    def served_on(self, host: str, port: int) -> Iterator[None]:
        """Serve the exposition on its own port while the block runs. With several workers
        (multiprocess mode) the first to bind the port serves the sum; the others skip it."""
        try:
            server, thread = start_http_server(port, host, registry=self._exposed)
        except OSError as error:
            if error.errno != errno.EADDRINUSE or not _multiprocess():
                raise
            logger.info("metrics port %d is served by another worker", port)
            yield
            return
        try:
            yield
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def close(self) -> None:
        """Drop this worker's live gauges from the multiprocess sum when it exits."""
        if _multiprocess():
            mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]  # unannotated upstream


def _multiprocess() -> bool:
    return MULTIPROCESS_DIR_VARIABLE in os.environ


def _multiprocess_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # unannotated upstream
    return registry


def prepare_multiprocess_dir() -> None:
    """Before the workers start: create the directory (a worker that cannot write its value
    files fails at its first metric), and remove an earlier run's value files there
    (prometheus-client sums every file it finds, so stale ones would add old counts)."""
    directory = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for values_file in Path(directory).glob("*.db"):
            values_file.unlink()
