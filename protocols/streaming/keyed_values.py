"""Calls written as a tool's name and its parameters as `key -> raw value` tags, the layout
Qwen3-Coder, GLM-4.5 and MiniMax (and Claude's `<invoke>`) models write:

    <function=read_file><parameter=path>src/app.py</parameter></function>
    <tool_call>read_file<arg_key>path</arg_key><arg_value>src/app.py</arg_value></tool_call>
    <invoke name="read_file"><parameter name="path">src/app.py</parameter></invoke>

A format is its tags (`KeyedValuesGrammar`); one scanner reads them all. Values are raw text,
never unescaped: a value cannot hold its own close tag. A missing close tag ends the value at
the next parameter or the end of the parameters. Values keep their bytes; only layout goes
(the line break after the open tag, and the line break and indentation before a close tag
on its own line), then a value is coerced by the tool's schema (`20` becomes 20 for an
integer, JSON text a list). A call streams as it is read: it starts at once, a string
value's text flows as it arrives, any other value once it ends.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from ..lenient.coerce import coerce_by_schema, is_string_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_json import RelaxedJSONError
from ..lenient.xml_values import ValueLayout
from ..parts import ErrorKind
from .commit_policy import ArgumentSender, CallContext, CallScanner
from .dialect_forms import prefixes
from .json_stream import canonical_string
from .marker_scan import partial_token_start

# Models put a line break (or a few) between `</function>` and `</tool_call>`; a longer gap
# means the two tags do not belong together.
MAX_GAP_CHARS = 64


@dataclass(frozen=True, slots=True)
class KeyedValuesGrammar:
    """The tags of one format. Each begins with `<`."""

    # A tag between parameters: a parameter's open tag (its name in the group `key`), the
    # end of the parameters, a call end or a call start below.
    body_tag: re.Pattern[str]
    # A tag between parameters still being written, from its `<` to the end of the text.
    body_head: re.Pattern[str]
    # What ends a value: its own close tag first, then (tolerated when that is missing)
    # the tags that may follow it; and the same as one pattern.
    value_ends: tuple[str, ...]
    value_end: re.Pattern[str]
    # Ends the parameters; the call itself ends there unless `call_ends` may follow.
    function_end: str
    # The close tags of a wrapper around the call (`</tool_call>`): one after
    # `function_end` is the call's, and one between parameters ends it.
    call_ends: tuple[str, ...]
    # Tags that begin another call: one between parameters ends a call cut short.
    call_starts: tuple[str, ...]
    # How many `<` a tag between parameters holds (GLM's `<arg_key>k</arg_key><arg_value>`
    # is one parameter open written as three tags): a held tag may begin at any of them.
    tags_in_head: int = 1
    # Whether a parameter may also be written as an element named after it, a parameter
    # its tool declares (`<content>...</content>` for `<parameter=content>`): a small
    # Qwen model wrote a file's content so, and the call went out without it.
    element_keys: bool = False
    # With `element_keys`: an open tag that names a declared parameter when its name and a
    # `>` follow it (`<parameter>content>`), its value ended as the grammar's values are.
    slipped_key_open: str = ""


# A name a parameter element can have: what a tag's name holds.
_ELEMENT_NAME = re.compile(r"[A-Za-z_][\w.:-]{0,127}")


@functools.lru_cache(maxsize=256)
def _with_elements(
    grammar: KeyedValuesGrammar, keys: tuple[str, ...]
) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The grammar's tag between parameters and its head, with an element for each of
    `keys` (in the group `element`) and the slipped open tag naming each (in the group
    `slipped`). Only declared names: these forms say less than the grammar's own tags.
    Built once per tool's parameters, not per call."""
    names = "|".join(map(re.escape, keys))
    tags = [f"<{key}>" for key in keys]
    tag = f"{grammar.body_tag.pattern}|<(?P<element>{names})>"
    if grammar.slipped_key_open:
        tag += f"|{re.escape(grammar.slipped_key_open)}(?P<slipped>{names})>"
        tags += [f"{grammar.slipped_key_open}{key}>" for key in keys]
    return re.compile(tag), re.compile(f"{grammar.body_head.pattern}|{prefixes(*tags)}")


@functools.lru_cache(maxsize=256)
def _value_ends(
    grammar: KeyedValuesGrammar, key: str | None
) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """What ends a value: the grammar's ends; for the element `key`, its close tag first."""
    if key is None:
        return grammar.value_ends, grammar.value_end
    ends = (f"</{key}>", *grammar.value_ends)
    return ends, re.compile("|".join(map(re.escape, ends)))


def unfinished_tag_start(
    text: str, window: int, could_become: re.Pattern[str], tries: int = 1
) -> int:
    """Where the first of the last `tries` `<` of `text` begins from which what follows may
    still become a tag (`could_become` matches it whole), else len(text)."""
    start = max(0, len(text) - window)
    last = text.rfind("<", start)
    if tries == 1 or last == -1:  # the common case, kept to one search
        return last if last != -1 and could_become.fullmatch(text, last) else len(text)
    brackets = [last]
    while len(brackets) < tries and brackets[-1] > start:
        brackets.append(text.rfind("<", start, brackets[-1]))
    for bracket in reversed(brackets):
        if bracket != -1 and could_become.fullmatch(text, bracket):
            return bracket
    return len(text)


class _State(Enum):
    BODY = auto()  # between parameters
    VALUE = auto()  # inside a parameter's value
    AFTER_FUNCTION = auto()  # past `</function>`, where `</tool_call>` may follow


class KeyedValuesCall(CallScanner):
    """One call after its open tag. It streams as it is read: the call starts at once, a
    string value's text flows as it arrives, any other value once it ends."""

    def __init__(
        self, ctx: CallContext, open_tag: str, name: str, grammar: KeyedValuesGrammar
    ) -> None:
        self._ctx, self._open_tag, self._name = ctx, open_tag, name
        self._grammar = grammar
        tool = ctx.tools.get(name)
        self._schema: Mapping[str, Any] = tool.parameters if tool else {}
        self._body_tag, self._body_head = grammar.body_tag, grammar.body_head
        keys = self._element_keys() if grammar.element_keys else ()
        if keys:
            self._body_tag, self._body_head = _with_elements(grammar, keys)
        self._value_ends, self._value_end = grammar.value_ends, grammar.value_end
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
        position, grammar = 0, self._grammar
        while True:
            if self._state is _State.VALUE:
                found = self._value_end.search(text, position)
                if found is None:
                    safe = position + partial_token_start(text[position:], self._value_ends)
                    self._read_value(text[position:safe])
                    self._held = text[safe:]
                    return None
                self._read_value(text[position : found.start()])
                self._end_value()
                if found.group() == self._value_ends[0]:
                    self._consumed.append(found.group())
                    position = found.end()
                else:
                    position = found.start()  # read again, as the tag it is
            elif self._state is _State.AFTER_FUNCTION:
                return self._after_function(text, position)
            else:
                found = self._body_tag.search(text, position)
                if found is None:
                    safe = unfinished_tag_start(
                        text, len(text) - position, self._body_head, grammar.tags_in_head
                    )
                    self._between_parameters(text[position:safe])
                    self._consumed.append(text[position:safe])
                    self._held = text[safe:]
                    return None
                tag = found.group()
                self._between_parameters(text[position : found.start()])
                if tag in grammar.call_starts:
                    self._consumed.append(text[position : found.start()])
                    self._complete()
                    return text[found.start() :]
                self._consumed.append(text[position : found.end()])
                position = found.end()
                if tag in grammar.call_ends or (
                    tag == grammar.function_end and not grammar.call_ends
                ):
                    self._complete()
                    return text[position:]
                if tag == grammar.function_end:
                    self._state = _State.AFTER_FUNCTION
                    continue
                try:
                    self._ctx.relaxed_budget.spend_argument()
                except RelaxedJSONError as error:
                    original = self._open_tag + "".join(self._consumed)
                    self._ctx.reject_call(
                        self._sender.call, ErrorKind.PARSE_BUDGET, str(error), original
                    )
                    return text[position:]
                named = found.groupdict()
                element = named.get("element")
                self._begin_value(element or named.get("slipped") or named["key"], element)

    def _after_function(self, text: str, position: int) -> str | None:
        """Take the wrapper's close tag (`</tool_call>`) if it follows; the gap before it
        stays text otherwise."""
        rest = text[position:]
        gap = len(rest) - len(rest.lstrip())
        if gap <= MAX_GAP_CHARS:
            after = rest[gap:]
            for call_end in self._grammar.call_ends:
                if after.startswith(call_end):
                    self._consumed.append(rest[: gap + len(call_end)])
                    self._complete()
                    return after[len(call_end) :]
            for call_end in self._grammar.call_ends:
                if call_end.startswith(after):
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

    def _between_parameters(self, text: str) -> None:
        """Only layout stands between parameters: other text there is arguments the call
        cannot read (`<function=f>garbage</function>` is no call with `{}`)."""
        if not self._problem and text and not text.isspace():
            self._problem = "text between the parameters is no parameter"
            self._sender.stop()

    def _element_keys(self) -> tuple[str, ...]:
        """The declared parameters that may be written as elements (names a tag can have)."""
        properties = self._schema.get("properties")
        if not isinstance(properties, Mapping):
            return ()
        return tuple(key for key in properties if _ELEMENT_NAME.fullmatch(key))

    def _begin_value(self, key: str, element: str | None = None) -> None:
        """Read the value of `key`, written in the grammar's tags or as the element
        `element` (which ends at its own close tag)."""
        self._state, self._key, self._value = _State.VALUE, key, []
        self._value_ends, self._value_end = _value_ends(self._grammar, element)
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
