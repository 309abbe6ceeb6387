"""IBM Granite 3.0 and Phi-4-mini: JSON call objects after `<|tool_call|>`, a list (Granite)
or one object closed by `<|/tool_call|>` (Phi):

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]
    <|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|/tool_call|>

Checked against vLLM's `granite` tool parser and Phi-4-mini's chat template (as llama.cpp
ships it). Granite 3.1's `<tool_call>[...]` is the hermes dialect's."""

from __future__ import annotations

from ..registry import register
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form
from ..streaming.json_body import JsonBody, JsonBodyCall

_BODY = JsonBody(closers=(("<|/tool_call|>",),), objects=True)


@register("granite")
class Granite(Dialect):
    forms = (
        open_form(
            "<|tool_call|>",
            [blanks(), followed_by(r"[\[{]")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _BODY),
        ),
    )
