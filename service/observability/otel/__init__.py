"""OpenTelemetry, opt-in by the standard OTEL_* variables alone: a server span per request,
a GenAI client span per upstream request (the W3C trace context taken from the client and
sent on upstream), and the GenAI client metrics, exported over OTLP.

Traces are on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set,
metrics when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is; either
is off with OTEL_SDK_DISABLED=true or its OTEL_{TRACES,METRICS}_EXPORTER=none. Everything
else (protocol, service name, sampler, headers, batching) the SDK reads as it always does.

This module reads the environment only: the SDK is imported when a signal is on, so a proxy
without OTEL_* pays nothing for it, not even the import.

>>> telemetry = from_environment(os.environ)  # None: nothing asked for
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .setup import OpenTelemetry

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
SDK_DISABLED = "OTEL_SDK_DISABLED"
NO_EXPORTER = "none"
# The OTLP encodings whose official exporters come with the proxy; http/json has none stable.
SUPPORTED_PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_PROTOCOL = "http/protobuf"  # the specification's default


class OpenTelemetryConfigError(ValueError):
    """An OTEL_* variable asks for what the proxy cannot do."""


@dataclass(frozen=True, slots=True)
class Signals:
    """What the environment turns on, and the OTLP protocol each is exported with."""

    traces: bool
    metrics: bool
    traces_protocol: str = DEFAULT_PROTOCOL
    metrics_protocol: str = DEFAULT_PROTOCOL

    @property
    def any(self) -> bool:
        return self.traces or self.metrics


def signals(environ: Mapping[str, str]) -> Signals:
    """Read which signals are on; raises `OpenTelemetryConfigError` for a protocol that no
    exporter here speaks."""
    if environ.get(SDK_DISABLED, "").strip().lower() == "true":
        return Signals(traces=False, metrics=False)
    traces, metrics = (_wanted(environ, signal) for signal in ("TRACES", "METRICS"))
    return Signals(
        traces=traces,
        metrics=metrics,
        traces_protocol=_protocol(environ, "TRACES") if traces else DEFAULT_PROTOCOL,
        metrics_protocol=_protocol(environ, "METRICS") if metrics else DEFAULT_PROTOCOL,
    )


def from_environment(environ: Mapping[str, str]) -> OpenTelemetry | None:
    """The app's telemetry, or None when OTEL_* turns nothing on (then nothing is imported)."""
    wanted = signals(environ)
    if not wanted.any:
        return None
    from .setup import OpenTelemetry

    return OpenTelemetry.configured(wanted, environ)


def _wanted(environ: Mapping[str, str], signal: str) -> bool:
    endpoint = environ.get(ENDPOINT) or environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    exporter = environ.get(f"OTEL_{signal}_EXPORTER", "").strip().lower()
    return bool(endpoint) and exporter != NO_EXPORTER


def _protocol(environ: Mapping[str, str], signal: str) -> str:
    variable = f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"
    protocol = (environ.get(variable) or environ.get(PROTOCOL) or DEFAULT_PROTOCOL).strip()
    if protocol not in SUPPORTED_PROTOCOLS:
        raise OpenTelemetryConfigError(
            f"{variable}={protocol!r}: not an OTLP protocol the proxy exports"
            f" ({variable} or {PROTOCOL}); accepted: {', '.join(SUPPORTED_PROTOCOLS)}"
        )
    return protocol
