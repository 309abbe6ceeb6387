"""How one request's model output is parsed: its protocol, its tools and the deployment's
parser options, handing out fresh parsers and delta mappers per choice."""

from __future__ import annotations

from dataclasses import dataclass

from protocols import ArgumentsMode, Part, Protocol, StreamParser, ToolSpec, UnknownTools

from .chunks import DeltaMapper
from .observer import CompletionObserver


@dataclass(frozen=True, slots=True)
class OutputParsing:
    """Everything needed to turn one request's model text into OpenAI deltas.

    >>> parser, mapper = parsing.stream_parser(), parsing.mapper()
    >>> deltas = mapper.deltas(parser.feed("Hi <tool_call>"))
    """

    protocol: Protocol
    tools: tuple[ToolSpec, ...]
    arguments_mode: ArgumentsMode
    unknown_tools: UnknownTools
    think_as_reasoning: bool
    single_call: bool
    observer: CompletionObserver

    def stream_parser(self) -> StreamParser:
        return self.protocol.stream_parser(
            self.tools,
            on_error=self.observer.parse_error,
            mode=self.arguments_mode,
            unknown_tools=self.unknown_tools,
        )

    def parse_whole(self, text: str) -> list[Part]:
        """A complete text at once: atomic, so a call cut short stays text."""
        return self.protocol.parse(
            text, self.tools, on_error=self.observer.parse_error, unknown_tools=self.unknown_tools
        )

    def mapper(self) -> DeltaMapper:
        return DeltaMapper(
            think_as_reasoning=self.think_as_reasoning,
            single_call=self.single_call,
            on_dropped_call=self.observer.dropped_call,
        )
