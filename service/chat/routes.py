"""The chat completions door's route."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..auth import RouteKeys
from ..context import context_of
from .completions import create_completion


def chat_routes(keys: RouteKeys) -> APIRouter:
    routes = APIRouter()

    @routes.post("/v1/chat/completions", dependencies=keys.checked)
    async def chat_completions(request: Request) -> Response:
        return await create_completion(request, context_of(request))

    return routes
