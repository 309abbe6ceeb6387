"""`POST /v1/messages` and `POST /v1/messages/count_tokens`: Anthropic's Messages API
translated onto the chat machinery, for Claude Code and the Anthropic SDKs."""

from __future__ import annotations

from .api import count_tokens, create_message
from .errors import MESSAGES_PATH, anthropic_error_answer
from .models import anthropic_model, anthropic_models, asks_anthropic
from .routes import messages_routes

__all__ = [
    "MESSAGES_PATH",
    "anthropic_error_answer",
    "anthropic_model",
    "anthropic_models",
    "asks_anthropic",
    "count_tokens",
    "create_message",
    "messages_routes",
]
