"""JSON-mix: calls written as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
between ordinary text, with the JSON read as relaxed as models write it."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from ..base import ParserOptions, Protocol, StreamParser
from ..lenient.call_objects import CallObjectError, calls_in_json
from ..lenient.json_text import json_text
from ..parts import ErrorKind, OnError, ToolSpec
from ..registry import register
from ..streaming.commit_policy import ArgumentSender, CallContext, CallScanner
from ..streaming.json_stream import JsonCallLexer
from ..streaming.marker_scan import partial_token_start, unclosed_tag_start
from ..streaming.tag_loop import TagStreamParser
from .prompting import SeveralCalls, result_block, tools_prompt

# Any closing tag: models sometimes end a call with the wrong one (`</tool_response>`).
_CLOSING_TAG = re.compile(r"</[A-Za-z_][\w.:-]*\s*>")
# How a call object, or an array of them, begins.
_CONTAINER_START = re.compile(r"[ \t\r\n]*[{\[]")
# Longer than any tag name a model closes a call with; a longer `<...` is not held back.
MAX_TAG_CHARS = 64


@register("json-mix")
class JsonMixProtocol(Protocol):
    def __init__(
        self,
        *,
        call_start: str = "<tool_call>",
        call_end: str = "</tool_call>",
        response_start: str = "<tool_response>",
        response_end: str = "</tool_response>",
    ) -> None:
        self.call_start, self.call_end = call_start, call_end
        self.response_start, self.response_end = response_start, response_end

    def render_tools(self, tools: Sequence[ToolSpec], *, single_call: bool = False) -> str:
        return tools_prompt(
            tools,
            self.render_call,
            how_to_call='To call a tool, write a JSON object with the keys "name" and'
            f' "arguments" between {self.call_start} and {self.call_end} tags',
            rules=["The arguments must follow the tool's schema."],
            results_in=f"a {self.response_start} block",
            single_call=single_call,
            reminder=f"Write every call between {self.call_start} and {self.call_end} tags"
            " exactly as in the example: never as a bare JSON object, never inside a ```"
            " code block.",
            # Measured with bench/real_model_calls.py: shown one block after another, a 1.5B
            # model still wrote one call for two cities; shown an array, it wrote them all,
            # unless a rule said "write all the calls" without naming the array.
            several_calls=SeveralCalls(
                "To call several tools, or one tool several times (a question about two cities"
                " is two calls), write a JSON array of the calls",
                "To call several tools at once, write them as one JSON array.",
                self.render_calls,
            ),
        )

    def render_calls(self, calls: Sequence[tuple[str, Any]]) -> str:
        """Several calls in one block, as a JSON array."""
        array = _json_in_tags([{"name": name, "arguments": arguments} for name, arguments in calls])
        return f"{self.call_start}\n{array}\n{self.call_end}"

    def render_call(self, name: str, arguments: Any) -> str:
        call = _json_in_tags({"name": name, "arguments": arguments})
        return f"{self.call_start}\n{call}\n{self.call_end}"

    def render_result(self, name: str, call_id: str, content: str) -> str:
        return result_block(self.response_start, self.response_end, name, call_id, content)

    def _new_parser(
        self, tools: Sequence[ToolSpec], options: ParserOptions, on_error: OnError | None
    ) -> StreamParser:
        return _JsonMixParser(self, tools, options, on_error)


def _json_in_tags(value: Any) -> str:
    """JSON whose strings cannot close the surrounding tag: `</` is written `<\\/`, which
    JSON reads back as `</`."""
    return json_text(value).replace("</", "<\\/")


def hermes_call(ctx: CallContext, open_tag: str) -> CallScanner:
    """The scanner of a `<tool_call>` JSON body (Hermes' and Qwen2.5's format)."""
    return _JsonCall(ctx, open_tag, "<tool_call>", "</tool_call>")


class _JsonMixParser(TagStreamParser):
    _native_dialects = frozenset({"hermes"})

    def __init__(
        self,
        protocol: JsonMixProtocol,
        tools: Sequence[ToolSpec],
        options: ParserOptions,
        on_error: OnError | None,
    ) -> None:
        super().__init__(tools, options, on_error, open_tokens=(protocol.call_start,))
        self._start, self._end = protocol.call_start, protocol.call_end
        self._tag_chars |= frozenset(self._start[:1])

    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        start = text.find(self._start)
        return None if start == -1 else (start, start + len(self._start), "")

    def _partial_open_start(self, text: str) -> int:
        return len(text)  # the start tag is an open token: the loop holds its beginning

    def _open_call(self, ctx: CallContext, open_tag: str, name: str) -> CallScanner:
        return _JsonCall(ctx, open_tag, self._start, self._end)


@functools.lru_cache(maxsize=16)
def _call_tags(start_tag: str, end_tag: str) -> re.Pattern[str]:
    """The tags that may end a call body, built once per pair: escaping and joining them
    for every call took a tenth of reading a small one."""
    return re.compile("|".join((re.escape(end_tag), re.escape(start_tag), _CLOSING_TAG.pattern)))


class _JsonCall(CallScanner):
    """One `<tool_call>` body. It ends at the end tag; at a second start tag (outside a
    JSON string); or at any other closing tag once the JSON value is complete."""

    def __init__(self, ctx: CallContext, open_tag: str, start_tag: str, end_tag: str) -> None:
        self._ctx = ctx
        self._open_tag, self._start_tag, self._end_tag = open_tag, start_tag, end_tag
        self._tags = _call_tags(start_tag, end_tag)
        # Every tag above, whole or partial, begins with one of these.
        self._tag_chars = frozenset(end_tag[:1] + start_tag[:1] + "<")
        self._body: list[str] = []
        self._held = ""
        self._lexer = JsonCallLexer(ctx.tools.parameters, ctx.relaxed_budget)
        self._sender = ArgumentSender(ctx)

    def consume(self, text: str) -> str | None:
        text = self._held + text
        if self._tag_chars.isdisjoint(text):  # the common delta inside a call: all body
            self._absorb(text)
            self._held = ""
            return None
        scanned = 0
        for match in self._tags.finditer(text):
            self._absorb(text[scanned : match.start()])
            scanned = match.start()
            tag = match.group()
            if self._in_string(tag):
                continue  # file contents may well mention the tags
            if tag == self._end_tag:
                self._complete(tag)
                return text[match.end() :]
            if tag == self._start_tag:
                self._complete("")
                return text[match.start() :]
            if self._lexer.complete:
                self._complete(tag)
                return text[match.end() :]
        rest = text[scanned:]
        safe = min(
            partial_token_start(rest, (self._end_tag, self._start_tag)),
            unclosed_tag_start(rest, MAX_TAG_CHARS),  # may still become a (wrong) closing tag
        )
        self._absorb(rest[:safe])
        self._held = rest[safe:]
        return None

    def _in_string(self, tag: str) -> bool:
        """Whether the body read so far ends inside a JSON string, for a `tag` after it. A
        body that is strict JSON does not, which one parse in C tells for the end or start
        tag of a call the lexer has not followed; otherwise the lexer is asked (and
        follows the body from then on)."""
        sender = self._sender
        if not sender.following:
            if tag in (self._end_tag, self._start_tag) and _strict_json(self._body):
                return False
            sender.follow(self._lexer)
        return self._lexer.in_string

    def finish(self) -> None:
        body = "".join(self._body)
        original = self._open_tag + body + self._held
        try:
            calls = calls_in_json(body, complete_only=True, budget=self._ctx.relaxed_budget)
        except CallObjectError:
            self._ctx.cut_off_call(self._sender.call, original)
            return
        self._emit(calls, original)

    def _absorb(self, text: str) -> None:
        if text:
            self._body.append(text)
            self._sender.feed(self._lexer, text)

    def _complete(self, close_tag: str) -> None:
        body = "".join(self._body)
        original = self._open_tag + body + close_tag
        try:
            calls = calls_in_json(body, complete_only=False, budget=self._ctx.relaxed_budget)
        except CallObjectError as error:
            self._ctx.reject_call(self._sender.call, ErrorKind.MALFORMED_JSON, str(error), original)
            return
        self._emit(calls, original)

    def _emit(self, calls: list[tuple[str, dict[str, Any]]], original: str) -> None:
        ctx = self._ctx
        if self._sender.call is None and not all(ctx.accepts(name) for name, _ in calls):
            unknown = ", ".join(name for name, _ in calls if not ctx.accepts(name))
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, f"unknown tool: {unknown}", original)
            return
        ctx.complete_calls(calls, original, streamed=self._sender.call)


def _strict_json(pieces: list[str]) -> bool:
    """Whether `pieces` joined are one strict JSON object or array (whose end is no string's
    inside). Other text (a fence, a stray word) is left to the lexer, untried."""
    text = "".join(pieces)
    if _CONTAINER_START.match(text) is None:
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True
