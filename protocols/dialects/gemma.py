"""Gemma: calls as Python code in a ```tool_code block, as Google's function-calling prompts
for Gemma ask (results go back in a ```tool_output block):

    ```tool_code
    get_weather(city="Paris")
    ```

Checked against Google's Gemma function-calling guides. The block is read whole once it
closes (`python_calls`); it holds calls of declared tools only, or it is text."""

from __future__ import annotations

from typing import Any

from ..lenient.python_calls import pythonic_calls
from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, Piece, literal, open_form

FENCE = "```"


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return pythonic_calls(body, budget, one_list=False)


_BODY = DelimitedBody(ends=(FENCE,), read=_read)


@register("gemma")
class Gemma(Dialect):
    forms = (
        open_form(
            FENCE,
            [literal("tool_code"), Piece(r"[ \t]*\n", r"[ \t]*")],
            delimited(_BODY),
        ),
    )
