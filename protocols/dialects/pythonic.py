"""A Python list of calls as the whole answer, the format Llama 3.2's template (and Gemma's
and many tool prompts) ask for, with no marker around:

    [get_weather(city="Paris"), get_time()]

Checked against Llama 3.2's chat template and vLLM's `pythonic` tool parser. It has no
marker, so only an answer that is nothing else counts (`off_protocol`), and it must begin
with a declared tool."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.python_calls import pythonic_calls
from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.dialect_forms import AnswerForm, Dialect

_NAME = r"[A-Za-z_][\w.]{0,127}"


def _calls(text: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return pythonic_calls(text, budget, one_list=True)


@register("pythonic")
class Pythonic(Dialect):
    answer = AnswerForm(
        begins=re.compile(rf"\[\s{{0,64}}(?P<name>{_NAME})\s{{0,8}}\("),
        head=re.compile(rf"\[\s{{0,64}}(?:(?P<name>{_NAME})\s{{0,8}})?"),
        read=_calls,
    )
