"""How one request's model output is parsed: its protocol, its tools and the deployment's
parser options (one `ParserOptions`, built once from the settings), handing out fresh
parsers and delta mappers per choice (traced when DEBUG_PARSER_MW is on). With no tools
offered no call is read: the text passes as written (but for its think blocks, read apart
when THINK_AS_REASONING is on), through the same checks and the same mapping to deltas."""

from __future__ import annotations

from dataclasses import dataclass, replace

from protocols import (
    ArgumentsMode,
    ParserOptions,
    Part,
    Protocol,
    StreamParser,
    TextDelta,
    ThinkBlocks,
    ToolSpec,
)

from ..observability import CompletionObserver, ParserTrace, parse_traced
from .call_check import CallCheck, CheckedParser
from .deltas import DeltaMapper


class TextAsWritten(StreamParser):
    """The parser of an answer offered no tools: it can call none, so all of it is text."""

    TEXT_ID = "text"

    def feed(self, text: str) -> list[Part]:
        return [TextDelta(self.TEXT_ID, text)] if text else []

    def finish(self) -> list[Part]:
        return []


@dataclass(frozen=True, slots=True)
class OutputParsing:
    """Everything needed to turn one request's model text into the engine's deltas.

    >>> parser, mapper = parsing.stream_parser(), parsing.mapper()
    >>> deltas = mapper.deltas(parser.feed("Hi <tool_call>"))
    """

    protocol: Protocol
    tools: tuple[ToolSpec, ...]
    options: ParserOptions
    think_as_reasoning: bool
    single_call: bool
    observer: CompletionObserver
    trace: ParserTrace | None = None
    # The upstream calls tools itself: its own calls are relayed, and calls left in its text
    # are rescued, each parsed whole and sent after the upstream's own when the choice ends.
    native: bool = False
    # Each call held to its tool's schema; a streamed one's failure recorded as it ends.
    check: CallCheck | None = None

    @classmethod
    def configured(
        cls,
        options: ParserOptions,
        protocol: Protocol,
        tools: tuple[ToolSpec, ...],
        *,
        think_as_reasoning: bool,
        single_call: bool,
        observer: CompletionObserver,
        trace: ParserTrace | None = None,
        native: bool = False,
        check: CallCheck | None = None,
    ) -> OutputParsing:
        """The deployment's parser options applied to one request's protocol and tools."""
        return cls(
            protocol=protocol,
            tools=tools,
            # A rescued call is sent whole after the upstream's own: nothing to stream early.
            options=replace(options, mode=ArgumentsMode.ATOMIC) if native else options,
            think_as_reasoning=think_as_reasoning,
            single_call=single_call,
            observer=observer,
            trace=trace,
            native=native,
            check=check,
        )

    def stream_parser(self) -> StreamParser:
        if not self.tools:
            parser = self._untooled_parser()
        else:
            parser = self.protocol.stream_parser(
                self.tools, options=self.options, on_error=self.observer.parse_error
            )
            if self.check is not None:
                parser = CheckedParser(
                    parser, self.check, self.observer, single_call=self.single_call
                )
        return parser if self.trace is None else self.trace.stream_parser(parser)

    def parse_whole(self, text: str) -> list[Part]:
        """A complete text at once: atomic, so a call cut short stays text."""

        def parse() -> list[Part]:
            if not self.tools:
                parser = self._untooled_parser()
                return parser.feed(text) + parser.finish()
            return self.protocol.parse(
                text, self.tools, options=self.options, on_error=self.observer.parse_error
            )

        return parse_traced(self.trace, text, parse)

    def _untooled_parser(self) -> StreamParser:
        """The parser of an answer offered no tools: it can call none, yet its think blocks
        are reasoning all the same when they are wanted apart."""
        return ThinkBlocks() if self.think_as_reasoning else TextAsWritten()

    def mapper(self, choice: int = 0) -> DeltaMapper:
        return DeltaMapper(
            choice=choice,
            think_as_reasoning=self.think_as_reasoning,
            single_call=self.single_call,
            tools=self.tools,
            native=self.native,
            on_call=self.observer.tool_call,
            on_dropped_call=self.observer.dropped_call,
            on_rescued_call=self.observer.rescued_call,
            on_repeated_call=self.observer.repeated_call,
        )
