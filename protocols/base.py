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
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallUnfinished,
    ToolSpec,
)
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
        return parser.feed(text) + parser.finish()

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
