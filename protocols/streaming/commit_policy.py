"""How a call reaches the client, from its start to its end (the commit policy): a small
call is sent once decided, exactly as in a whole text; a large one streams its arguments as
they become final; a streamed call that then fails ends unfinished, and one not yet streamed
falls back to text. `CallContext` is what a protocol's call scanner works through."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..base import ArgumentsMode, UnknownTools
from ..lenient.coerce import coerce_by_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_json import (
    STREAMED_CALL_CREDIT_CHARS,
    RelaxedJSONError,
    RelaxedParseBudget,
)
from ..lenient.tool_names import DeclaredTools
from ..parts import (
    ErrorKind,
    OnError,
    ParseError,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
)
from .part_writer import PartWriter


def new_call_id() -> str:
    return "call_" + os.urandom(12).hex()  # what secrets.token_hex does, less two calls


@dataclass(slots=True)
class CallContext:
    """What a call scanner needs from its parser: where parts go and how calls behave."""

    out: PartWriter
    tools: DeclaredTools  # found by the names as the model writes them, too
    on_error: OnError
    mode: ArgumentsMode
    unknown_tools: UnknownTools
    relaxed_budget: RelaxedParseBudget
    small_call_chars: int

    def with_unknown_tools(self, unknown_tools: UnknownTools) -> CallContext:
        """This context (the same writer and budget) with calls to undeclared tools handled
        as `unknown_tools` says."""
        return CallContext(
            self.out,
            self.tools,
            self.on_error,
            self.mode,
            unknown_tools,
            self.relaxed_budget,
            self.small_call_chars,
        )

    def error(self, kind: ErrorKind, message: str, original: str) -> None:
        self.on_error(ParseError(kind, message, original))

    def accepts(self, name: str) -> bool:
        return name in self.tools or self.unknown_tools is UnknownTools.CALL

    def start_call(self, name: str) -> StreamedCall:
        call = StreamedCall(new_call_id(), self.tools.declared_name(name) or name)
        self.out.call_part(ToolCallStart(call.id, call.name))
        return call

    def send_arguments(self, call: StreamedCall, fragment: str) -> None:
        if fragment:
            call.sent.append(fragment)
            self.out.call_part(ToolCallDelta(call.id, fragment))

    def complete_calls(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        original: str,
        *,
        streamed: StreamedCall | None = None,
    ) -> None:
        """Emit the calls one stretch of output held, each coerced by its tool's schema (an
        undeclared tool's as written). The stretch is the first call's original text, so
        nothing is counted twice; only the first call can have been streamed. The calls
        after the first are charged to the budget (the first was, with its open tag): past
        it the stretch is text, unless its first call was streamed."""
        if len(calls) > 1:
            try:
                self.relaxed_budget.spend_calls(len(calls) - 1)
            except RelaxedJSONError as error:
                if streamed is None:
                    self.fall_back_to_text(ErrorKind.PARSE_BUDGET, str(error), original)
                    return
        for index, (name, arguments) in enumerate(calls):
            tool = self.tools.get(name)
            self.complete_call(
                name,
                coerce_by_schema(arguments, tool.parameters, self.relaxed_budget)
                if tool
                else arguments,
                original if index == 0 else "",
                streamed=streamed if index == 0 else None,
            )

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
        client must not run arguments the model never wrote as such). A tool named in
        another spelling of a declared name is called by the declared name, and the error
        record says so."""
        declared = self.tools.declared_name(name)
        if declared is not None and declared != name:
            self.error(
                ErrorKind.TOOL_NAME_SPELLING,
                f"tool {name!r} is not declared: called {declared!r}, which it spells",
                original,
            )
            name = declared
        arguments = dump_arguments(value)
        if streamed is None:
            self.out.whole_call(ToolCall(new_call_id(), name, arguments, value, original))
            return
        self.relaxed_budget.credit = 0
        call = streamed
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
        self.relaxed_budget.credit = 0
        self.error(kind, message, original)
        self.out.call_part(ToolCallUnfinished(streamed.id, streamed.name, original))

    def cut_off_call(self, streamed: StreamedCall | None, original: str) -> None:
        """The output ended inside a call: unfinished if its start was sent, else text."""
        self.reject_call(
            streamed, ErrorKind.UNFINISHED_CALL, "the output ended inside a call", original
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


# The most characters of canonical JSON arguments one character of a call's body can become
# (a raw control character is written `\u0001`; `1E15` is 1000000000000000.0): a body under
# small_call_chars over this cannot hold arguments enough to be sent before the call ends.
MAX_ARGUMENT_CHARS_PER_BODY_CHAR = 6


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
    fragments follow. After `stop()` nothing more is sent; the call's end decides the rest.

    The arguments stream is fed only once the body may hold arguments enough to be sent
    (or a scanner asks it where it stands, `follow`): till then its work would be thrown
    away with the held fragments, and following a small call cost a third of reading it."""

    __slots__ = ("_ctx", "_held", "_held_chars", "_unread", "_unread_chars", "call", "sending")

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self.call: StreamedCall | None = None
        self.sending = ctx.mode is ArgumentsMode.INCREMENTAL
        self._held: list[str] = []
        self._held_chars = 0
        # The body the stream has not been fed yet (None once it follows the body).
        self._unread: list[str] | None = []
        self._unread_chars = 0

    @property
    def following(self) -> bool:
        """Whether the stream has been fed the whole body so far."""
        return self._unread is None

    def feed(self, stream: ArgumentStream, text: str) -> None:
        """Read `text` of the call's body with `stream` and send what it makes final."""
        unread = self._unread
        if unread is not None:
            unread.append(text)
            self._unread_chars += len(text)
            if self.sending and (
                self._unread_chars * MAX_ARGUMENT_CHARS_PER_BODY_CHAR >= self._ctx.small_call_chars
            ):
                self.follow(stream)
            return
        if stream.healthy:
            fragments = stream.feed(text)
            self.send(stream.name, "".join(fragments))

    def follow(self, stream: ArgumentStream) -> None:
        """Feed `stream` the body so far, and from now on each piece as it comes."""
        if self._unread is not None:
            text, self._unread = "".join(self._unread), None
            self.feed(stream, text)

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
            # It may finish on credit once the budget runs out: see STREAMED_CALL_CREDIT_CHARS.
            self._ctx.relaxed_budget.credit = STREAMED_CALL_CREDIT_CHARS
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
