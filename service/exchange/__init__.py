"""What the front doors share: the engine's request (a chat request, decoded and checked), its
rewrite for a text-only upstream, and the hosted tools a text-only upstream cannot run."""

from __future__ import annotations

from .hosted_tools import check_hosted_tool, count_dropped_tools
from .request import (
    ChatRequest,
    ChoiceMode,
    checked_chat_request,
    content_text,
    decoded_body,
    invalid,
    parse_chat_request,
)
from .rewrite import FORCED_CHOICES, needs_rewrite, offered_tools, rewrite_request

__all__ = [
    "FORCED_CHOICES",
    "ChatRequest",
    "ChoiceMode",
    "check_hosted_tool",
    "checked_chat_request",
    "content_text",
    "count_dropped_tools",
    "decoded_body",
    "invalid",
    "needs_rewrite",
    "offered_tools",
    "parse_chat_request",
    "rewrite_request",
]
