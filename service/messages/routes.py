"""The Messages door's routes."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..auth import RouteKeys
from ..context import context_of
from .api import count_tokens, create_message
from .errors import MESSAGES_PATH


def messages_routes(keys: RouteKeys) -> APIRouter:
    routes = APIRouter()

    @routes.post(MESSAGES_PATH, dependencies=keys.checked)
    async def messages(request: Request) -> Response:
        return await create_message(request, context_of(request))

    @routes.post(f"{MESSAGES_PATH}/count_tokens", dependencies=keys.checked)
    async def messages_count_tokens(request: Request) -> Response:
        return await count_tokens(request, context_of(request))

    return routes
