"""The Gemini door's routes: a model's methods (`models/m:generateContent` ...) under both
API versions, and the model list under v1beta (v1's is shared with OpenAI's clients:
`service/model_routes.py`)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..auth import RouteKeys
from ..context import context_of
from ..passthrough import list_models
from ..wire import json_response
from .api import model_method
from .errors import BETA_PATH, MODELS_PATH
from .models import gemini_model, gemini_models


def gemini_routes(keys: RouteKeys) -> APIRouter:
    routes = APIRouter()

    @routes.post(f"{BETA_PATH}/models/{{target:path}}", dependencies=keys.in_query)
    @routes.post(f"{MODELS_PATH}/{{target:path}}", dependencies=keys.in_query)
    async def gemini_model_method(request: Request, target: str) -> Response:
        return await model_method(request, context_of(request), target)

    @routes.get(f"{BETA_PATH}/models", dependencies=keys.in_query)
    async def gemini_model_list(request: Request) -> Response:
        return json_response(gemini_models(await list_models(request, context_of(request))))

    @routes.get(f"{BETA_PATH}/models/{{model:path}}", dependencies=keys.in_query)
    async def gemini_model_get(request: Request, model: str) -> Response:
        listed = await list_models(request, context_of(request))
        return json_response(gemini_model(listed, model))

    return routes
