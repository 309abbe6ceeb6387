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
parser) a value cannot hold `</parameter>`, `<parameter=` or `</function>`.
Values keep their bytes; only layout goes (as in Morph-XML): the line break after the open
tag, and the line break and indentation before a close tag on its own line. Then a value
is coerced by the tool's schema (`20` becomes 20 for an integer, JSON text a list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import Enum, auto
from typing import Any

from .base import ParserOptions, Protocol, StreamParser
from .coerce import coerce_by_schema, is_string_schema
from .commit_policy import ArgumentSender, CallContext, CallScanner
from .json_stream import canonical_string
from .json_text import json_text
from .parts import ErrorKind, ToolSpec
from .prompting import tools_prompt
from .registry import register
from .relaxed_xml import ValueLayout
from .streaming import TagStreamParser, partial_token_start

# The literal tags; none holds a regular-expression metacharacter, so patterns use them as is.
CALL_START, CALL_END = "<tool_call>", "</tool_call>"
FUNCTION_START, FUNCTION_END = "<function=", "</function>"
PARAMETER_START, PARAMETER_END = "<parameter=", "</parameter>"
RESPONSE_START, RESPONSE_END = "<tool_response>", "</tool_response>"

# Tool and parameter names are identifiers; a `<function=` followed by more than this
# without `>` is prose, and holding it back longer would stall the text.
MAX_NAME_CHARS = 128
# Models put a line break (or a few) between `<tool_call>` and `<function=...>`, and between
# `</function>` and `</tool_call>`; a longer gap means the two tags do not belong together.
MAX_GAP_CHARS = 64

_NAME = rf"[^\s<>]{{0,{MAX_NAME_CHARS}}}"
_GAP = rf"\s{{0,{MAX_GAP_CHARS}}}"


def _prefixes(*tokens: str) -> str:
    """A pattern for any non-empty prefix of the tokens."""
    return "|".join(re.escape(token[:end]) for token in tokens for end in range(1, len(token) + 1))


# A call opens with its function's name, wrapped or not.
_OPEN = re.compile(rf"(?:{CALL_START}{_GAP})?{FUNCTION_START}({_NAME})>")
# Text from a `<` to the end that may still grow into an open tag; `_WRAPPER` is the
# `<tool_call>` that may precede such a tag.
_OPEN_HEAD = re.compile(
    rf"{FUNCTION_START}{_NAME}|{CALL_START}{_GAP}|{_prefixes(CALL_START, FUNCTION_START)}"
)
_WRAPPER = re.compile(f"{CALL_START}{_GAP}")
# Tags between a call's parameters; a new call's start tag ends a call cut short.
_BODY_TAG = re.compile(
    rf"{PARAMETER_START}({_NAME})>|{FUNCTION_END}|{CALL_END}|{CALL_START}|{FUNCTION_START}"
)
_BODY_HEAD = re.compile(
    rf"{PARAMETER_START}{_NAME}|"
    rf"{_prefixes(PARAMETER_START, FUNCTION_END, CALL_END, CALL_START, FUNCTION_START)}"
)
# What ends a value: its close tag, or (tolerated when that is missing) what follows it.
_VALUE_ENDS = (PARAMETER_END, PARAMETER_START, FUNCTION_END)
_VALUE_END = re.compile("|".join(map(re.escape, _VALUE_ENDS)))
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
        """The block Qwen's chat template writes. The template gives it no attributes, so
        the call's name and id go on a first line of their own, before the content."""
        return f"{RESPONSE_START}\nResult of {name} ({call_id}):\n{content}\n{RESPONSE_END}"

    def _new_parser(self, tools: Sequence[ToolSpec], options: ParserOptions) -> StreamParser:
        return _QwenCoderParser(tools, options)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def _unfinished_tag_start(text: str, window: int, could_become: re.Pattern[str]) -> int:
    """Where the last `<` of `text` begins when what follows it may still become a tag
    (`could_become` matches it whole), else len(text)."""
    last = text.rfind("<", max(0, len(text) - window))
    return last if last != -1 and could_become.fullmatch(text, last) else len(text)


class _QwenCoderParser(TagStreamParser):
    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        found = _OPEN.search(text)
        return (found.start(), found.end(), found.group(1)) if found else None

    def _partial_open_start(self, text: str) -> int:
        last = _unfinished_tag_start(text, _OPEN_WINDOW, _OPEN_HEAD)
        # A `<function=` still being written may belong to the `<tool_call>` before it.
        wrapper = text.rfind("<", max(0, len(text) - _OPEN_WINDOW), last)
        if last < len(text) and wrapper != -1 and _WRAPPER.fullmatch(text, wrapper, last):
            return wrapper
        return last

    def _open_call(self, open_tag: str, name: str) -> CallScanner:
        return _QwenCall(self._ctx, open_tag, name)


class _State(Enum):
    BODY = auto()  # between parameters
    VALUE = auto()  # inside a parameter's value
    AFTER_FUNCTION = auto()  # past `</function>`, where `</tool_call>` may follow


class _QwenCall(CallScanner):
    """One call after its open tag. It streams as it is read: the call starts at once, a
    string value's text flows as it arrives, any other value once it ends."""

    def __init__(self, ctx: CallContext, open_tag: str, name: str) -> None:
        self._ctx, self._open_tag, self._name = ctx, open_tag, name
        tool = ctx.tools.get(name)
        self._schema: Mapping[str, Any] = tool.parameters if tool else {}
        self._consumed: list[str] = []  # the call's text after its open tag, once read
        self._held = ""  # text not read yet: it may still become a tag
        self._state = _State.BODY
        self._values: dict[str, str] = {}
        self._key = ""  # the parameter being read
        self._value: list[str] = []
        self._layout = ValueLayout(drop_final_line_break=True)
        self._problem = "" if name else "the call names no function"
        self._sender = ArgumentSender(ctx)
        if name and ctx.accepts(name):
            self._sender.send(name, "")  # starts at once, unless it is held as a small call
        else:
            self._sender.stop()
        self._members_sent = 0
        self._streams_text = False  # the value being read is sent as text as it arrives

    def consume(self, text: str) -> str | None:
        text, self._held = self._held + text, ""
        if self._state is _State.VALUE and "<" not in text:  # the common delta: all value
            self._read_value(text)
            return None
        position = 0
        while True:
            if self._state is _State.VALUE:
                found = _VALUE_END.search(text, position)
                if found is None:
                    safe = position + partial_token_start(text[position:], _VALUE_ENDS)
                    self._read_value(text[position:safe])
                    self._held = text[safe:]
                    return None
                self._read_value(text[position : found.start()])
                self._end_value()
                if found.group() == PARAMETER_END:
                    self._consumed.append(found.group())
                    position = found.end()
                else:
                    position = found.start()  # read again, as the tag it is
            elif self._state is _State.AFTER_FUNCTION:
                return self._after_function(text, position)
            else:
                found = _BODY_TAG.search(text, position)
                if found is None:
                    safe = _unfinished_tag_start(text, len(text) - position, _BODY_HEAD)
                    self._consumed.append(text[position:safe])
                    self._held = text[safe:]
                    return None
                tag = found.group()
                if tag in (CALL_START, FUNCTION_START):
                    self._consumed.append(text[position : found.start()])
                    self._complete()
                    return text[found.start() :]
                self._consumed.append(text[position : found.end()])
                position = found.end()
                if tag == CALL_END:
                    self._complete()
                    return text[position:]
                if tag == FUNCTION_END:
                    self._state = _State.AFTER_FUNCTION
                else:
                    self._begin_value(found.group(1))

    def _after_function(self, text: str, position: int) -> str | None:
        """Take `</tool_call>` if it follows; the gap before it stays text otherwise."""
        rest = text[position:]
        gap = len(rest) - len(rest.lstrip())
        if gap <= MAX_GAP_CHARS:
            if rest.startswith(CALL_END, gap):
                self._consumed.append(rest[: gap + len(CALL_END)])
                self._complete()
                return rest[gap + len(CALL_END) :]
            if CALL_END.startswith(rest[gap:]):
                self._held = rest
                return None
        self._complete()
        return rest

    def finish(self) -> None:
        original = self._open_tag + "".join(self._consumed)
        if self._state is _State.AFTER_FUNCTION:
            self._complete()
            self._ctx.out.text(self._held)
        elif self._state is _State.BODY and not self._held:
            self._complete()
        else:
            self._ctx.cut_off_call(self._sender.call, original + self._held)

    def _begin_value(self, key: str) -> None:
        self._state, self._key, self._value = _State.VALUE, key, []
        self._layout = ValueLayout(drop_final_line_break=True)
        if key in self._values:
            self._problem = f"the parameter {key!r} is given twice"
            self._sender.stop()
        schema = self._property_schema(key)
        self._streams_text = not isinstance(schema, Mapping) or is_string_schema(schema)
        if self._streams_text:
            self._send_member(key, '"')

    def _read_value(self, text: str) -> None:
        if not text:
            return
        self._consumed.append(text)
        value = self._layout.feed(text)
        self._value.append(value)
        if self._streams_text:
            self._send(canonical_string(value))

    def _end_value(self) -> None:
        self._state = _State.BODY
        tail = self._layout.finish()
        if tail:
            self._value.append(tail)
            if self._streams_text:
                self._send(canonical_string(tail))
        value = "".join(self._value)
        if self._problem:
            return  # the call will not be emitted as read; nothing more is sent
        self._values[self._key] = value
        if self._streams_text:
            self._send('"')
            return
        # Coerced within the whole schema, so `$ref`s resolve as in the final coercion.
        coerced = coerce_by_schema({self._key: value}, self._schema, self._ctx.relaxed_budget)
        if isinstance(coerced, dict) and self._key in coerced:
            self._send_member(self._key, json_text(coerced[self._key]))
        else:
            self._sender.stop()  # the final arguments will tell the rest

    def _property_schema(self, key: str) -> Any:
        properties = self._schema.get("properties")
        if isinstance(properties, Mapping) and key in properties:
            return properties[key]
        return self._schema.get("additionalProperties")

    def _send_member(self, key: str, value_start: str) -> None:
        """Send the argument `key` and the start of its value, as dump_arguments writes it."""
        if self._sender.sending:
            separator = ", " if self._members_sent else "{"
            self._members_sent += 1
            self._send(f'{separator}"{canonical_string(key)}": {value_start}')

    def _send(self, fragment: str) -> None:
        self._sender.send(self._name, fragment)

    def _complete(self) -> None:
        ctx, original = self._ctx, self._open_tag + "".join(self._consumed)
        if self._problem:
            ctx.reject_call(self._sender.call, ErrorKind.MALFORMED_XML, self._problem, original)
            return
        if self._sender.call is None and not ctx.accepts(self._name):
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, f"unknown tool: {self._name}", original)
            return
        coerced = coerce_by_schema(self._values, self._schema, ctx.relaxed_budget)
        arguments = coerced if isinstance(coerced, dict) else self._values
        ctx.complete_call(self._name, arguments, original, streamed=self._sender.call)
