"""A Python list of calls between a format's own tokens: LFM2's `<|tool_call_start|>` and
Llama 4's `<|python_start|>` (whose end token may be missing):

    <|tool_call_start|>[get_weather(city="Paris"), get_time()]<|tool_call_end|>
    <|python_start|>[get_weather(city="Paris")]<|python_end|>

Checked against vLLM's and SGLang's `lfm2` and vLLM's `llama4_pythonic` parsers; both also
take a JSON array of call objects in the same place. Read whole once the list ends
(`python_calls`: literals only, nothing runs)."""

from __future__ import annotations

from typing import Any

from ..lenient.call_objects import calls_in_json
from ..lenient.python_calls import pythonic_calls
from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    if body.lstrip("[ \t\r\n").startswith("{"):
        return calls_in_json(body, complete_only=True, budget=budget)
    return pythonic_calls(body, budget, one_list=True)


_LFM2 = DelimitedBody(ends=("<|tool_call_end|>",), read=_read)
_LLAMA4 = DelimitedBody(
    ends=("<|python_end|>", "<|eom|>", "<|eot|>"), read=_read, end_optional=True
)


@register("python-list")
class PythonList(Dialect):
    forms = tuple(
        open_form(
            marker,
            [blanks(), followed_by(r"\[")],
            delimited(body),
        )
        for marker, body in (("<|tool_call_start|>", _LFM2), ("<|python_start|>", _LLAMA4))
    )
