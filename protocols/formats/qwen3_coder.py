"""Qwen3-Coder: the call format Qwen3-Coder models are trained on, an XML-like layout whose
values are raw text written on their own lines:

    <tool_call>
    <function=read_file>
    <parameter=path>
    src/app.py
    </parameter>
    </function>
    </tool_call>

Parsing is as tolerant as the models need: the `<tool_call>` wrapper may be missing (the call
then ends at `</function>`), and a missing `</parameter>` ends the value at the next
`<parameter=` or `</function>`. Values are never unescaped, so (as in the reference
parser) a value cannot hold `</parameter>`, `<parameter=` or `</function>`. The call is read
by the scanner of keyed values (`keyed_values`), as GLM's and MiniMax's are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ParserOptions, Protocol, StreamParser
from ..lenient.json_text import json_text
from ..parts import OnError, ToolSpec
from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import prefixes
from ..streaming.keyed_values import (
    MAX_GAP_CHARS,
    KeyedValuesCall,
    KeyedValuesGrammar,
    unfinished_tag_start,
)
from ..streaming.tag_loop import TagStreamParser
from .prompting import result_block, tools_prompt

# The literal tags; none holds a regular-expression metacharacter, so patterns use them as is.
CALL_START, CALL_END = "<tool_call>", "</tool_call>"
FUNCTION_START, FUNCTION_END = "<function=", "</function>"
PARAMETER_START, PARAMETER_END = "<parameter=", "</parameter>"
RESPONSE_START, RESPONSE_END = "<tool_response>", "</tool_response>"

# Tool and parameter names are identifiers; a `<function=` followed by more than this
# without `>` is prose, and holding it back longer would stall the text. The gap between
# `<tool_call>` and `<function=...>` is bounded as the one after `</function>` is.
MAX_NAME_CHARS = 128

NAME = rf"[^\s<>]{{0,{MAX_NAME_CHARS}}}"
GAP = rf"\s{{0,{MAX_GAP_CHARS}}}"

# A call opens with its function's name, wrapped or not.
_OPEN = re.compile(rf"(?:{CALL_START}{GAP})?{FUNCTION_START}(?P<name>{NAME})>")
# Text from a `<` to the end that may still grow into an open tag; `_WRAPPER` is the
# `<tool_call>` that may precede such a tag.
_OPEN_HEAD = re.compile(
    rf"{FUNCTION_START}{NAME}|{CALL_START}{GAP}|{prefixes(CALL_START, FUNCTION_START)}"
)
_WRAPPER = re.compile(f"{CALL_START}{GAP}")
# What ends a value: its close tag, or (tolerated when that is missing) what follows it.
_VALUE_ENDS = (PARAMETER_END, PARAMETER_START, FUNCTION_END)
GRAMMAR = KeyedValuesGrammar(
    # A new call's start tag ends a call cut short.
    body_tag=re.compile(
        rf"{PARAMETER_START}(?P<key>{NAME})>|{FUNCTION_END}|{CALL_END}|{CALL_START}|"
        f"{FUNCTION_START}"
    ),
    body_head=re.compile(
        rf"{PARAMETER_START}{NAME}|"
        rf"{prefixes(PARAMETER_START, FUNCTION_END, CALL_END, CALL_START, FUNCTION_START)}"
    ),
    value_ends=_VALUE_ENDS,
    value_end=re.compile("|".join(map(re.escape, _VALUE_ENDS))),
    function_end=FUNCTION_END,
    call_ends=(CALL_END,),
    call_starts=(CALL_START, FUNCTION_START),
    element_keys=True,
    # `<parameter>NAME>`, a slip for `<parameter=NAME>` a small Qwen model made.
    slipped_key_open="<parameter>",
)
# Enough to see a whole `<tool_call>`, gap and `<function=name` at the end of the text.
_OPEN_WINDOW = len(CALL_START) + MAX_GAP_CHARS + len(FUNCTION_START) + MAX_NAME_CHARS


@register("qwen3-coder")
class QwenCoderProtocol(Protocol):
    def render_tools(self, tools: Sequence[ToolSpec], *, single_call: bool = False) -> str:
        return tools_prompt(
            tools,
            self.render_call,
            how_to_call=f"To call a tool, write a {CALL_START} block naming the function, with"
            " one parameter element per argument",
            rules=[
                "Write each value on the lines between its parameter tags, as it is, without"
                " escaping; write a list or an object as JSON.",
            ],
            results_in=f"a {RESPONSE_START} block",
            single_call=single_call,
        )

    def render_call(self, name: str, arguments: Any) -> str:
        if not isinstance(arguments, Mapping):
            arguments = {"arguments": arguments}
        parameters = "".join(
            f"{PARAMETER_START}{key}>\n{_value_text(value)}\n{PARAMETER_END}\n"
            for key, value in arguments.items()
        )
        return f"{CALL_START}\n{FUNCTION_START}{name}>\n{parameters}{FUNCTION_END}\n{CALL_END}"

    def render_result(self, name: str, call_id: str, content: str) -> str:
        return result_block(RESPONSE_START, RESPONSE_END, name, call_id, content)

    def _new_parser(
        self, tools: Sequence[ToolSpec], options: ParserOptions, on_error: OnError | None
    ) -> StreamParser:
        return _QwenCoderParser(tools, options, on_error)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def open_call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return KeyedValuesCall(ctx, open_tag, name, GRAMMAR)


class _QwenCoderParser(TagStreamParser):
    _native_dialects = frozenset({"qwen3-coder"})

    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        found = _OPEN.search(text)
        return (found.start(), found.end(), found.group("name")) if found else None

    def _partial_open_start(self, text: str) -> int:
        last = unfinished_tag_start(text, _OPEN_WINDOW, _OPEN_HEAD)
        # A `<function=` still being written may belong to the `<tool_call>` before it.
        wrapper = text.rfind("<", max(0, len(text) - _OPEN_WINDOW), last)
        if last < len(text) and wrapper != -1 and _WRAPPER.fullmatch(text, wrapper, last):
            return wrapper
        return last

    def _open_call(self, ctx: CallContext, open_tag: str, name: str) -> CallScanner:
        return KeyedValuesCall(ctx, open_tag, name, GRAMMAR)
