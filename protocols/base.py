"""The Protocol interface every text protocol implements: how tools, calls and results are
written into a prompt, and how a model's text is parsed back (see `streaming` for the
machinery the parsers share)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar

from .lenient.relaxed_json import RELAXED_PARSE_BUDGET_CHARS
from .parts import (
    OnError,
    Part,
    TextDelta,
    TextStart,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallUnfinished,
    ToolSpec,
)
from .quoted_lines import NO_QUOTED_LINES, QuotedLines
from .registry import Registered


class ArgumentsMode(StrEnum):
    INCREMENTAL = "incremental"  # start, argument fragments, then the complete call
    ATOMIC = "atomic"  # one ToolCall part once the call is complete


class UnknownTools(StrEnum):
    CALL = "call"  # forward calls to undeclared tools; the agent tells the model
    TEXT = "text"  # treat them as text


# Calls whose arguments stay under this many characters are sent only once they end, decided
# exactly as in a whole text, so a stream can never disagree with the non-stream answer about
# them. 1 KiB holds every everyday call (paths, searches, commands, short edits) and costs at
# most a few seconds of a call's start appearing later; a client has nothing to show from a
# small call's fragments anyway. Larger calls (file writes) stream as they are written.
SMALL_CALL_CHARS = 1024


@dataclass(frozen=True, slots=True)
class ParserOptions:
    """How model text is parsed, alike for every answer a deployment reads: one value, built
    once (from the settings) and handed whole to each parser.

    >>> options = ParserOptions(unknown_tools=UnknownTools.TEXT, small_call_chars=0)
    >>> parser = protocol.stream_parser(tools, options=options, on_error=errors.append)
    """

    mode: ArgumentsMode = ArgumentsMode.INCREMENTAL
    unknown_tools: UnknownTools = UnknownTools.CALL
    relaxed_parse_budget_chars: int = RELAXED_PARSE_BUDGET_CHARS
    small_call_chars: int = SMALL_CALL_CHARS
    # A whole answer that is only call objects, off the protocol's format, read as calls.
    off_protocol_calls: bool = True
    # The lines of the request's tool results: a call form on one of them is quoted.
    quoted_lines: QuotedLines = NO_QUOTED_LINES
    # A route's own call formats (dialects described as data: `described_format`), read
    # beside the registered dialects by this route's parsers alone.
    dialects: tuple[type[Registered], ...] = ()


DEFAULT_PARSER_OPTIONS = ParserOptions()


@dataclass(frozen=True, slots=True)
class Segment:
    """A tool call's original text and where it sits in the model's output."""

    start: int
    end: int
    text: str


class StreamParser(ABC):
    """Feed model text as it arrives; get parts back. Never raises on model output.

    >>> parser = protocol.stream_parser(tools)
    >>> parts = parser.feed("Let me look.<tool_call>{\\"name\\": ...")
    >>> parts += parser.finish()
    """

    @abstractmethod
    def feed(self, text: str) -> list[Part]: ...

    @abstractmethod
    def finish(self) -> list[Part]: ...

    @property
    def ended(self) -> bool:
        """Whether the model's answer ended before its output did: it wrote a result for
        its own call (`invented_result`), and what it wrote from there on is built on a
        result that does not exist. The parser drops it, with records; a caller may stop
        reading the output and `finish`."""
        return False


class Protocol(Registered, ABC):
    """A text protocol: how tools, calls and results are written into the prompt, and
    how the model's text is parsed back into calls."""

    registered: ClassVar[dict[str, type[Protocol]]] = {}

    @abstractmethod
    def render_tools(self, tools: Sequence[ToolSpec], *, single_call: bool = False) -> str:
        """System-prompt text declaring the tools and the exact call format."""

    @abstractmethod
    def render_call(self, name: str, arguments: Any) -> str:
        """An earlier assistant tool call, written as the model would have written it."""

    @abstractmethod
    def render_result(self, name: str, call_id: str, content: str) -> str:
        """A tool's result, tied to its call's name and id."""

    def stream_parser(
        self,
        tools: Sequence[ToolSpec],
        *,
        options: ParserOptions = DEFAULT_PARSER_OPTIONS,
        on_error: OnError | None = None,
    ) -> StreamParser:
        """A fresh parser of one output; `on_error` hears of each text that is no call as-is."""
        return self._new_parser(tools, options, on_error)

    @abstractmethod
    def _new_parser(
        self, tools: Sequence[ToolSpec], options: ParserOptions, on_error: OnError | None
    ) -> StreamParser: ...

    def parse(
        self,
        text: str,
        tools: Sequence[ToolSpec],
        *,
        options: ParserOptions = DEFAULT_PARSER_OPTIONS,
        on_error: OnError | None = None,
    ) -> list[Part]:
        """The stream parser run once over a whole text, in atomic mode whatever `options`
        say (a call is sent whole, so `small_call_chars` has nothing to decide)."""
        atomic = replace(options, mode=ArgumentsMode.ATOMIC)
        parser = self.stream_parser(tools, options=atomic, on_error=on_error)
        return parsed_whole(parser, text)

    def extract_tool_call_segments(self, text: str, tools: Sequence[ToolSpec]) -> list[Segment]:
        """The original text of every call in `text`, with its offsets."""
        segments = []
        offset = 0
        for part in self.parse(text, tools):
            if isinstance(part, TextDelta):
                offset += len(part.text)
            elif isinstance(part, ThinkStart | ThinkEnd):
                offset += len(part.tag)
            elif isinstance(part, ToolCall | ToolCallUnfinished) and part.original:
                # Layout whitespace dropped before the call (see PartWriter) is skipped.
                start = text.find(part.original, offset)
                end = start + len(part.original)
                segments.append(Segment(start, end, part.original))
                offset = end
        return segments


# A whole text is read as a stream would deliver it, its parts kept only once they are more
# than the text itself. The parser hands text out in pieces of a few hundred characters (see
# `streaming.tag_loop.FEED_PIECE_CHARS`); a whole answer of prose kept as them took about
# twice its own size more (60 MiB of prose: +132 MB), though all it holds is its text. Each
# `feed` is given this much of it; the parts it returns are looked at, and dropped while they
# are the text so far, before the next.
WHOLE_FEED_CHARS = 64 * 1024


def parsed_whole(parser: StreamParser, text: str) -> list[Part]:
    """What `parser` makes of all of `text`: the same parts as `feed(text) + finish()`, up
    to how text deltas are split, and one delta of `text` itself (no copy) when all it found
    was `text` as text."""
    prose = _Prose(text)
    for start in range(0, len(text), WHOLE_FEED_CHARS):
        prose.take(parser.feed(text[start : start + WHOLE_FEED_CHARS]))
    prose.take(parser.finish())
    return prose.parts()


class _Prose:
    """The parts of a whole text, held as how much of it they were while they are only its
    text, in one text block."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._start: TextStart | None = None
        self._read = 0  # characters of the text its deltas have given so far
        self._parts: list[Part] | None = None  # once they are more than the text

    def take(self, parts: list[Part]) -> None:
        """The parts read next."""
        if self._parts is not None:
            self._parts += parts
            return
        for index, part in enumerate(parts):
            if isinstance(part, TextStart) and self._start is None:
                self._start = part
            elif not (
                isinstance(part, TextDelta)
                and self._start is not None
                and part.id == self._start.id
                and self._text.startswith(part.text, self._read)
            ):
                self._parts = self._so_far() + parts[index:]
                return
            else:
                self._read += len(part.text)

    def parts(self) -> list[Part]:
        return self._so_far() if self._parts is None else self._parts

    def _so_far(self) -> list[Part]:
        if self._start is None:
            return []
        if not self._read:
            return [self._start]
        # The whole text is that very string: slicing all of a string copies nothing.
        return [self._start, TextDelta(self._start.id, self._text[: self._read])]


class UnknownProtocolError(ValueError):
    pass


def get_protocol(name: str, **options: Any) -> Protocol:
    """`get_protocol("morph-xml")` -> a ready protocol instance."""
    try:
        cls = Protocol.registered[name]
    except KeyError:
        raise UnknownProtocolError(
            f"unknown protocol {name!r}; known: {', '.join(protocol_names())}"
        ) from None
    return cls(**options)


def protocol_names() -> list[str]:
    return sorted(Protocol.registered)
