"""Phi-4-mini: the word `functools` and a JSON array of call objects, as the whole answer:

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

Checked against vLLM's `phi4_mini_json` parser, which reads it in a whole answer only. A
word of prose has no marker to tell it from, so only an answer that is nothing else counts
(`off_protocol`). The `<|tool_call|>` spelling of Phi-4-mini's llama.cpp template is the
granite dialect's."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.call_objects import calls_in_json
from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.dialect_forms import AnswerForm, Dialect, prefixes

WORD = "functools"


def _read(text: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return calls_in_json(text.removeprefix(WORD), complete_only=True, budget=budget)


@register("phi4-mini")
class Phi4Mini(Dialect):
    answer = AnswerForm(
        begins=re.compile(rf"{WORD}[ \t]*(?P<body>\[)"),
        head=re.compile(rf"(?:{prefixes(WORD)})|{WORD}[ \t]*"),
        read=_read,
    )
