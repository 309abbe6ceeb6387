"""`POST /v1/chat/completions`: the client's request decoded and checked, rewritten into a
tools-free upstream request, and answered streaming, whole, or as one forced call."""

from __future__ import annotations

from .chunks import CONTENT, REASONING, Delta
from .completions import (
    ChatAnswer,
    ChatExchange,
    create_completion,
    traced_event_response,
    traced_json_response,
)
from .request import ChatRequest, checked_chat_request, decoded_body, invalid
from .rewrite import FORCED_CHOICES, rewrite_request

__all__ = [
    "CONTENT",
    "FORCED_CHOICES",
    "REASONING",
    "ChatAnswer",
    "ChatExchange",
    "ChatRequest",
    "Delta",
    "checked_chat_request",
    "create_completion",
    "decoded_body",
    "invalid",
    "rewrite_request",
    "traced_event_response",
    "traced_json_response",
]
