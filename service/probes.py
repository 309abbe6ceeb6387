"""The probes, answered however busy the worker is (SERVER_MAX_CONCURRENCY does not apply
to them: a probe that fails under load would have a working pod restarted or taken out of
service): liveness, readiness, and the metrics where no port of their own serves them."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from .context import context_of
from .passthrough import upstream_ready
from .responses import store_of
from .settings import Settings
from .wire import UPSTREAM_ERROR, error_body

PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def probe_routes(settings: Settings) -> APIRouter:
    routes = APIRouter()

    @routes.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @routes.get("/readyz")
    async def readyz(request: Request) -> Response:
        store = store_of(request)
        upstream_answers, store_answers = await asyncio.gather(
            upstream_ready(context_of(request)), store.ready()
        )
        # Reported, not required: without its store the proxy still serves chat completions
        # and whole-item responses, and a shared store down would take every replica out.
        response_store = {"backend": store.backend, "ready": store_answers}
        if upstream_answers:
            return JSONResponse({"status": "ready", "response_store": response_store})
        body = error_body(
            "upstream is not answering GET /models", error_type=UPSTREAM_ERROR, code="not_ready"
        )
        return JSONResponse({**body, "response_store": response_store}, status_code=503)

    if settings.metrics_port is None:  # else only the metrics port serves them

        @routes.get("/metrics")
        async def prometheus_metrics(request: Request) -> Response:
            metrics = context_of(request).metrics
            return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return routes
