"""MiniMax-M2 and Claude-style calls: `<invoke name="f">` with one `<parameter name="p">` per
argument, string values raw and others as JSON, inside `<minimax:tool_call>` (MiniMax),
`<function_calls>` (Claude's older prompt format) or bare:

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    </minimax:tool_call>

Checked against MiniMax-M2's chat template and vLLM's `minimax_m2` tool parser. Each
`<invoke>` is one call; the wrapper's close belongs to the last. The call is read by the
keyed-values scanner (`keyed_values`), as Qwen3-Coder's is."""

from __future__ import annotations

import re

from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    literal,
    open_form,
    prefixes,
)
from ..streaming.keyed_values import KeyedValuesCall, KeyedValuesGrammar

WRAPPERS = ("<minimax:tool_call>", "<function_calls>")
WRAPPER_ENDS = ("</minimax:tool_call>", "</function_calls>")
INVOKE, INVOKE_END = '<invoke name="', "</invoke>"
PARAMETER, PARAMETER_END = '<parameter name="', "</parameter>"
_NAME = r'[^"<>]{1,128}'
_VALUE_ENDS = (PARAMETER_END, PARAMETER, INVOKE_END)

GRAMMAR = KeyedValuesGrammar(
    body_tag=re.compile(
        "|".join(
            [
                rf'{re.escape(PARAMETER)}(?P<key>{_NAME})">',
                *map(re.escape, (INVOKE_END, *WRAPPER_ENDS, INVOKE, *WRAPPERS)),
            ]
        )
    ),
    body_head=re.compile(
        rf'{re.escape(PARAMETER)}[^"<>]{{0,128}}"?|'
        + prefixes(PARAMETER, INVOKE_END, *WRAPPER_ENDS, INVOKE, *WRAPPERS)
    ),
    value_ends=_VALUE_ENDS,
    value_end=re.compile("|".join(map(re.escape, _VALUE_ENDS))),
    function_end=INVOKE_END,
    call_ends=WRAPPER_ENDS,
    call_starts=(INVOKE, *WRAPPERS),
)


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return KeyedValuesCall(ctx, open_tag, name, GRAMMAR)


_INVOKE = [
    Piece(r'[^"<>]{1,128}', r'(?P<name>[^"<>]{0,128})', names_tool=True, first=r'[^"<>]'),
    literal('">'),
]


@register("invoke")
class Invoke(Dialect):
    forms = (
        *(open_form(wrapper, [blanks(), literal(INVOKE), *_INVOKE], _call) for wrapper in WRAPPERS),
        open_form(INVOKE, _INVOKE, _call),
    )
