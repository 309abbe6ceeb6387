"""Kimi K2: a section of calls, each an id `functions.<name>:<index>` and its arguments JSON:

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>
    (one line, cut here to fit)

Checked against Kimi-K2-Thinking's chat template, Moonshot's tool-call guidance and vLLM's
`kimi_k2` tool parser (which also accepts the section tokens spelled `tool_call_section`)."""

from __future__ import annotations

from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    literal,
    open_form,
    tool_name,
)
from ..streaming.json_body import JsonBody, JsonBodyCall

SECTION_BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
SECTION_ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
CALL_BEGIN, ARGUMENT_BEGIN, CALL_END = (
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)
_BODY = JsonBody(closers=((CALL_END,), SECTION_ENDS))
_CALL: list[Piece] = [
    blanks(),
    tool_name(r"[\w.\-/]"),  # `functions.get_weather`: the name is its last segment
    Piece(r":\d{1,9}", r"(?::\d{0,9})?"),
    blanks(),
    literal(ARGUMENT_BEGIN),
]


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return JsonBodyCall(ctx, open_tag, name, _BODY)


@register("kimi-k2")
class KimiK2(Dialect):
    forms = (
        *(
            open_form(begin, [blanks(), literal(CALL_BEGIN), *_CALL], _call)
            for begin in SECTION_BEGINS
        ),
        open_form(CALL_BEGIN, _CALL, _call),
    )
