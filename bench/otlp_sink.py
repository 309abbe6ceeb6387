"""An OTLP/HTTP endpoint that takes every export and drops it: where `tracing.py` points the
proxy, so that what is measured is the proxy's side of exporting, not a collector's."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def taken(request: Request) -> Response:
    await request.body()
    return Response(media_type="application/x-protobuf")


async def healthz(request: Request) -> Response:
    return Response()


def create_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/traces", taken, methods=["POST"]),
            Route("/v1/metrics", taken, methods=["POST"]),
            Route("/healthz", healthz),
        ]
    )
