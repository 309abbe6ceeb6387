"""`GET /v1beta/models` and `/v1beta/models/{model}`: the models `/v1/models` lists (the
default upstream's and every route's), as the Gemini API's `Model` objects."""

from __future__ import annotations

from typing import Any

from ..upstream import model_entries
from ..wire import ProxyError

MODEL_PREFIX = "models/"
# What the proxy serves of every model.
GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
# Fields of an OpenAI-style model entry that some upstreams (vLLM) add: the context length.
CONTEXT_LENGTH_FIELDS = ("max_model_len", "context_length")


def model_id(name: str) -> str:
    """The model a path names: `models/gemini-x` and `gemini-x` are the same one."""
    return name.removeprefix(MODEL_PREFIX)


def gemini_models(listed: dict[str, Any]) -> dict[str, Any]:
    """`GET /v1/models`'s list as the Gemini API lists models, in one page (`pageSize` and
    `pageToken` change nothing)."""
    return {"models": [_model(entry) for entry in model_entries(listed)]}


def gemini_model(listed: dict[str, Any], name: str) -> dict[str, Any]:
    """One model of `GET /v1/models`'s list, or 404 when it does not hold it."""
    wanted = model_id(name)
    for entry in model_entries(listed):
        if entry["id"] == wanted:
            return _model(entry)
    raise ProxyError(404, f"models/{wanted} is not found", code="model_not_found")


def _model(entry: dict[str, Any]) -> dict[str, Any]:
    model: dict[str, Any] = {
        "name": MODEL_PREFIX + entry["id"],
        "displayName": entry["id"],
        "supportedGenerationMethods": GENERATION_METHODS,
    }
    for name in CONTEXT_LENGTH_FIELDS:
        if type(limit := entry.get(name)) is int:
            model["inputTokenLimit"] = limit
            break
    return model
