"""The FastAPI app: routes and lifespan only. The one shared upstream client is opened and
closed in the lifespan; every route hands its request to the module that does the work."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import Depends, FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from fastapi.telemetry import TelemetryConfig
from prometheus_client import CONTENT_TYPE_LATEST

from protocols import get_protocol

from .auth import ClientKeys
from .chat import create_completion
from .context import ProxyContext
from .gemini import (
    BETA_PATH,
    MODELS_PATH,
    asks_gemini,
    gemini_model,
    gemini_models,
    google_error_answer,
    model_method,
)
from .messages import (
    MESSAGES_PATH,
    anthropic_error_answer,
    anthropic_model,
    anthropic_models,
    asks_anthropic,
    count_tokens,
    create_message,
)
from .observability import (
    ObservedClient,
    ParserDebug,
    ProxyMetrics,
    RequestTelemetry,
    line_formatter,
    otel,
    use_stderr_unless_configured,
)
from .passthrough import forward, list_models, upstream_ready
from .responses import (
    CONVERSATIONS_PATH,
    ResponseStore,
    cancel_response,
    compact_conversation,
    conversations_not_served,
    count_input_tokens,
    create_response,
    delete_response,
    list_input_items,
    opened_store,
    retrieve_response,
    serve_websocket,
)
from .server_limits import InFlightLimit
from .settings import DEMO_MOUNT_PATH, Settings
from .upstream import ReadLimits, Router, Target, Upstream, build_client, load_routes
from .wire import (
    UPSTREAM_ERROR,
    ErrorShapes,
    ProxyError,
    error_body,
    install_error_handlers,
    json_response,
)

FORWARDED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# Answered however busy the worker is (SERVER_MAX_CONCURRENCY does not apply to them): a
# probe that fails under load would have a working pod restarted or taken out of service.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
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
    client_keys = ClientKeys(settings.proxy_api_keys)
    # Without keys there is nothing to check, and FastAPI would resolve the dependency anyway;
    # the Responses route always asks for it: the store keeps entries under the key's owner.
    client_key = [Depends(client_keys)] if settings.proxy_api_keys else []
    # The Gemini API's routes take the key as `?key=` too (and so do the paths it shares).
    gemini_key = [Depends(ClientKeys(settings.proxy_api_keys, in_query=True))] if client_key else []

    @app.post("/v1/chat/completions", dependencies=client_key)
    async def chat_completions(request: Request) -> Response:
        return await create_completion(request, _context(request))

    @app.post("/v1/responses")
    async def responses(request: Request, owner: str = Depends(client_keys)) -> Response:
        return await create_response(request, _context(request), _store(request), owner)

    @app.websocket("/v1/responses")
    async def responses_websocket(websocket: WebSocket) -> None:
        # Each turn's request is checked again, with the handshake's headers it carries;
        # checked here too, a client with a wrong key is told so before its first turn.
        refused = None
        try:
            await client_keys(websocket)
        except ProxyError as error:
            refused = error
        await serve_websocket(websocket, key_refused=refused)

    @app.post("/v1/responses/input_tokens")
    async def responses_input_tokens(
        request: Request, owner: str = Depends(client_keys)
    ) -> Response:
        return await count_input_tokens(request, _context(request), _store(request), owner)

    @app.post("/v1/responses/compact")
    async def responses_compact(request: Request, owner: str = Depends(client_keys)) -> Response:
        return await compact_conversation(request, _context(request), _store(request), owner)

    @app.get("/v1/responses/{response_id}")
    async def stored_response(
        request: Request, response_id: str, owner: str = Depends(client_keys)
    ) -> Response:
        settings = _context(request).settings
        return await retrieve_response(request, settings, _store(request), owner, response_id)

    @app.delete("/v1/responses/{response_id}")
    async def deleted_response(
        request: Request, response_id: str, owner: str = Depends(client_keys)
    ) -> Response:
        return await delete_response(_store(request), owner, response_id)

    @app.get("/v1/responses/{response_id}/input_items")
    async def response_input_items(
        request: Request, response_id: str, owner: str = Depends(client_keys)
    ) -> Response:
        return await list_input_items(request, _store(request), owner, response_id)

    @app.post("/v1/responses/{response_id}/cancel")
    async def cancelled_response(
        request: Request, response_id: str, owner: str = Depends(client_keys)
    ) -> Response:
        return await cancel_response(_store(request), owner, response_id)

    @app.api_route(CONVERSATIONS_PATH, methods=FORWARDED_METHODS, dependencies=client_key)
    @app.api_route(
        f"{CONVERSATIONS_PATH}/{{path:path}}", methods=FORWARDED_METHODS, dependencies=client_key
    )
    async def conversations() -> Response:
        raise conversations_not_served()

    @app.post(MESSAGES_PATH, dependencies=client_key)
    async def messages(request: Request) -> Response:
        return await create_message(request, _context(request))

    @app.post(f"{MESSAGES_PATH}/count_tokens", dependencies=client_key)
    async def messages_count_tokens(request: Request) -> Response:
        return await count_tokens(request, _context(request))

    @app.get("/v1/models", dependencies=gemini_key)
    async def models(request: Request) -> Response:
        listed = await list_models(request, _context(request))
        if asks_gemini(request):
            return json_response(gemini_models(listed))
        return json_response(anthropic_models(listed) if asks_anthropic(request) else listed)

    @app.get("/v1/models/{model:path}", dependencies=gemini_key)
    async def model(request: Request, model: str) -> Response:
        if asks_gemini(request):
            listed = await list_models(request, _context(request))
            return json_response(gemini_model(listed, model))
        if asks_anthropic(request):
            listed = await list_models(request, _context(request))
            return json_response(anthropic_model(listed, model))
        return await forward(request, _context(request))

    @app.post(f"{BETA_PATH}/models/{{target:path}}", dependencies=gemini_key)
    @app.post(f"{MODELS_PATH}/{{target:path}}", dependencies=gemini_key)
    async def gemini_model_method(request: Request, target: str) -> Response:
        return await model_method(request, _context(request), target)

    @app.get(f"{BETA_PATH}/models", dependencies=gemini_key)
    async def gemini_model_list(request: Request) -> Response:
        return json_response(gemini_models(await list_models(request, _context(request))))

    @app.get(f"{BETA_PATH}/models/{{model:path}}", dependencies=gemini_key)
    async def gemini_model_get(request: Request, model: str) -> Response:
        return json_response(gemini_model(await list_models(request, _context(request)), model))

    @app.api_route("/v1/{path:any_path}", methods=FORWARDED_METHODS, dependencies=client_key)
    async def other_endpoints(request: Request) -> Response:
        return await forward(request, _context(request))

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> Response:
        store = _store(request)
        upstream_answers, store_answers = await asyncio.gather(
            upstream_ready(_context(request)), store.ready()
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

        @app.get("/metrics")
        async def prometheus_metrics() -> Response:
            return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    if settings.uses_demo_upstream:
        # Imported only here: a deployment with a real upstream never loads the demo.
        from .demo_upstream import create_demo_upstream

        app.mount(DEMO_MOUNT_PATH, create_demo_upstream(get_protocol(settings.tool_protocol)))
    return app


def app_from_environment() -> FastAPI:
    """uvicorn's factory (`service.app:app_from_environment`): settings from the environment,
    which the CLI fills from its flags, so every worker process builds the same app."""
    return create_app(Settings())


def _context(request: Request) -> ProxyContext:
    context: ProxyContext = request.app.state.context
    return context


def _store(request: Request) -> ResponseStore:
    store: ResponseStore = request.app.state.response_store
    return store
