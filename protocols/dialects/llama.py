"""Llama 3.x: JSON call objects after `<|python_tag|>`, `"parameters"` for the arguments,
several separated by `;`, ended by `<|eom_id|>` (or `<|eot_id|>`) when the server keeps
special tokens:

    <|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>

Checked against Llama 3.1's chat template and vLLM's `llama3_json` tool parser. Without the
tag (the prompt's own format for custom tools) an answer that is only such objects is
read by the off-protocol answer (`off_protocol`)."""

from __future__ import annotations

from ..registry import register
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form
from ..streaming.json_body import JsonBody, JsonBodyCall

_BODY = JsonBody(closers=(("<|eom_id|>", "<|eot_id|>"),), objects=True)


@register("llama3")
class Llama3(Dialect):
    forms = (
        open_form(
            "<|python_tag|>",
            [blanks(), followed_by(r"[\[{]")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _BODY),
        ),
    )
