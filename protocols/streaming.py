"""The streaming machinery the parsers share: text blocks and their layout, held-back tag
prefixes, think blocks, off-protocol answers, and the commit policy of a call from its start
to its end: a small call is sent once decided, a large one streams, and a streamed call that
fails ends unfinished (or, unstreamed, falls back to text)."""

from __future__ import annotations

import json
import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .base import ArgumentsMode, ParserOptions, StreamParser, UnknownTools
from .coerce import coerce_by_schema
from .json_text import json_text
from .off_protocol import OffProtocolAnswer
from .parts import (
    ErrorKind,
    OnError,
    ParseError,
    Part,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
    ToolSpec,
)
from .relaxed_json import RelaxedParseBudget


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


def partial_token_start(text: str, tokens: Sequence[str]) -> int:
    """Where a suffix of `text` that could still grow into one of `tokens` begins
    (len(text) when there is none). Only that suffix has to be held back."""
    start = len(text)
    for token in tokens:
        # A partial token is shorter than the token and begins with its first character.
        index = text.find(token[0], max(0, len(text) - len(token) + 1))
        while index != -1 and index < start:
            if token.startswith(text[index:]):
                start = index
                break
            index = text.find(token[0], index + 1)
    return start


def unclosed_tag_start(text: str, window: int, start: int = 0) -> int:
    """Where the last `<` of `text[start:]` begins if no `>` follows it yet and it lies within
    the last `window` characters (a longer run is prose, not a tag); else len(text)."""
    bracket = text.rfind("<", max(start, len(text) - window))
    return bracket if bracket != -1 and ">" not in text[bracket:] else len(text)


class PartWriter:
    """Collects parts for one feed, grouping contiguous text into one text block.

    Whitespace-only text next to calls is layout (the line breaks around a call): it is held
    until text that is not whitespace follows, and dropped if a call or the end comes first.
    Clients would otherwise show it as a message of its own."""

    __slots__ = ("_block", "_blocks", "_layout", "_parts")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._block: str | None = None
        self._blocks = 0
        self._layout = ""

    def text(self, text: str) -> None:
        if not text:
            return
        if self._block is None:
            if text.isspace():
                self._layout += text
                return
            text, self._layout = self._layout + text, ""
            self._block = f"text_{self._blocks}"
            self._blocks += 1
            self._parts.append(TextStart(self._block))
        self._parts.append(TextDelta(self._block, text))

    def close_text(self) -> None:
        """End the text block; held layout is dropped (a call or the end follows)."""
        self._layout = ""
        if self._block is not None:
            self._parts.append(TextEnd(self._block))
            self._block = None

    def marker(self, part: Part) -> None:
        """A part that sits inside the text flow (think markers) without closing it; text
        held as layout before it is text after all."""
        if self._layout:
            layout, self._layout = self._layout, ""
            self._block = f"text_{self._blocks}"
            self._blocks += 1
            self._parts += [TextStart(self._block), TextDelta(self._block, layout)]
        self._parts.append(part)

    def call_part(self, part: Part) -> None:
        self.close_text()
        self._parts.append(part)

    def take(self) -> list[Part]:
        parts, self._parts = self._parts, []
        return parts


@dataclass(slots=True)
class CallContext:
    """What a call scanner needs from its parser: where parts go and how calls behave."""

    out: PartWriter
    tools: Mapping[str, ToolSpec]
    on_error: OnError
    mode: ArgumentsMode
    unknown_tools: UnknownTools
    relaxed_budget: RelaxedParseBudget
    small_call_chars: int

    def error(self, kind: ErrorKind, message: str, original: str) -> None:
        self.on_error(ParseError(kind, message, original))

    def accepts(self, name: str) -> bool:
        return name in self.tools or self.unknown_tools is UnknownTools.CALL

    def start_call(self, name: str) -> StreamedCall:
        call = StreamedCall(new_call_id(), name)
        self.out.call_part(ToolCallStart(call.id, name))
        return call

    def send_arguments(self, call: StreamedCall, fragment: str) -> None:
        if fragment:
            call.sent.append(fragment)
            self.out.call_part(ToolCallDelta(call.id, fragment))

    def complete_call(
        self,
        name: str,
        value: dict[str, Any],
        original: str,
        *,
        streamed: StreamedCall | None = None,
    ) -> None:
        """Emit a finished call. For a call already streamed, the rest of its arguments is
        sent; if the final value contradicts what was sent, the call ends unfinished (the
        client must not run arguments the model never wrote as such)."""
        arguments = dump_arguments(value)
        if self.mode is ArgumentsMode.ATOMIC:
            self.out.call_part(ToolCall(new_call_id(), name, arguments, value, original))
            return
        call = streamed or self.start_call(name)
        sent = "".join(call.sent)
        if not arguments.startswith(sent):
            self.reject_call(
                call,
                ErrorKind.ARGUMENTS_MISMATCH,
                "the call's final arguments differ from the fragments already streamed",
                original,
            )
            return
        self.send_arguments(call, arguments[len(sent) :])
        self.out.call_part(ToolCall(call.id, call.name, arguments, value, original))

    def reject_call(
        self, streamed: StreamedCall | None, kind: ErrorKind, message: str, original: str
    ) -> None:
        """A call that ended but does not parse, with the error recorded: text if none of it
        was sent yet, else an unfinished call (its arguments are left not parseable)."""
        if streamed is None:
            self.fall_back_to_text(kind, message, original)
            return
        self.error(kind, message, original)
        self.out.call_part(ToolCallUnfinished(streamed.id, streamed.name, original))

    def cut_off_call(self, streamed: StreamedCall | None, original: str) -> None:
        """The output ended inside a call: unfinished if its start was sent, else text."""
        if streamed is not None:
            self.unfinished_call(streamed, original)
        else:
            self.fall_back_to_text(
                ErrorKind.UNFINISHED_CALL, "the output ended inside a call", original
            )

    def unfinished_call(self, call: StreamedCall, original: str) -> None:
        self.reject_call(
            call, ErrorKind.UNFINISHED_CALL, "the output ended inside a started call", original
        )

    def fall_back_to_text(self, kind: ErrorKind, message: str, original: str) -> None:
        self.error(kind, message, original)
        self.out.text(original)


@dataclass(slots=True)
class StreamedCall:
    """A call whose start (and maybe some argument fragments) has been sent."""

    id: str
    name: str
    sent: list[str] = field(default_factory=list)


def dump_arguments(value: Any) -> str:
    """Arguments as OpenAI sends them: compact-enough JSON text, UTF-8 safe."""
    text = json_text(value)
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates from the model cannot travel as UTF-8
        text = json.dumps(value)
    return text


class ArgumentStream(Protocol):
    """Reads a call's body as it streams and turns its arguments into canonical JSON
    fragments that can no longer change (json_stream.JsonCallLexer for JSON bodies,
    xml_stream.XmlArgumentStream for XML ones)."""

    @property
    def healthy(self) -> bool:
        """False once the body holds something the stream cannot follow: nothing more is
        read, and the call's final parse decides the rest."""

    @property
    def name(self) -> str | None:
        """The called tool's name once the arguments have begun, else None."""

    def feed(self, text: str) -> list[str]:
        """The fragments `text` makes final."""


class ArgumentSender:
    """The one way a scanner's call reaches the client while it streams. A call is held
    until its arguments reach `ParserOptions.small_call_chars`: a smaller call is decided
    when it ends, exactly as a whole text is (see CallContext.complete_call). A larger one
    starts once its tool's name is known and accepted (incremental mode only), then its
    fragments follow. After `stop()` nothing more is sent; the call's end decides the rest."""

    __slots__ = ("_ctx", "_held", "_held_chars", "call", "sending")

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self.call: StreamedCall | None = None
        self.sending = ctx.mode is ArgumentsMode.INCREMENTAL
        self._held: list[str] = []
        self._held_chars = 0

    def feed(self, stream: ArgumentStream, text: str) -> None:
        """Read `text` of the call's body with `stream` and send what it makes final."""
        if stream.healthy:
            fragments = stream.feed(text)
            self.send(stream.name, "".join(fragments))

    def send(self, name: str | None, fragment: str) -> None:
        if not self.sending or not name:
            return
        if self.call is None:
            if not self._ctx.accepts(name):
                return
            self._held.append(fragment)
            self._held_chars += len(fragment)
            if self._held_chars < self._ctx.small_call_chars:
                return
            self.call = self._ctx.start_call(name)
            fragment, self._held = "".join(self._held), []
        self._ctx.send_arguments(self.call, fragment)

    def stop(self) -> None:
        self.sending = False


class CallScanner(ABC):
    """One call in progress: absorbs the text after its open tag until the call ends."""

    @abstractmethod
    def consume(self, text: str) -> str | None:
        """Absorb `text`; return what follows the call's end, or None if it goes on."""

    @abstractmethod
    def finish(self) -> None:
        """The output ended inside the call: emit it as a call, unfinished call or text."""


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class TagStreamParser(StreamParser):
    """The loop every tag protocol shares: text outside calls flows out at once (holding back
    only a suffix that could still become an open tag), `<think>` blocks are never parsed
    for calls, and each call is handed to the protocol's CallScanner.

    Each feed touches only the new text plus a held-back suffix no longer than an open
    tag, so the whole stream is linear in its length."""

    # The characters a think tag, a call open tag or a held-back suffix begins with
    # (protocols add theirs): text holding none of them is text, in a think block or out.
    _tag_chars: frozenset[str] = frozenset("<")

    def __init__(self, tools: Sequence[ToolSpec], options: ParserOptions) -> None:
        self._ctx = CallContext(
            out=PartWriter(),
            tools={tool.name: tool for tool in tools},
            on_error=options.on_error or _ignore_error,
            mode=options.mode,
            unknown_tools=options.unknown_tools,
            relaxed_budget=RelaxedParseBudget(options.relaxed_parse_budget_chars),
            small_call_chars=options.small_call_chars,
        )
        self._pending = ""
        self._call: CallScanner | None = None
        self._in_think = False
        # Inside a think block from a call open tag on: how much of `_pending` has been
        # searched for `</think>` (None while no call tag is held).
        self._held_think_call: int | None = None
        # The answer's start while it may still be call objects written off the protocol.
        self._answer = (
            OffProtocolAnswer(self._ctx.tools, self._opens_call)
            if options.off_protocol_calls
            else None
        )

    @abstractmethod
    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        """The earliest complete call open tag in `text`: (start, end, tool name)."""

    @abstractmethod
    def _partial_open_start(self, text: str) -> int:
        """Where a suffix that could still become a call open tag begins, else len(text)."""

    @abstractmethod
    def _open_call(self, open_tag: str, name: str) -> CallScanner | None:
        """A scanner for the call this tag opens; None when the tag alone was the call."""

    def feed(self, text: str) -> list[Part]:
        if self._answer is not None:
            if self._answer.feed(text):
                return self._ctx.out.take()
            text, self._answer = self._answer.text, None  # not off-protocol calls: read it
        self._pending += text
        self._advance()
        return self._ctx.out.take()

    def finish(self) -> list[Part]:
        out = self._ctx.out
        if self._answer is not None:
            answer, self._answer = self._answer, None
            calls = answer.calls(self._ctx.relaxed_budget)
            if calls is not None:
                self._emit_off_protocol_calls(calls, answer.text)
                return out.take()
            self._pending += answer.text
            self._advance()
        if self._in_think and self._held_think_call is not None:
            # The output ended in a think block holding a call: the model forgot `</think>`.
            out.marker(ThinkEnd(""))
            self._in_think = False
            self._held_think_call = None
            self._advance()
        if self._call is not None:
            self._call.finish()
            self._call = None
        out.text(self._pending)
        self._pending = ""
        if self._in_think:
            out.marker(ThinkEnd(""))
            self._in_think = False
        out.close_text()
        return out.take()

    def _emit_off_protocol_calls(
        self, calls: list[tuple[str, dict[str, Any]]], original: str
    ) -> None:
        ctx = self._ctx
        for index, (name, arguments) in enumerate(calls):
            value = coerce_by_schema(arguments, ctx.tools[name].parameters)
            # The whole answer is the first call's original text, so nothing is counted twice.
            ctx.complete_call(name, value, original if index == 0 else "")

    def _opens_call(self, text: str) -> bool:
        found = self._find_open(text)
        return found is not None and found[0] == 0

    def _advance(self) -> None:
        while self._pending:
            if self._call is not None:
                rest = self._call.consume(self._pending)
                if rest is None:
                    self._pending = ""
                    return
                self._call = None
                self._pending = rest
            elif self._tag_chars.isdisjoint(self._pending):
                # All that is held back (a partial tag, a call tag in a think block) begins
                # with a tag character, so this is text: the common prose delta's one scan.
                self._ctx.out.text(self._pending)
                self._pending = ""
            elif self._in_think:
                if not self._advance_in_think():
                    return
            elif not self._advance_outside():
                return

    def _advance_in_think(self) -> bool:
        """Emit think text up to `</think>`; False when more text is needed. A call open tag
        inside the block holds the rest until `</think>` (then it was text) or the end of the
        output (then it is a call)."""
        out, text = self._ctx.out, self._pending
        scan_from = max(0, (self._held_think_call or 0) - len(THINK_CLOSE) + 1)
        end = text.find(THINK_CLOSE, scan_from)
        if self._held_think_call is None:
            call = self._find_open(text[: end if end != -1 else len(text)])
            if call is not None:
                out.text(text[: call[0]])
                self._pending = text = text[call[0] :]
                end = text.find(THINK_CLOSE)
                self._held_think_call = 0
        if end == -1:
            if self._held_think_call is not None:
                self._held_think_call = len(text)
                return False
            safe = min(partial_token_start(text, (THINK_CLOSE,)), self._partial_open_start(text))
            out.text(text[:safe])
            self._pending = text[safe:]
            return False
        out.text(text[:end])
        out.marker(ThinkEnd(THINK_CLOSE))
        self._in_think = False
        self._held_think_call = None
        self._pending = text[end + len(THINK_CLOSE) :]
        return True

    def _advance_outside(self) -> bool:
        """Emit text up to the next think or call open tag; False when more text is needed."""
        out, text = self._ctx.out, self._pending
        call = self._find_open(text)
        think = text.find(THINK_OPEN, 0, call[0] if call else len(text))
        if think != -1:
            out.text(text[:think])
            out.marker(ThinkStart(THINK_OPEN))
            self._in_think = True
            self._pending = text[think + len(THINK_OPEN) :]
            return True
        if call is not None:
            start, end, name = call
            out.text(text[:start])
            self._call = self._open_call(text[start:end], name)
            self._pending = text[end:]
            return True
        safe = min(self._partial_open_start(text), partial_token_start(text, (THINK_OPEN,)))
        out.text(text[:safe])
        self._pending = text[safe:]
        return False


def _ignore_error(error: ParseError) -> None:
    pass
