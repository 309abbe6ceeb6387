"""Phi-4-mini: the word `functools` and a JSON array of call objects:

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

Checked against vLLM's `phi4_mini_json` parser, which looks for it anywhere in an answer
(`functools[...]`). The word has no special token to tell it from prose, so the reading
context decides as for any open tag (`reading_context`): where a message begins, or after a
sentence on its line ("Sure! functools[...]"), it is a call; quoted or in a sentence that
goes on ("writes functools[...] when it calls"), it is text. The call ends where its JSON
does. The `<|tool_call|>` spelling of Phi-4-mini's llama.cpp template is the granite
dialect's."""

from __future__ import annotations

from ..registry import register
from ..streaming.dialect_forms import Dialect, Piece, blanks, open_form
from ..streaming.json_body import JsonBody, JsonBodyCall

WORD = "functools"
_LIST = JsonBody(objects=True)
# An array whose first item is an object, not part of the tag: `functools[0]` is code.
_ARRAY_OF_OBJECTS = Piece(r"(?=\[\s{0,8}\{)", r"(?:\[\s{0,8})?", first=r"\[")


@register("phi4-mini")
class Phi4Mini(Dialect):
    forms = (
        open_form(
            WORD,
            [blanks(8), _ARRAY_OF_OBJECTS],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _LIST),
        ),
    )
