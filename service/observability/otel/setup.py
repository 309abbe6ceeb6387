"""One app's OpenTelemetry: the SDK's tracer and meter providers with their OTLP exporters,
configured from the environment as the SDK reads it, and the two seams they are fed through,
the server-span middleware and the watched upstream client. Imported only when a signal is
on (see the package)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from starlette.applications import Starlette

from . import Signals
from .server import ServerSpans
from .upstream import GenAIInstruments, UpstreamTelemetry, WatchedClient

DISTRIBUTION = "toolcall-proxy"
# The instrumentation scope the spans and metrics come from.
SCOPE = "toolcall_proxy"
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The values (of those the GenAI instrumentations read) that put content on spans; any other
# value, or none, keeps prompts and answers out of the telemetry.
CONTENT_ON_SPANS = frozenset({"true", "span_only", "span_and_event"})
UNNAMED_SERVICE = "unknown_service"  # the SDK's service name when none is configured
# What exporting the last spans and metrics may take once the app stops, its answers drained:
# to a collector that was down or stalled the exporters retried for 22 and 31 s before the
# process could exit, past what a pod's grace period leaves after the drain. What is not
# exported by then is dropped.
SHUTDOWN_SECONDS = 5.0

logger = logging.getLogger(__name__)


class OpenTelemetry:
    """The app's providers (each None when its signal is off) and what feeds them.

    >>> telemetry = OpenTelemetry.configured(signals(os.environ), os.environ)
    >>> telemetry.add_server_spans(app)
    >>> client = telemetry.upstream_client(timeout=...)
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        *,
        capture_content: bool,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        scope = (SCOPE, version(DISTRIBUTION))
        tracer = None if tracer_provider is None else tracer_provider.get_tracer(*scope)
        instruments = (
            None if meter_provider is None else GenAIInstruments(meter_provider.get_meter(*scope))
        )
        self._upstream = UpstreamTelemetry(tracer, instruments, capture_content=capture_content)
        self._tracer = tracer
        self._capture_content = capture_content

    @classmethod
    def configured(cls, wanted: Signals, environ: Mapping[str, str]) -> OpenTelemetry:
        """Providers for the signals `wanted`; the SDK reads the rest of OTEL_* itself."""
        resource = _resource()
        tracer_provider = None
        if wanted.traces:
            tracer_provider = TracerProvider(resource=resource)  # sampler: OTEL_TRACES_SAMPLER
            tracer_provider.add_span_processor(
                BatchSpanProcessor(_span_exporter(wanted.traces_protocol))
            )
        meter_provider = None
        if wanted.metrics:
            reader = PeriodicExportingMetricReader(_metric_exporter(wanted.metrics_protocol))
            meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        capture = environ.get(CAPTURE_CONTENT, "").strip().lower() in CONTENT_ON_SPANS
        return cls(tracer_provider, meter_provider, capture_content=capture)

    def add_server_spans(self, app: Starlette) -> None:
        """Give every request `app` answers a server span (when traces are on). Added inside
        the request telemetry middleware, whose record it reads."""
        if self._tracer is not None:
            app.add_middleware(
                ServerSpans, tracer=self._tracer, capture_content=self._capture_content
            )

    def upstream_client(self, **options: Any) -> httpx.AsyncClient:
        """httpx's client with these options, each upstream exchange watched."""
        return WatchedClient(self._upstream, **options)

    def shutdown(self, within: float = SHUTDOWN_SECONDS) -> None:
        """Export what is still held, then stop (the app is stopping): given up after
        `within` seconds, the exporters left to a daemon thread the exit does not wait for."""
        exporting = threading.Thread(target=self._shut_down, name="otel-shutdown", daemon=True)
        exporting.start()
        exporting.join(within)
        if exporting.is_alive():
            logger.warning(
                "telemetry not exported within %.1f s of stopping (is the collector down?):"
                " the rest is dropped",
                within,
            )

    def _shut_down(self) -> None:
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()


def _resource() -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as the SDK reads them; the proxy's own
    name where they give none."""
    resource = Resource.create({SERVICE_VERSION: version(DISTRIBUTION)})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith(UNNAMED_SERVICE):
        resource = resource.merge(Resource({SERVICE_NAME: DISTRIBUTION}))
    return resource


def _span_exporter(protocol: str) -> SpanExporter:
    # Each exporter reads its endpoint, headers, timeout, compression and TLS from OTEL_*.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _metric_exporter(protocol: str) -> MetricExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter()
