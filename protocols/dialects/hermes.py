"""Hermes and Qwen2.5: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, the JSON-mix
protocol's own format (its scanner reads it), recognised under the other protocols.

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

Checked against Qwen2.5's chat template and vLLM's `hermes` tool parser. Granite 3.1 writes a
JSON array in the same tag, with no close tag (the output's end closes it)."""

from __future__ import annotations

from ..formats.json_mix import hermes_call
from ..registry import register
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form


@register("hermes")
class Hermes(Dialect):
    forms = (
        open_form(
            "<tool_call>",
            [blanks(), followed_by(r"[\[{`]")],  # the JSON, or its fence
            lambda ctx, open_tag, _name: hermes_call(ctx, open_tag),
        ),
    )
