"""JSON-mix: calls written as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
between ordinary text, with the JSON read as relaxed as models write it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .base import ArgumentsMode, ParserOptions, Protocol, StreamParser
from .coerce import coerce_by_schema
from .json_stream import ARGUMENT_KEYS, NAME_KEYS, JsonCallLexer
from .parts import ErrorKind, ToolSpec
from .prompting import tools_prompt
from .registry import register
from .relaxed_json import RelaxedJSONError, parse_json_values, parse_relaxed_json, strip_code_fence
from .streaming import (
    CallContext,
    CallScanner,
    StreamedCall,
    TagStreamParser,
    partial_token_start,
    unclosed_tag_start,
)

# Any closing tag: models sometimes end a call with the wrong one (`</tool_response>`).
_CLOSING_TAG = re.compile(r"</[A-Za-z_][\w.:-]*\s*>")
# Longer than any tag name a model closes a call with; a longer `<...` is not held back.
MAX_TAG_CHARS = 64


class CallBodyError(ValueError):
    pass


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
        )

    def render_call(self, name: str, arguments: Any) -> str:
        call = _json_in_tags({"name": name, "arguments": arguments})
        return f"{self.call_start}\n{call}\n{self.call_end}"

    def render_result(self, name: str, call_id: str, content: str) -> str:
        result = _json_in_tags({"name": name, "tool_call_id": call_id, "content": content})
        return f"{self.response_start}\n{result}\n{self.response_end}"

    def _new_parser(self, tools: Sequence[ToolSpec], options: ParserOptions) -> StreamParser:
        return _JsonMixParser(self, tools, options)


def _json_in_tags(value: Any) -> str:
    """JSON whose strings cannot close the surrounding tag: `</` is written `<\\/`, which
    JSON reads back as `</`."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


class _JsonMixParser(TagStreamParser):
    def __init__(
        self, protocol: JsonMixProtocol, tools: Sequence[ToolSpec], options: ParserOptions
    ) -> None:
        super().__init__(tools, options)
        self._start, self._end = protocol.call_start, protocol.call_end

    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        start = text.find(self._start)
        return None if start == -1 else (start, start + len(self._start), "")

    def _partial_open_start(self, text: str) -> int:
        return partial_token_start(text, (self._start,))

    def _open_call(self, open_tag: str, name: str) -> CallScanner:
        return _JsonCall(self._ctx, open_tag, self._start, self._end)


class _JsonCall(CallScanner):
    """One `<tool_call>` body. It ends at the end tag; at a second start tag (outside a
    JSON string); or at any other closing tag once the JSON value is complete."""

    def __init__(self, ctx: CallContext, open_tag: str, start_tag: str, end_tag: str) -> None:
        self._ctx = ctx
        self._open_tag, self._start_tag, self._end_tag = open_tag, start_tag, end_tag
        self._tags = re.compile(
            "|".join((re.escape(end_tag), re.escape(start_tag), _CLOSING_TAG.pattern))
        )
        self._body: list[str] = []
        self._held = ""
        self._lexer = JsonCallLexer({name: tool.parameters for name, tool in ctx.tools.items()})
        self._streamed: StreamedCall | None = None

    def consume(self, text: str) -> str | None:
        text = self._held + text
        scanned = 0
        for match in self._tags.finditer(text):
            self._absorb(text[scanned : match.start()])
            scanned = match.start()
            tag = match.group()
            if self._lexer.in_string:
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

    def finish(self) -> None:
        body = "".join(self._body)
        original = self._open_tag + body + self._held
        try:
            calls = calls_in_body(body, complete_only=True)
        except CallBodyError as error:
            if self._streamed is not None:
                self._ctx.unfinished_call(self._streamed, original)
            else:
                self._ctx.fall_back_to_text(ErrorKind.UNFINISHED_CALL, str(error), original)
            return
        self._emit(calls, original)

    def _absorb(self, text: str) -> None:
        if not text:
            return
        self._body.append(text)
        lexer = self._lexer
        if not lexer.healthy:
            return
        fragments = lexer.feed(text)
        ctx = self._ctx
        if ctx.mode is ArgumentsMode.ATOMIC or lexer.name is None:
            return
        if self._streamed is None and ctx.accepts(lexer.name):
            self._streamed = ctx.start_call(lexer.name)
        if self._streamed is not None:
            ctx.send_arguments(self._streamed, "".join(fragments))

    def _complete(self, close_tag: str) -> None:
        body = "".join(self._body)
        original = self._open_tag + body + close_tag
        try:
            calls = calls_in_body(body, complete_only=False)
        except CallBodyError as error:
            if self._streamed is not None:
                self._ctx.error(ErrorKind.MALFORMED_JSON, str(error), original)
                self._ctx.close_streamed_call(
                    self._streamed, self._lexer.closing_suffix(), original
                )
            else:
                self._ctx.fall_back_to_text(ErrorKind.MALFORMED_JSON, str(error), original)
            return
        self._emit(calls, original)

    def _emit(self, calls: list[tuple[str, dict[str, Any]]], original: str) -> None:
        ctx = self._ctx
        if self._streamed is None and not all(ctx.accepts(name) for name, _ in calls):
            unknown = ", ".join(name for name, _ in calls if not ctx.accepts(name))
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, f"unknown tool: {unknown}", original)
            return
        for index, (name, arguments) in enumerate(calls):
            tool = ctx.tools.get(name)
            # The whole segment is the first call's original text, so nothing is counted twice.
            ctx.complete_call(
                name,
                coerce_by_schema(arguments, tool.parameters) if tool else arguments,
                original if index == 0 else "",
                streamed=self._streamed if index == 0 else None,
                closing_suffix=self._lexer.closing_suffix(),
            )


def calls_in_body(body: str, *, complete_only: bool) -> list[tuple[str, dict[str, Any]]]:
    """The calls a `<tool_call>` body holds: one object, an array of them, or several
    objects in a row. With `complete_only`, a body that needs closing is rejected (the
    output was cut off, and a half-written call must not pass as a finished one)."""
    try:
        values = parse_json_values(strip_code_fence(body), complete_only=complete_only)
    except RelaxedJSONError as error:
        raise CallBodyError(f"malformed call JSON: {error}") from None
    calls = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            calls.append(call_from_object(item))
    if not calls:
        raise CallBodyError("no call in the body")
    return calls


def call_from_object(item: Any) -> tuple[str, dict[str, Any]]:
    """(name, arguments) from `{"name": ..., "arguments": {...}}` and the variants models
    write: other key names, arguments as a JSON string, OpenAI's `{"function": {...}}`."""
    if not isinstance(item, dict):
        raise CallBodyError("a call must be a JSON object")
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = next((item[key] for key in NAME_KEYS if key in item), None)
    if not isinstance(name, str) or not name:
        raise CallBodyError("the call has no tool name")
    arguments = next((item[key] for key in ARGUMENT_KEYS if key in item), None)
    if isinstance(arguments, str):
        try:
            arguments = parse_relaxed_json(arguments) if arguments.strip() else {}
        except RelaxedJSONError as error:
            raise CallBodyError(f"arguments string is not JSON: {error}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise CallBodyError("arguments must be a JSON object")
    return name, arguments
