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
    "REASONING",
    "AnswerAssembler",
    "ChatAnswer",
    "ChatExchange",
    "Delta",
    "DeltaAssembler",
    "Event",
    "Translation",
    "assembled_events",
    "create_completion",
    "named_event",
    "traced_event_response",
    "traced_json_response",
]
