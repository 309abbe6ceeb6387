"""Tencent Hunyuan: calls in a `<tool_calls>` block, as a JSON array (Hunyuan-A13B) or as
GLM-like key and value tags after the name and `<tool_sep>` (Hunyuan HY3):

    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>
    <tool_calls>
    <tool_call>get_weather<tool_sep>
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>
    </tool_calls>

Checked against vLLM's `hunyuan_a13b` parser and SGLang's `hunyuan` detector (whose shipping
tokenizer may suffix every token, `<tool_calls:opensource>`; read as the plain tokens here).
The block is read whole once it closes."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.call_objects import calls_in_json
from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form

START, END = "<tool_calls>", "</tool_calls>"
_CALL = re.compile(r"<tool_call>\s*([^<>\s]{1,128})\s*<tool_sep>(.*?)</tool_call>", re.DOTALL)
_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    if body.lstrip().startswith("["):
        return calls_in_json(body, complete_only=True, budget=budget)
    return [
        (name, {key.strip(): value for key, value in _PAIR.findall(inner)})
        for name, inner in _CALL.findall(body)
    ]


_BODY = DelimitedBody(ends=(END,), read=_read)


@register("hunyuan")
class Hunyuan(Dialect):
    forms = (
        open_form(
            START,
            [blanks(), followed_by(r"\[|<tool_call>", "[", "<tool_call>")],
            delimited(_BODY),
        ),
    )
