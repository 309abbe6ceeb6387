"""Gemma 4 and FunctionGemma: `call:name{key:value,...}` in their own value syntax, strings
between delimiter tokens (Gemma 4's `<|"|>`, FunctionGemma's `<escape>`):

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
    <start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>

Checked against SGLang's `gemma4` detector and vLLM's `gemma4` and `functiongemma` parsers.
Read whole once the call closes (`tagged_values.call_with_values`)."""

from __future__ import annotations

from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tagged_values import call_with_values
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form


def _reader(quote: str) -> Any:
    def read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
        return [call_with_values(body, quote)]

    return read


_FORMATS = (
    ("<|tool_call>", DelimitedBody(ends=("<tool_call|>",), read=_reader('<|"|>'))),
    (
        "<start_function_call>",
        DelimitedBody(ends=("<end_function_call>",), read=_reader("<escape>")),
    ),
)


@register("gemma4")
class Gemma4(Dialect):
    forms = tuple(
        open_form(
            marker,
            [blanks(), followed_by("call:", "call:")],
            delimited(body),
        )
        for marker, body in _FORMATS
    )
