"""DEBUG_PARSER_MW: tracing how model output becomes tool calls, for agent developers.

`stream` logs, per request id, each raw upstream chunk, each part the parser hands out and
each event sent to the client. `parse` also gathers each choice's whole text and, when the
choice ends, logs a summary: the text with its tool-call segments highlighted, the calls
parsed from it and every parse error with its original text. Output goes to the
`toolcall_proxy.debug` logger (stderr unless logging is configured otherwise); with `off`
no tracer exists, so the hot path pays nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from protocols import ParseError, Part, Protocol, Segment, StreamParser, ToolCall, ToolSpec

from ..wire import EventStream
from .access_log import DEBUG_LOGGER
from .log_config import CONTINUATION, ESCAPED_RECORD_KEY, escaped

debug_logger = logging.getLogger(DEBUG_LOGGER)


class DebugMode(StrEnum):
    OFF = "off"
    STREAM = "stream"
    PARSE = "parse"


class HighlightStyle(StrEnum):
    BG = "bg"
    INVERSE = "inverse"
    UNDERLINE = "underline"
    BOLD = "bold"


# SGR escape sequences: black on yellow, reverse video, underline, bold; then reset.
STYLE_CODES = {
    HighlightStyle.BG: "\x1b[30;43m",
    HighlightStyle.INVERSE: "\x1b[7m",
    HighlightStyle.UNDERLINE: "\x1b[4m",
    HighlightStyle.BOLD: "\x1b[1m",
}
RESET = "\x1b[0m"
# Without a terminal, or with NO_COLOR set (https://no-color.org), segments are bracketed.
PLAIN_MARKERS = ("[[", "]]")
EVENT_PREFIX = b"data: "
NOTHING = "(none)"


@dataclass(frozen=True, slots=True)
class Markers:
    """What goes before and after a highlighted segment."""

    open: str
    close: str

    @classmethod
    def for_terminal(cls, style: HighlightStyle) -> Markers:
        """Escape codes when stderr is a terminal and NO_COLOR is unset, else brackets."""
        if sys.stderr.isatty() and not os.environ.get("NO_COLOR"):
            return cls(STYLE_CODES[style], RESET)
        return cls(*PLAIN_MARKERS)


class ParserDebug:
    """The deployment's debug mode; `trace` starts one request's tracing.

    >>> debug = ParserDebug.configured(DebugMode.PARSE, HighlightStyle.BG)  # None for off
    >>> trace = debug.trace(request_id, protocol, tools)
    """

    def __init__(self, mode: DebugMode, markers: Markers) -> None:
        self.mode = mode
        self.markers = markers

    @classmethod
    def configured(cls, mode: DebugMode, style: HighlightStyle) -> ParserDebug | None:
        if mode is DebugMode.OFF:
            return None
        debug_logger.setLevel(logging.DEBUG)
        return cls(mode, Markers.for_terminal(style))

    def trace(self, request_id: str, protocol: Protocol, tools: Sequence[ToolSpec]) -> ParserTrace:
        return ParserTrace(self, request_id, protocol, tools)

    def note(self, request_id: str, what: str, detail: str) -> None:
        """One line about a request outside its parsing (what its endpoint did to it)."""
        # One line per traced item: its newlines shown as `\n` (the log escapes the rest).
        debug_logger.debug("[%s] %s %s", request_id, what, escaped(detail, "\\n"))


class ParserTrace:
    """One request's tracing: wraps its upstream chunks, parsers and client events, and
    hears parse errors from the completion's observer."""

    def __init__(
        self, debug: ParserDebug, request_id: str, protocol: Protocol, tools: Sequence[ToolSpec]
    ) -> None:
        self._debug = debug
        self._request_id = request_id
        self.protocol = protocol
        self.tools = tools
        self._parsing: _Transcript | None = None  # the choice whose parser is running

    def log(self, what: str, detail: str) -> None:
        self._debug.note(self._request_id, what, detail)

    async def upstream_payloads(self, payloads: AsyncIterator[str]) -> AsyncIterator[str]:
        async for payload in payloads:
            self.log("upstream", payload)
            yield payload

    async def client_events(self, events: EventStream) -> EventStream:
        async for event in events:
            self.log("client", event.removeprefix(EVENT_PREFIX).decode().rstrip())
            yield event

    def client_answer(self, answer: dict[str, Any]) -> None:
        self.log("client", json.dumps(answer, ensure_ascii=False))

    def parse_error(self, error: ParseError) -> None:
        """A parse error (the observer tells): logged, and kept for the running choice's
        summary. Parsers report errors only while they run, so the running one is it."""
        self.log("parse error", f"{error.kind}: {error.message}")
        if self._parsing is not None:
            self._parsing.errors.append(error)

    def call_not_sent(self, name: str, why: str) -> None:
        """A call read but kept from the client (the observer tells), which the summary's
        parsed calls still list."""
        self.log("not sent", f"{name}: {why}")

    def stream_parser(self, parser: StreamParser) -> StreamParser:
        """`parser`, traced."""
        return _TracedParser(parser, self._transcript(), self)

    def parse_whole(self, text: str, parse: Callable[[], list[Part]]) -> list[Part]:
        """`parse()` run over a whole answer's `text`, traced."""
        self.log("upstream text", json.dumps(text, ensure_ascii=False))
        transcript = self._transcript()
        with self.running(transcript):
            parts = parse()
        transcript.record(text, parts)
        transcript.end()
        return parts

    @contextmanager
    def running(self, transcript: _Transcript) -> Iterator[None]:
        self._parsing = transcript
        try:
            yield
        finally:
            self._parsing = None

    def _transcript(self) -> _Transcript:
        return _Transcript(self, gather=self._debug.mode is DebugMode.PARSE)

    def summary(self, text: str, calls: Sequence[ToolCall], errors: Sequence[ParseError]) -> str:
        segments = self.protocol.extract_tool_call_segments(text, self.tools)
        lines = [
            f"[{self._request_id}] parse summary ({self.protocol.name})",
            "--- model text (tool-call segments marked) ---",
            highlighted(text, segments, self._debug.markers),
            "--- parsed tool calls ---",
            *([escaped(f"{call.name} {call.arguments}", "\\n") for call in calls] or [NOTHING]),
            "--- parse errors ---",
            *(
                [
                    escaped(f"{error.kind}: {error.message}", "\\n")
                    + f"\n  original: {json.dumps(error.original)}"
                    for error in errors
                ]
                or [NOTHING]
            ),
        ]
        return "\n".join(lines)


def parse_traced(
    trace: ParserTrace | None, text: str, parse: Callable[[], list[Part]]
) -> list[Part]:
    """`parse()` over a whole answer's `text`, traced when tracing is on."""
    if trace is None:
        return parse()
    return trace.parse_whole(text, parse)


def highlighted(text: str, segments: Sequence[Segment], markers: Markers) -> str:
    """`text`, escaped as the log escapes it, with each segment wrapped in the markers."""
    pieces = []
    at = 0
    for segment in segments:
        before, inside = text[at : segment.start], segment.text
        pieces += [escaped(before, CONTINUATION), markers.open]
        pieces += [escaped(inside, CONTINUATION), markers.close]
        at = segment.end
    pieces.append(escaped(text[at:], CONTINUATION))
    return "".join(pieces)


class _Transcript:
    """One choice's parts logged as they come; in parse mode its text, calls and errors
    kept for the summary."""

    def __init__(self, trace: ParserTrace, *, gather: bool) -> None:
        self._trace = trace
        self._gather = gather
        self._text: list[str] = []
        self._calls: list[ToolCall] = []
        self.errors: list[ParseError] = []

    def record(self, text: str, parts: list[Part]) -> None:
        for part in parts:
            self._trace.log("part", repr(part))
        if self._gather:
            self._text.append(text)
            self._calls += [part for part in parts if isinstance(part, ToolCall)]

    def end(self) -> None:
        if self._gather:
            # Escaped as it was built, so that text logs keep the highlight's escape codes.
            summary = self._trace.summary("".join(self._text), self._calls, self.errors)
            debug_logger.debug(summary, extra={ESCAPED_RECORD_KEY: True})


class _TracedParser(StreamParser):
    def __init__(self, parser: StreamParser, transcript: _Transcript, trace: ParserTrace) -> None:
        self._parser = parser
        self._transcript = transcript
        self._trace = trace

    def feed(self, text: str) -> list[Part]:
        with self._trace.running(self._transcript):
            parts = self._parser.feed(text)
        self._transcript.record(text, parts)
        return parts

    def finish(self) -> list[Part]:
        with self._trace.running(self._transcript):
            parts = self._parser.finish()
        self._transcript.record("", parts)
        self._transcript.end()
        return parts

    @property
    def ended(self) -> bool:
        return self._parser.ended
