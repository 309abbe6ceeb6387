"""`GET /v1/models`, which three APIs share: listed in Google's shape for a Gemini client,
in Anthropic's for an Anthropic client, else OpenAI's (one model forwarded upstream as it
is)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from .auth import RouteKeys
from .context import context_of
from .gemini import asks_gemini, gemini_model, gemini_models
from .messages import anthropic_model, anthropic_models, asks_anthropic
from .passthrough import forward, list_models
from .wire import json_response


def model_routes(keys: RouteKeys) -> APIRouter:
    routes = APIRouter()

    @routes.get("/v1/models", dependencies=keys.in_query)
    async def models(request: Request) -> Response:
        listed = await list_models(request, context_of(request))
        if asks_gemini(request):
            return json_response(gemini_models(listed))
        return json_response(anthropic_models(listed) if asks_anthropic(request) else listed)

    @routes.get("/v1/models/{model:path}", dependencies=keys.in_query)
    async def model(request: Request, model: str) -> Response:
        if asks_gemini(request):
            listed = await list_models(request, context_of(request))
            return json_response(gemini_model(listed, model))
        if asks_anthropic(request):
            listed = await list_models(request, context_of(request))
            return json_response(anthropic_model(listed, model))
        return await forward(request, context_of(request))

    return routes
