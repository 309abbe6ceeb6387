"""The FastAPI app: the lifespan, the error shapes and middleware, and the list of front
doors, each registering its own routes (`chat/routes.py`, `responses/routes.py` ...). The
one shared upstream client is opened and closed in the lifespan."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig

from protocols import get_protocol

from .auth import RouteKeys
from .chat import chat_routes
from .context import ProxyContext
from .gemini import BETA_PATH, MODELS_PATH, asks_gemini, gemini_routes, google_error_answer
from .messages import MESSAGES_PATH, anthropic_error_answer, messages_routes
from .model_routes import model_routes
from .observability import (
    ObservedClient,
    ParserDebug,
    ProxyMetrics,
    RequestTelemetry,
    line_formatter,
    otel,
    use_stderr_unless_configured,
)
from .passthrough import passthrough_routes
from .probes import PROBE_PATHS, probe_routes
from .responses import opened_store, responses_routes
from .server_limits import InFlightLimit
from .settings import DEMO_MOUNT_PATH, Settings
from .upstream import ReadLimits, Router, Target, Upstream, build_client, load_routes
from .wire import ErrorShapes, install_error_handlers

# FastAPI's own OpenTelemetry, off: the proxy makes its own server spans (with the GenAI
# attributes) when OTEL_* asks for them, and FastAPI's beside them would be a second span per
# request, and with FASTAPI_OTEL_AUTO_CONFIGURE a second set of exporters. Off, no request
# asks the global providers whether it is on.
NO_FASTAPI_TELEMETRY: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "auto_configure": False,
}


def build_router(settings: Settings) -> Router:
    """The model router: the default upstream plus the routes file's routes, if any."""
    default = Target(
        base_url=settings.effective_upstream_url,
        model=None,
        protocol_name=settings.tool_protocol,
        api_key=settings.upstream_api_key,
        native_tools=settings.upstream_native_tools,
        structured_output=settings.upstream_structured_output,
        call_repair_retries=settings.call_repair_retries,
        single_call=settings.single_call,
    )
    routes = {} if settings.routes_file is None else load_routes(settings.routes_file, default)
    return Router(default, routes)


def create_app(settings: Settings) -> FastAPI:
    """The proxy as an ASGI app, with its own metrics registry. Raises `RoutesFileError`
    for a bad routes file.

    >>> uvicorn.run(create_app(Settings(upstream_base_url="http://127.0.0.1:8001/v1")))
    """
    router = build_router(settings)
    metrics = ProxyMetrics()
    telemetry = otel.from_environment(os.environ)  # None unless OTEL_* asks for it
    debug = ParserDebug.configured(settings.debug_parser_mw, settings.debug_parser_mw_style)
    if settings.access_log or debug is not None:
        use_stderr_unless_configured(line_formatter(settings.log_format))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = build_client(
            connect_timeout=settings.upstream_connect_timeout,
            read_timeout=settings.upstream_read_timeout,
            max_connections=settings.upstream_max_connections,
            client_of=ObservedClient if telemetry is None else telemetry.upstream_client,
        )
        async with AsyncExitStack() as stack:
            if telemetry is not None:  # shut down last: what the closing requests sent is kept
                stack.callback(telemetry.shutdown)
            await stack.enter_async_context(client)
            stack.callback(metrics.close)
            if settings.metrics_port is not None:
                stack.enter_context(
                    metrics.served_on(settings.effective_metrics_host, settings.metrics_port)
                )
            limits = ReadLimits(
                max_line_bytes=settings.upstream_max_line_bytes,
                max_body_bytes=settings.upstream_max_body_bytes,
            )
            upstream = Upstream(
                client,
                total_timeout=settings.upstream_total_timeout,
                metrics=metrics,
                limits=limits,
            )
            store = await stack.enter_async_context(opened_store(settings, metrics))
            app.state.context = ProxyContext(
                settings, upstream, router, metrics, debug, settings.parser_options()
            )
            app.state.response_store = store
            yield

    app = FastAPI(
        title="toolcall-proxy",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        telemetry=NO_FASTAPI_TELEMETRY,
    )
    # Anthropic's and Google's clients read errors in their API's shape, under every path of
    # it (Google's under a model's methods on /v1 too, where OpenAI's clients list models,
    # and on the models themselves when a Gemini client asks for them).
    shapes = ErrorShapes(
        {MESSAGES_PATH: anthropic_error_answer, BETA_PATH: google_error_answer},
        custom_methods={MODELS_PATH: google_error_answer},
        shared={MODELS_PATH: (asks_gemini, google_error_answer)},
    )
    install_error_handlers(app, shapes)
    if settings.server_max_concurrency is not None:  # added first: telemetry sees its 503s
        app.add_middleware(
            InFlightLimit, limit=settings.server_max_concurrency, exempt=PROBE_PATHS, shapes=shapes
        )
    if telemetry is not None:  # inside the request telemetry, whose record the spans read
        telemetry.add_server_spans(app)
    app.add_middleware(
        RequestTelemetry,
        metrics=metrics,
        access_log=settings.access_log,
    )
    keys = RouteKeys(settings.proxy_api_keys)
    # The doors, in the order their paths are matched: the passthrough's `/v1/*` last.
    for routes in (
        chat_routes(keys),
        responses_routes(keys),
        messages_routes(keys),
        model_routes(keys),
        gemini_routes(keys),
        passthrough_routes(keys),
        probe_routes(settings),
    ):
        app.include_router(routes)

    if settings.uses_demo_upstream:
        # Imported only here: a deployment with a real upstream never loads the demo.
        from .demo_upstream import create_demo_upstream

        app.mount(DEMO_MOUNT_PATH, create_demo_upstream(get_protocol(settings.tool_protocol)))
    return app


def app_from_environment() -> FastAPI:
    """uvicorn's factory (`service.app:app_from_environment`): settings from the environment,
    which the CLI fills from its flags, so every worker process builds the same app."""
    return create_app(Settings())
