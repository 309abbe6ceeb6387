"""`GET /v1/models` for Anthropic's clients: the models the proxy lists (the default
upstream's and every route's, aliases included) as Anthropic's Models API lists them, which
Claude Code reads for its gateway model discovery (it keeps the ids that begin `claude` or
`anthropic`, so a route may declare a `claude-...` alias for a local model)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from ..upstream import model_entries
from ..wire import API_KEY_HEADER, ProxyError

# Anthropic's SDKs and Claude Code send both on every request; OpenAI's clients neither.
ANTHROPIC_VERSION_HEADER = "anthropic-version"
# A model's creation time when the upstream gives none (Anthropic's list requires one).
EPOCH = "1970-01-01T00:00:00Z"


def asks_anthropic(request: Request) -> bool:
    """Whether a request to a path both APIs have (`GET /v1/models`) comes from an Anthropic
    API client."""
    return ANTHROPIC_VERSION_HEADER in request.headers or API_KEY_HEADER in request.headers


def anthropic_models(listed: dict[str, Any]) -> dict[str, Any]:
    """`GET /v1/models`'s list as Anthropic's Models API lists models, in one page (`limit`,
    `before_id` and `after_id` change nothing: the list is short)."""
    models = [_model(entry) for entry in model_entries(listed)]
    return {
        "data": models,
        "has_more": False,
        "first_id": models[0]["id"] if models else None,
        "last_id": models[-1]["id"] if models else None,
    }


def anthropic_model(listed: dict[str, Any], model_id: str) -> dict[str, Any]:
    """One model of the list, or a 404 when it does not hold it."""
    for entry in model_entries(listed):
        if entry["id"] == model_id:
            return _model(entry)
    raise ProxyError(404, f"model: {model_id} is not found", code="model_not_found")


def _model(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "model",
        "id": entry["id"],
        "display_name": entry["id"],
        "created_at": EPOCH,
    }
