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
from .hosted_tools import check_hosted_tool
from .request import ChatRequest, checked_chat_request, content_text, decoded_body, invalid
from .rewrite import FORCED_CHOICES, rewrite_request
from .translation import (
    AnswerAssembler,
    DeltaAssembler,
    Event,
    Translation,
    assembled_events,
    named_event,
)

__all__ = [
    "CONTENT",
    "FORCED_CHOICES",
    "REASONING",
    "AnswerAssembler",
    "ChatAnswer",
    "ChatExchange",
    "ChatRequest",
    "Delta",
    "DeltaAssembler",
    "Event",
    "Translation",
    "assembled_events",
    "check_hosted_tool",
    "checked_chat_request",
    "content_text",
    "create_completion",
    "decoded_body",
    "invalid",
    "named_event",
    "rewrite_request",
    "traced_event_response",
    "traced_json_response",
]
