"""MeetKai Functionary: v3.2 routes each message with `>>>` and a recipient, a tool's name
for a call and `all` for text; the generation prompt ends in `>>>`, so an answer's first
call comes without it. v3.1 (on Llama 3.1) writes Llama 3.1's custom-tool format:

    >>>get_weather
    {"city": "Paris"}
    get_weather                      (the answer's start: the whole answer is the call)
    {"city": "Paris"}
    <function=get_weather>{"city": "Paris"}</function>

Checked against llama.cpp's Functionary v3.1 and v3.2 handlers and Llama 3.1's template.
A `<function=` followed by JSON is this format's; followed by `<parameter=` it is
Qwen3-Coder's. The answer form counts only when the whole answer is that one call (a
first call followed by `>>>` ones is not read as a whole: the routed ones are)."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.call_objects import CallObjectError
from ..lenient.relaxed_json import RelaxedJSONError, RelaxedParseBudget, parse_relaxed_json
from ..registry import register
from ..streaming.dialect_forms import (
    AnswerForm,
    Dialect,
    Piece,
    blanks,
    followed_by,
    literal,
    open_form,
    tool_name,
)
from ..streaming.json_body import JsonBody, JsonBodyCall

ROUTE = ">>>"
_NAME = r"[A-Za-z_][\w.-]{0,127}"
_ARGUMENTS = JsonBody()
_FUNCTION_BODY = JsonBody(closers=(("</function>",),))


def _answer(text: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    name, _, arguments = text.partition("\n")
    try:
        value = parse_relaxed_json(arguments, budget=budget)
    except RelaxedJSONError as error:
        raise CallObjectError(f"arguments are not JSON: {error}") from None
    if not isinstance(value, dict):
        raise CallObjectError("arguments must be a JSON object")
    return [(name.strip(), value)]


@register("functionary")
class Functionary(Dialect):
    forms = (
        open_form(
            ROUTE,
            [tool_name(), Piece(r"[ \t]*\n", r"[ \t]*"), blanks(), followed_by(r"\{")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _ARGUMENTS),
        ),
        open_form(
            "<function=",
            [tool_name(r"[^\s<>=]"), literal(">"), blanks(), followed_by(r"\{")],
            lambda ctx, open_tag, name: JsonBodyCall(ctx, open_tag, name, _FUNCTION_BODY),
        ),
    )
    answer = AnswerForm(
        begins=re.compile(rf"(?P<name>{_NAME})[ \t]*\n\s{{0,64}}(?P<body>\{{)"),
        head=re.compile(rf"(?P<name>{_NAME})(?:[ \t]*\n\s{{0,64}})?"),
        read=_answer,
    )
