"""Reads a JSON-mix call body once, as it streams: the tool name as soon as it is known,
and the `arguments` object as canonical JSON fragments that can no longer change.

Only strict JSON (plus raw control characters in strings and Python literals) is
followed; anything else stops the lexer, and the call is then read whole at its end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from ..lenient.call_objects import ARGUMENT_KEYS, NAME_KEYS
from ..lenient.coerce import coerce_by_schema, is_string_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_json import RelaxedParseBudget

# A run of a string's characters and simple escapes (`\n`, `\"`), read in one step and decoded
# in C: taken one by one, escapes cost ~1.7 µs each, and source code written into a file has
# one every few dozen characters (a 15 MB file write took 9 s to read).
_STRING_RUN = re.compile(r'[^"\\]*(?:\\["\\/bfnrt][^"\\]*)*')
_BLANK_RUN = re.compile(r"[ \t\r\n]+")
_AFTER_STRING = ",}]:"
_SCALAR_RUN = re.compile(r"[^\s,\]}]+")
# Integers json.dumps writes back unchanged (long ones too: Python ints are exact).
_CANONICAL_INTEGER = re.compile(r"0|-?[1-9]\d*")
# More items of an array of plain scalars after its first, each complete (its `,` or `]`
# follows): read in one step, because going through them character by character costs
# ~10 µs per item, and a model can write 100 KB of numbers.
_MORE_SCALAR_ITEMS = re.compile(
    r"(?:[ \t\r\n]*,[ \t\r\n]*(?:0|-?[1-9]\d*|true|false|null)(?=[ \t\r\n]*[,\]]))+"
)
_ITEM_SEPARATOR = re.compile(r"[ \t\r\n]*,[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
}
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_WHITESPACE = " \t\r\n"

# What a container expects next.
_KEY, _COLON, _VALUE, _COMMA = range(4)
# What the string being read is for. A held string is an argument value the schema wants
# as another type ("5" for an integer): it is coerced and sent once complete.
_KEY_TEXT, _NAME_TEXT, _EMITTED_TEXT, _HELD_TEXT, _SKIPPED_TEXT = range(5)
# Schemas that combine others decide a value's type only as a whole: not followed inside.
_COMBINING_KEYWORDS = ("$ref", "anyOf", "oneOf", "allOf", "prefixItems")


def canonical_string(text: str) -> str:
    """`text` as the inside of a JSON string literal, the way json.dumps writes it."""
    return json_text(text)[1:-1]


class _Frame:
    __slots__ = ("emits", "expect", "is_object", "key", "members", "schema")

    def __init__(
        self, is_object: bool, emits: bool, schema: Mapping[str, Any] | None = None
    ) -> None:
        self.is_object = is_object
        self.emits = emits
        self.schema = schema
        self.expect = _KEY if is_object else _VALUE
        self.key: str | None = None
        self.members = 0

    def schema_of_items_declared(self) -> bool:
        return self.emits and self.child_schema() is not None

    def child_schema(self) -> Mapping[str, Any] | None:
        """The schema of the value that comes next in this container, if one is declared."""
        if self.schema is None:
            return None
        if self.is_object:
            properties = self.schema.get("properties")
            child = properties.get(self.key) if isinstance(properties, Mapping) else None
            if child is None:
                child = self.schema.get("additionalProperties")
        else:
            child = self.schema.get("items")
        return child if isinstance(child, Mapping) else None


class JsonCallLexer:
    """`feed(text)` returns canonical fragments of the arguments object read so far.

    >>> lexer = JsonCallLexer()
    >>> lexer.feed('{"name": "read", "arguments": {"path": "a.')
    ['{', '"path": ', '"', 'a.']
    >>> lexer.name
    'read'
    """

    def __init__(
        self,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        budget: RelaxedParseBudget | None = None,
        *,
        arguments_of: str | None = None,
    ) -> None:
        self._schemas = schemas or {}
        self._budget = budget  # what following values, and coercing them, is charged to
        self._value_schema: Mapping[str, Any] | None = None
        self.name: str | None = None
        self.healthy = True
        self.complete = False
        self._stack: list[_Frame] = []
        self._string_kind: int | None = None
        self._string_chars: list[str] = []
        self._escape: str | None = None
        # A `"` inside a string and the whitespace after it: it ends the string only if
        # `,` `}` `]` or `:` follows; otherwise it is an unescaped quote inside the text.
        self._quote_tail: str | None = None
        self._high_surrogate: int | None = None
        self._scalar: str | None = None
        self._in_fence_line = False
        self._arguments_seen = False
        if arguments_of is not None:
            # The text is the arguments object alone, its tool named before it (a dialect's
            # open tag): read as the value of `{"name": arguments_of, "arguments": `.
            self.name = arguments_of
            top = _Frame(is_object=True, emits=False)
            top.key, top.expect = ARGUMENT_KEYS[0], _VALUE
            self._stack.append(top)

    @property
    def in_string(self) -> bool:
        return self.healthy and self._string_kind is not None

    def feed(self, text: str) -> list[str]:
        out: list[str] = []
        i, n = 0, len(text)
        while i < n and self.healthy:
            if self._string_kind is not None:
                i = self._read_string(text, i, out)
            elif self._scalar is not None:
                match = _SCALAR_RUN.match(text, i)
                if match:
                    self._scalar += match.group()
                    i = match.end()
                if i < n:
                    self._end_scalar(out)
            elif self._in_fence_line:
                end = text.find("\n", i)
                i = n if end == -1 else end + 1
                self._in_fence_line = end == -1
            else:
                items = self._more_scalar_items(text, i)
                if items is not None:
                    self._take_scalar_items(items, out)
                    i = items.end()
                else:
                    self._read_structure(text[i], out)
                    i += 1
        return out

    def _more_scalar_items(self, text: str, i: int) -> re.Match[str] | None:
        if not self._stack:
            return None
        frame = self._stack[-1]
        if frame.is_object or frame.expect != _COMMA or frame.schema_of_items_declared():
            return None
        return _MORE_SCALAR_ITEMS.match(text, i)

    def _take_scalar_items(self, items: re.Match[str], out: list[str]) -> None:
        """Items already written as json.dumps writes them, each with its leading comma."""
        values = _ITEM_SEPARATOR.split(items.group())[1:]
        frame = self._stack[-1]
        if frame.emits:
            out.append("".join(", " + value for value in values))
        frame.members += len(values)

    def _stop(self) -> None:
        self.healthy = False

    def _read_structure(self, char: str, out: list[str]) -> None:
        if char in _WHITESPACE:
            return
        if self.complete:
            self._stop()  # a second value: the whole body is read at the end instead
            return
        if not self._stack:
            if char == "{":
                self._stack.append(_Frame(is_object=True, emits=False))
            elif char == "`":
                self._in_fence_line = True
            else:
                self._stop()
            return
        frame = self._stack[-1]
        if frame.expect == _KEY:
            if char == '"':
                self._begin_string(_KEY_TEXT)
            elif char == "}":
                self._close(frame, out)
            else:
                self._stop()
        elif frame.expect == _COLON:
            if char == ":":
                frame.expect = _VALUE
            else:
                self._stop()
        elif frame.expect == _VALUE:
            if char == "]" and not frame.is_object:
                self._close(frame, out)
            else:
                self._begin_value(frame, char, out)
        elif char == ",":
            frame.expect = _KEY if frame.is_object else _VALUE
        elif char == ("}" if frame.is_object else "]"):
            self._close(frame, out)
        else:
            self._stop()

    def _begin_value(self, frame: _Frame, char: str, out: list[str]) -> None:
        if self._budget is not None and not self._budget.spend_following():
            self._stop()  # the call is read whole at its end instead
            return
        is_top = len(self._stack) == 1
        if is_top and frame.key in ARGUMENT_KEYS:
            # The arguments object itself: fragments start here, and only after the name.
            if char == '"' and not self._arguments_seen:
                # Arguments written as a JSON string: followed (so that tags inside it end
                # nothing) but not streamed; the call is decided at its end.
                self._arguments_seen = True
                self._begin_string(_SKIPPED_TEXT)
                return
            if char != "{" or self.name is None or self._arguments_seen:
                self._stop()
                return
            self._arguments_seen = True
            out.append("{")
            schema = self._schemas.get(self.name)
            self._stack.append(_Frame(is_object=True, emits=True, schema=schema))
            return
        if is_top and frame.key in NAME_KEYS:
            if char == '"' and self.name is None:
                self._begin_string(_NAME_TEXT)
            else:
                self._stop()
            return
        if not frame.emits:
            if char in "{[":
                self._stack.append(_Frame(is_object=char == "{", emits=False))
            elif char == '"':
                self._begin_string(_SKIPPED_TEXT)
            else:
                self._scalar = char
            return
        schema = frame.child_schema()
        if (
            schema is not None
            and any(key in schema for key in _COMBINING_KEYWORDS)
            and (char in "{[" or not is_string_schema(schema))
        ):
            self._stop()
            return
        if not frame.is_object and frame.members:
            out.append(", ")
        self._value_schema = schema
        if char in "{[":
            out.append(char)
            self._stack.append(_Frame(is_object=char == "{", emits=True, schema=schema))
        elif char != '"':
            self._scalar = char
        elif schema is None or is_string_schema(schema):
            out.append('"')
            self._begin_string(_EMITTED_TEXT)
        else:
            self._begin_string(_HELD_TEXT)

    def _value_done(self) -> None:
        frame = self._stack[-1]
        frame.members += 1
        frame.expect = _COMMA

    def _close(self, frame: _Frame, out: list[str]) -> None:
        # The arguments object's own `}` is left to the call's end: until it is sent, what
        # the client holds does not parse, so a call that then fails cannot pass as finished.
        closes_arguments = len(self._stack) == 2
        if frame.emits and not closes_arguments:
            out.append("}" if frame.is_object else "]")
        self._stack.pop()
        if self._stack:
            self._value_done()
        else:
            self.complete = True

    def _end_scalar(self, out: list[str]) -> None:
        token, self._scalar = self._scalar or "", None
        literal = _LITERALS.get(token)
        if literal is None and not _NUMBER.fullmatch(token):
            self._stop()
            return
        if not self._stack[-1].emits:
            pass
        elif self._value_schema is None and (literal or _CANONICAL_INTEGER.fullmatch(token)):
            out.append(literal or token)  # already as json.dumps writes it: no round trip
        else:
            self._send_value(json.loads(literal or token), out)
        self._value_done()

    def _send_value(self, value: Any, out: list[str]) -> None:
        """A complete scalar argument value, coerced by its schema, as canonical JSON."""
        if self._value_schema is not None:
            value = coerce_by_schema(value, self._value_schema, self._budget)
        out.append(json_text(value))

    def _begin_string(self, kind: int) -> None:
        self._string_kind = kind
        self._string_chars = []

    def _read_string(self, text: str, i: int, out: list[str]) -> int:
        n = len(text)
        while i < n and self.healthy:
            if self._escape is not None:
                take = min(n - i, _escape_length(self._escape + text[i]) - len(self._escape))
                self._escape += text[i : i + take]
                i += take
                if len(self._escape) == _escape_length(self._escape):
                    self._end_escape(out)
                continue
            if self._quote_tail is not None:
                blank = _BLANK_RUN.match(text, i)
                if blank:
                    self._quote_tail += blank.group()
                    i = blank.end()
                    continue
                if text[i] in _AFTER_STRING:
                    self._quote_tail = None
                    self._end_string(out)
                    return i
                inner, self._quote_tail = self._quote_tail, None
                self._string_text(inner, out)
            match = _STRING_RUN.match(text, i)
            if match and match.end() > i:
                if self._high_surrogate is not None:
                    self._stop()
                    break
                run = match.group()
                self._string_text(_unescaped(run) if "\\" in run else run, out)
                i = match.end()
            elif text[i] == "\\":
                self._escape = ""
                i += 1
            elif self._high_surrogate is not None:
                self._stop()
                break
            else:
                self._quote_tail = '"'
                i += 1
        return i

    def _end_escape(self, out: list[str]) -> None:
        escape, self._escape = self._escape or "", None
        if escape[0] != "u":
            char = _SIMPLE_ESCAPES.get(escape)
            if char is None or self._high_surrogate is not None:
                self._stop()
            else:
                self._string_text(char, out)
            return
        try:
            code = int(escape[1:], 16)
        except ValueError:
            self._stop()
            return
        high, self._high_surrogate = self._high_surrogate, None
        if 0xD800 <= code < 0xDC00 and high is None:
            self._high_surrogate = code
        elif 0xDC00 <= code < 0xE000 and high is not None:
            self._string_text(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)), out)
        elif high is None and not 0xD800 <= code < 0xE000:
            self._string_text(chr(code), out)
        else:
            self._stop()  # a lone surrogate cannot be sent as UTF-8

    def _string_text(self, text: str, out: list[str]) -> None:
        if self._string_kind == _EMITTED_TEXT:
            out.append(canonical_string(text))
        elif self._string_kind != _SKIPPED_TEXT:
            self._string_chars.append(text)

    def _end_string(self, out: list[str]) -> None:
        if self._high_surrogate is not None:
            self._stop()
            return
        kind, self._string_kind = self._string_kind, None
        frame = self._stack[-1]
        if kind == _KEY_TEXT:
            frame.key = "".join(self._string_chars)
            frame.expect = _COLON
            if frame.emits:
                out.append((", " if frame.members else "") + f'"{canonical_string(frame.key)}": ')
            return
        if kind == _NAME_TEXT:
            self.name = "".join(self._string_chars)
        elif kind == _EMITTED_TEXT:
            out.append('"')
        elif kind == _HELD_TEXT:
            self._send_value("".join(self._string_chars), out)
        self._value_done()


def _unescaped(run: str) -> str:
    """A run of `_STRING_RUN` with its escapes decoded (raw control characters are kept)."""
    decoded: str = scanstring(run + '"', 0, False)[0]
    return decoded


def _escape_length(escape: str) -> int:
    """Characters after the backslash that make up this escape."""
    return 5 if escape.startswith("u") else 1
