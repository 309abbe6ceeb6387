"""The Responses door's routes: create, over HTTP and over a WebSocket, count, compact, and
read back, cancel or delete a stored response; `/v1/conversations` answered, not forwarded."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response, WebSocket
from starlette.requests import HTTPConnection

from ..auth import RouteKeys
from ..context import context_of
from ..passthrough import FORWARDED_METHODS
from ..wire import ProxyError
from .api import count_input_tokens, create_response
from .compaction import compact_conversation
from .conversations import CONVERSATIONS_PATH, conversations_not_served
from .retrieval import cancel_response, delete_response, list_input_items, retrieve_response
from .store import ResponseStore
from .websocket import serve_websocket


def store_of(request: HTTPConnection) -> ResponseStore:
    """The app's response store, opened in its lifespan."""
    store: ResponseStore = request.app.state.response_store
    return store


def responses_routes(keys: RouteKeys) -> APIRouter:
    routes = APIRouter()
    owner_of = Depends(keys.owner)

    @routes.post("/v1/responses")
    async def responses(request: Request, owner: str = owner_of) -> Response:
        return await create_response(request, context_of(request), store_of(request), owner)

    @routes.websocket("/v1/responses")
    async def responses_websocket(websocket: WebSocket) -> None:
        # Each turn's request is checked again, with the handshake's headers it carries;
        # checked here too, a client with a wrong key is told so before its first turn.
        refused = None
        try:
            await keys.owner(websocket)
        except ProxyError as error:
            refused = error
        await serve_websocket(websocket, key_refused=refused)

    @routes.post("/v1/responses/input_tokens")
    async def responses_input_tokens(request: Request, owner: str = owner_of) -> Response:
        context = context_of(request)
        return await count_input_tokens(request, context, store_of(request), owner)

    @routes.post("/v1/responses/compact")
    async def responses_compact(request: Request, owner: str = owner_of) -> Response:
        context = context_of(request)
        return await compact_conversation(request, context, store_of(request), owner)

    @routes.get("/v1/responses/{response_id}")
    async def stored_response(
        request: Request, response_id: str, owner: str = owner_of
    ) -> Response:
        settings = context_of(request).settings
        return await retrieve_response(request, settings, store_of(request), owner, response_id)

    @routes.delete("/v1/responses/{response_id}")
    async def deleted_response(
        request: Request, response_id: str, owner: str = owner_of
    ) -> Response:
        return await delete_response(store_of(request), owner, response_id)

    @routes.get("/v1/responses/{response_id}/input_items")
    async def response_input_items(
        request: Request, response_id: str, owner: str = owner_of
    ) -> Response:
        return await list_input_items(request, store_of(request), owner, response_id)

    @routes.post("/v1/responses/{response_id}/cancel")
    async def cancelled_response(
        request: Request, response_id: str, owner: str = owner_of
    ) -> Response:
        return await cancel_response(store_of(request), owner, response_id)

    @routes.api_route(CONVERSATIONS_PATH, methods=FORWARDED_METHODS, dependencies=keys.checked)
    @routes.api_route(
        f"{CONVERSATIONS_PATH}/{{path:path}}", methods=FORWARDED_METHODS, dependencies=keys.checked
    )
    async def conversations() -> Response:
        raise conversations_not_served()

    return routes
