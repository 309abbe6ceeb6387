"""Calls whose body is JSON that ends where the JSON does, after a dialect's open tag: an
arguments object when the tag named the tool (DeepSeek, Kimi K2, gpt-oss Harmony, Mistral's
`[TOOL_CALLS]name[ARGS]`), or call objects naming their tools (Llama's `<|python_tag|>`,
Mistral's `[TOOL_CALLS][...]`, Granite's and Phi's `<|tool_call|>`). The JSON may sit in a
code fence; the end tags a format writes after it (`<｜tool▁call▁end｜>`, then the close of
the section of calls) belong to the call.

A call with no end tag ends where its JSON value closes, found by `JsonValueEnd` as the text
streams, so a stream and a whole text end it at the same character."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from ..lenient.call_objects import CallObjectError, call_from_object, calls_in_json
from ..parts import ErrorKind
from .commit_policy import ArgumentSender, CallContext, CallScanner
from .dialect_forms import resolve_tool_name
from .json_stream import JsonCallLexer

# Blanks a format may put between its tags (a line break or a few); a longer run means the
# next tag is not the call's, and holding it back longer would stall the text.
MAX_GAP_CHARS = 64
# A code fence's info line (```json): longer is no fence.
MAX_FENCE_LINE_CHARS = 32
FENCE = "```"
_STRING_RUN = {quote: re.compile(rf"[^{quote}\\]*") for quote in "\"'"}
_CODE_RUN = re.compile(r"""[^"'\[\]{}]*""")
_BLANKS = re.compile(r"[ \t\r\n]*")
# What may follow a string's closing quote; any other character makes the quote text.
_AFTER_STRING = ",}]:"
# Between call objects written one after another (Llama separates them with `;`).
_OBJECT_SEPARATOR = re.compile(r"[ \t\r\n]*[;,]?[ \t\r\n]*")


_DECODER = json.JSONDecoder()


def _run_end(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where the run of `pattern` (which matches the empty string) at `position` ends."""
    found = pattern.match(text, position)
    assert found is not None
    return found.end()


class JsonValueEnd:
    """Follows a JSON (or JSON5) value that begins with a bracket, as its text streams, to
    the bracket that closes it. Strings hide brackets; a `"` not followed by `,` `}` `]` or
    `:` is a quote inside the string (the rule the lexer and the repairs apply)."""

    __slots__ = ("_after_quote", "_begun", "_depth", "_escaped", "_quote")

    def __init__(self) -> None:
        self._begun = False  # some of the value was read
        self._depth = 0
        self._quote = ""  # the quote of the string being read, "" outside strings
        self._escaped = False  # that string's last character so far was a backslash
        self._after_quote = False  # a `"` may have ended the string: what follows tells

    def feed(self, text: str) -> int | None:
        """Read `text`: the index just past the value's closing bracket, or None."""
        if not self._begun:
            self._begun = True
            # A value that is strict JSON and whole in its first piece (a call read whole,
            # or a small one streamed) ends where the decoder says, in one step in C: the
            # same bracket, as strings hide brackets alike, where the scan below takes a
            # Python step per string and bracket.
            try:
                return _DECODER.raw_decode(text)[1]
            except (ValueError, RecursionError):
                pass
        position = 0
        while position < len(text):
            if self._after_quote:
                position = _run_end(_BLANKS, text, position)
                if position == len(text):
                    return None
                self._after_quote = False
                if text[position] not in _AFTER_STRING:
                    self._quote = '"'  # a quote inside the text: the string goes on
            elif self._quote:
                position = self._in_string(text, position)
            else:
                position = _run_end(_CODE_RUN, text, position)
                if position == len(text):
                    return None
                char = text[position]
                position += 1
                if char in "\"'":
                    self._quote = char
                elif char in "[{":
                    self._depth += 1
                else:
                    self._depth -= 1
                    if self._depth <= 0:
                        return position
        return None

    def _in_string(self, text: str, position: int) -> int:
        if self._escaped:
            self._escaped = False
            return position + 1
        position = _run_end(_STRING_RUN[self._quote], text, position)
        if position < len(text):
            if text[position] == "\\":
                self._escaped = True
            else:
                self._after_quote = self._quote == '"'
                self._quote = ""
            position += 1
        return position


@dataclass(frozen=True, slots=True)
class JsonBody:
    """How a format's JSON body is laid out."""

    # What may follow the JSON, in order, each step optional and after blanks: the
    # alternatives of each step (the call's end tag, then the section's close).
    closers: tuple[tuple[str, ...], ...] = ()
    # Call objects naming their tools (else one arguments object, its tool named before).
    # Several may follow each other, `;` or `,` between; an array of them is one value.
    objects: bool = False


class _State(Enum):
    START = auto()  # before the JSON: blanks, maybe a fence line
    VALUE = auto()  # inside a JSON value
    AFTER = auto()  # past a value: another object, the end tags, or the call's end


class JsonBodyCall(CallScanner):
    """One call's JSON body, from after its open tag to the end of the JSON and its end
    tags. `name` is the tool the open tag named ("" when the objects name theirs)."""

    def __init__(self, ctx: CallContext, open_tag: str, name: str, body: JsonBody) -> None:
        self._ctx, self._open_tag, self._name, self._body = ctx, open_tag, name, body
        self._consumed: list[str] = []  # the call's text after its open tag, once read
        self._held = ""  # read, but not decided yet (blanks, a tag's start)
        self._state = _State.START
        self._closers = body.closers
        self._values: list[str] = []
        self._value: list[str] = []
        self._value_end = JsonValueEnd()
        self._lexer = JsonCallLexer(
            ctx.tools.parameters, ctx.relaxed_budget, arguments_of=None if body.objects else name
        )
        self._skip_for_lexer = 0  # the `[` of an array of objects, which the lexer is not fed
        self._sender = ArgumentSender(ctx)

    def consume(self, text: str) -> str | None:
        text, self._held = self._held + text, ""
        position = 0
        while True:
            if self._state is _State.VALUE:
                end = self._value_end.feed(text[position:] if position else text)
                if end is None:
                    self._read_value(text[position:])
                    return None
                self._read_value(text[position : position + end])
                self._values.append("".join(self._value))
                position += end
                self._state = _State.AFTER
                continue
            rest = text[position:]
            taken = self._start(rest) if self._state is _State.START else self._after(rest)
            if taken is None:
                self._held = rest
                return None
            if isinstance(taken, str):
                return taken
            self._consumed.append(rest[:taken])
            position += taken

    def _start(self, rest: str) -> int | str | None:
        """Before the JSON: how much to take (then the value or a fence line begins), None
        to wait, or what follows an open tag that was no call after all (read again)."""
        gap = _run_end(_BLANKS, rest, 0)
        if gap > MAX_GAP_CHARS:
            return self._no_call(rest)
        if gap == len(rest):
            return None
        if rest.startswith(FENCE[: len(rest) - gap], gap) and len(rest) - gap < len(FENCE):
            return None
        if rest.startswith(FENCE, gap) and not self._values and self._closers[:1] != ((FENCE,),):
            line_end = rest.find("\n", gap)
            if line_end == -1:
                return None if len(rest) - gap <= MAX_FENCE_LINE_CHARS else self._no_call(rest)
            self._closers = ((FENCE,), *self._closers)  # the fence closes before the end tags
            return line_end + 1
        char = rest[gap]
        if char == "{" or (char == "[" and self._body.objects):
            self._state, self._value = _State.VALUE, []
            self._skip_for_lexer = 1 if char == "[" else 0
            return gap
        if not self._body.objects and self._closers:  # no arguments: an end tag follows
            ends = self._closers[0]
            if any(rest.startswith(tag, gap) for tag in ends):
                self._state = _State.AFTER
                return 0
            if any(tag.startswith(rest[gap:]) for tag in ends):
                return None
        return self._no_call(rest)

    def _after(self, rest: str) -> int | str | None:
        """Past a value: how much to take (another object begins, or an end tag was read),
        None to wait; once neither can follow, the call ends and what follows is returned."""
        if self._body.objects and self._values:
            separator = _run_end(_OBJECT_SEPARATOR, rest, 0)
            if separator == len(rest) and separator <= MAX_GAP_CHARS:
                return None
            if separator < len(rest) and rest[separator] in "{[" and separator <= MAX_GAP_CHARS:
                self._state, self._value, self._value_end = _State.VALUE, [], JsonValueEnd()
                return separator
        while self._closers:
            alternatives = self._closers[0]
            gap = _run_end(_BLANKS, rest, 0)
            if gap > MAX_GAP_CHARS:
                break
            if gap == len(rest):
                return None
            tag = next((tag for tag in alternatives if rest.startswith(tag, gap)), None)
            if tag is not None:
                self._closers = self._closers[1:]
                return gap + len(tag)
            if any(tag.startswith(rest[gap:]) for tag in alternatives):
                return None
            self._closers = self._closers[1:]  # this one is left out: the next may follow
        self._complete()
        return rest

    def _read_value(self, text: str) -> None:
        if not text:
            return
        self._value.append(text)
        self._consumed.append(text)
        # The first value streams, if the lexer can follow it; a whole answer needs no lexer.
        if not self._values and self._sender.sending:
            skip, self._skip_for_lexer = self._skip_for_lexer, 0
            self._sender.feed(self._lexer, text[skip:])

    def _no_call(self, rest: str) -> str:
        """The open tag was followed by no JSON: it is text, and so is what came since."""
        original = self._open_tag + "".join(self._consumed)
        self._ctx.fall_back_to_text(
            ErrorKind.MALFORMED_JSON, "no JSON after the call's open tag", original
        )
        return rest

    def finish(self) -> None:
        if self._state is _State.AFTER:
            self._complete()
            self._ctx.out.text(self._held)
            return
        original = self._open_tag + "".join(self._consumed) + self._held
        self._ctx.cut_off_call(self._sender.call, original)

    def _complete(self) -> None:
        ctx, original = self._ctx, self._open_tag + "".join(self._consumed)
        try:
            calls = self._calls()
        except CallObjectError as error:
            ctx.reject_call(self._sender.call, ErrorKind.MALFORMED_JSON, str(error), original)
            return
        named = [(resolve_tool_name(name, ctx.tools), name, arguments) for name, arguments in calls]
        if self._sender.call is None and any(known is None for known, _, _ in named):
            unknown = ", ".join(name for known, name, _ in named if known is None)
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, f"unknown tool: {unknown}", original)
            return
        calls = [(known or name, arguments) for known, name, arguments in named]
        ctx.complete_calls(calls, original, streamed=self._sender.call)

    def _calls(self) -> list[tuple[str, dict[str, Any]]]:
        budget = self._ctx.relaxed_budget
        if not self._body.objects:
            arguments = self._values[0] if self._values else "{}"
            return [call_from_object({"name": self._name, "arguments": arguments}, budget)]
        return [
            call
            for value in self._values
            for call in calls_in_json(value, complete_only=True, budget=budget)
        ]
