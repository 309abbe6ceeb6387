"""A real OTLP receiver on loopback, over HTTP (`app`, to serve) or gRPC (`grpc_served`): the
exporter's protobuf bytes, as a collector gets them, decoded with OpenTelemetry's own proto
definitions into spans and metric points tests can read.

>>> receiver = OtlpReceiver()
>>> with serve(receiver.app) as url:  # OTEL_EXPORTER_OTLP_ENDPOINT=url
...     ...  # call the proxy
...     receiver.wait_for(lambda: receiver.of_kind(SERVER))
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2_grpc import (
    MetricsServiceServicer,
    add_MetricsServiceServicer_to_server,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PROTOBUF = "application/x-protobuf"
SERVER = SpanMessage.SPAN_KIND_SERVER
CLIENT = SpanMessage.SPAN_KIND_CLIENT
ERROR = Status.STATUS_CODE_ERROR
# A bound, not synchronisation: spans that never come fail the test instead of hanging it.
WAIT_SECONDS = 10.0


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    return None if kind is None else getattr(value, kind)


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: any_value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass(frozen=True)
class Event:
    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Span:
    """One exported span, its ids as hex."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    events: list[Event]
    status: int
    resource: dict[str, Any]
    start_ns: int
    end_ns: int

    def events_named(self, name: str) -> list[Event]:
        return [event for event in self.events if event.name == name]


@dataclass(frozen=True)
class Point:
    """One histogram data point of an exported metric."""

    metric: str
    unit: str
    attributes: dict[str, Any]
    count: int
    sum: float


@dataclass
class OtlpReceiver:
    """Spans and metric points received, with the headers each export came with."""

    spans: list[Span] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/traces", self._traces, methods=["POST"]),
                Route("/v1/metrics", self._metrics, methods=["POST"]),
            ]
        )

    def wait_for(self, condition: Callable[[], Any]) -> None:
        """Until `condition()` holds over what has arrived (checked at each export)."""
        with self._arrived:
            assert self._arrived.wait_for(condition, WAIT_SECONDS), "the exports never came"

    def spans_named(self, name: str) -> list[Span]:
        return [span for span in self.spans if span.name == name]

    def of_kind(self, kind: int) -> list[Span]:
        return [span for span in self.spans if span.kind == kind]

    def children_of(self, parent: Span) -> list[Span]:
        """`parent`'s child spans, in the order they started."""
        children = [span for span in self.spans if span.parent_span_id == parent.span_id]
        return sorted(children, key=lambda span: span.start_ns)

    def points_of(self, metric: str) -> list[Point]:
        return [point for point in self.points if point.metric == metric]

    @contextmanager
    def grpc_served(self) -> Iterator[str]:
        """This receiver served over gRPC on a loopback port; yields its URL."""
        server = grpc.server(ThreadPoolExecutor(max_workers=2))
        add_TraceServiceServicer_to_server(_GrpcTraces(self), server)
        add_MetricsServiceServicer_to_server(_GrpcMetrics(self), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop(grace=None)

    def take_traces(self, export: ExportTraceServiceRequest) -> None:
        spans = [
            _span(span, attributes_of(resource_spans.resource.attributes))
            for resource_spans in export.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self._arrived:
            self.spans += spans
            self._arrived.notify_all()

    def take_metrics(self, export: ExportMetricsServiceRequest) -> None:
        points = [
            Point(metric.name, metric.unit, attributes_of(point.attributes), point.count, point.sum)
            for resource_metrics in export.resource_metrics
            for scope_metrics in resource_metrics.scope_metrics
            for metric in scope_metrics.metrics
            if metric.WhichOneof("data") == "histogram"
            for point in metric.histogram.data_points
        ]
        with self._arrived:
            self.points += points
            self._arrived.notify_all()

    async def _traces(self, request: Request) -> Response:
        self.take_traces(ExportTraceServiceRequest.FromString(await self._body(request)))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)

    async def _metrics(self, request: Request) -> Response:
        self.take_metrics(ExportMetricsServiceRequest.FromString(await self._body(request)))
        return Response(ExportMetricsServiceResponse().SerializeToString(), media_type=PROTOBUF)

    async def _body(self, request: Request) -> bytes:
        assert request.headers["content-type"] == PROTOBUF
        with self._arrived:
            self.headers.append(dict(request.headers))
        body = await request.body()
        return gzip.decompress(body) if request.headers.get("content-encoding") == "gzip" else body


class _GrpcTraces(TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> Any:
        self._receiver.take_traces(request)
        return ExportTraceServiceResponse()


class _GrpcMetrics(MetricsServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: ExportMetricsServiceRequest, context: Any) -> Any:
        self._receiver.take_metrics(request)
        return ExportMetricsServiceResponse()


def _span(span: SpanMessage, resource: dict[str, Any]) -> Span:
    return Span(
        name=span.name,
        kind=span.kind,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        attributes=attributes_of(span.attributes),
        events=[Event(event.name, attributes_of(event.attributes)) for event in span.events],
        status=span.status.code,
        resource=resource,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
    )
