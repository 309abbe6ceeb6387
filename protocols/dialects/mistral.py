"""Mistral: `[TOOL_CALLS]` then a JSON array of call objects (tokenizers before v11), or the
tool's name and its arguments object, `[ARGS]` between (v11 on; a `[CALL_ID]` may come
first; the Mistral tokenizer leaves `[ARGS]` out of the text), one `[TOOL_CALLS]` per call:

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
    [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}

Checked against Mistral Small 3.2's and Ministral's chat templates and vLLM's `mistral`
tool parser. The call ends where its JSON does."""

from __future__ import annotations

from ..registry import register
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    followed_by,
    literal,
    open_form,
    prefixes,
    tool_name,
)
from ..streaming.json_body import JsonBody, JsonBodyCall

MARKER, CALL_ID, ARGS = "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]"
_ID = r"[A-Za-z0-9]{1,64}"
_CALL_ID = Piece(
    rf"(?:\[CALL_ID\]{_ID})?", rf"(?:\[CALL_ID\][A-Za-z0-9]{{0,64}}|{prefixes(CALL_ID)})?"
)
_LIST, _ARGUMENTS = JsonBody(objects=True), JsonBody()


@register("mistral")
class Mistral(Dialect):
    forms = (
        open_form(
            MARKER,
            [blanks(), followed_by(r"\[")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _LIST),
        ),
        open_form(
            MARKER,
            [blanks(), tool_name(), _CALL_ID, literal(ARGS)],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _ARGUMENTS),
        ),
        open_form(
            MARKER,
            [blanks(), tool_name(), blanks(), followed_by(r"\{")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _ARGUMENTS),
        ),
    )
