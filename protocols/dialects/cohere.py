"""Cohere Command A and R7B: an action block holding a JSON array of calls, each
`{"tool_call_id", "tool_name", "parameters"}`, after an optional plan in a thinking block:

    <|START_THINKING|>I will look up the weather.<|END_THINKING|>
    <|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>

Checked against SGLang's `cohere_command4` detector (vLLM reads it with Cohere's own
filter). The call ends where its JSON does, `<|END_ACTION|>` after it."""

from __future__ import annotations

from ..registry import register
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form
from ..streaming.json_body import JsonBody, JsonBodyCall

_BODY = JsonBody(closers=(("<|END_ACTION|>",),), objects=True)


@register("cohere")
class Cohere(Dialect):
    forms = (
        open_form(
            "<|START_ACTION|>",
            [blanks(), followed_by(r"[\[{]")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _BODY),
        ),
    )
