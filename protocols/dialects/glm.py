"""GLM-4.5 / 4.6: the tool's name after `<tool_call>`, each argument a key tag and a value tag,
string values raw and others as JSON:

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

Checked against GLM-4.6's chat template and vLLM's `glm45` tool parser. The call is read by
the keyed-values scanner (`keyed_values`), as Qwen3-Coder's is."""

from __future__ import annotations

import re

from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    MAX_BLANKS,
    Dialect,
    blanks,
    followed_by,
    open_form,
    prefixes,
    tool_name,
)
from ..streaming.keyed_values import KeyedValuesCall, KeyedValuesGrammar

START, END = "<tool_call>", "</tool_call>"
KEY_OPEN, KEY_CLOSE = "<arg_key>", "</arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<arg_value>", "</arg_value>"
_KEY = r"[^<>]{1,128}"
_VALUE_ENDS = (VALUE_CLOSE, KEY_OPEN, END)

GRAMMAR = KeyedValuesGrammar(
    body_tag=re.compile(
        rf"{KEY_OPEN}\s*(?P<key>{_KEY}?)\s*{KEY_CLOSE}\s{{0,{MAX_BLANKS}}}{VALUE_OPEN}"
        rf"|{END}|{START}"
    ),
    body_head=re.compile(
        rf"{KEY_OPEN}[^<>]{{0,128}}(?:{KEY_CLOSE}\s{{0,{MAX_BLANKS}}}(?:{prefixes(VALUE_OPEN)})?"
        rf"|{prefixes(KEY_CLOSE)})?|{prefixes(KEY_OPEN, END, START)}"
    ),
    value_ends=_VALUE_ENDS,
    value_end=re.compile("|".join(map(re.escape, _VALUE_ENDS))),
    function_end=END,
    call_ends=(),
    call_starts=(START,),
    tags_in_head=3,
)


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return KeyedValuesCall(ctx, open_tag, name, GRAMMAR)


@register("glm")
class Glm(Dialect):
    forms = (
        open_form(
            START,
            [blanks(), tool_name(), blanks(), followed_by(f"{KEY_OPEN}|{END}", KEY_OPEN, END)],
            _call,
        ),
    )
