"""The engine's answer as typed events, and the `Writer` that a front door writes them with.

An answer's events come in this order: one `AnswerStart`; for each choice a `ChoiceStart`,
its deltas (`ReasoningDelta`, `ContentDelta`, `CallStart`, `CallDelta`) and one `ChoiceEnd`;
then one `AnswerEnd`. A failure can cut that short anywhere after the `AnswerStart`: a
`Failure` is then the last event (a whole answer never fails: its failure is the HTTP error
it is answered with). A call's `CallStart` comes before its `CallDelta`s; calls
are numbered densely from 0 per choice, in the order they start. A whole (non-streamed)
answer has the same events, at once, and each choice's deltas in the order its message is
read: reasoning, content, then each call.

Events are built per upstream chunk: slotted, and frozen so that no writer changes what
another reads, but for the deltas made for every chunk (a frozen dataclass's __init__ costs
an `object.__setattr__` call per field): no writer assigns to an event."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..wire import ProxyError

# What a writer sends for one event: its bytes, or for events too large to hold encoded at
# once (a Responses stream's last events carry its whole answer), their bytes in pieces, each
# made once the one before it was taken.
Sent = bytes | Iterator[bytes]
# A call to a function (its arguments a JSON text), or to a free-form tool (its input text).
CallKind = Literal["function", "custom"]


@dataclass(frozen=True, slots=True)
class AnswerStart:
    """The upstream began to answer. `upstream`: its first chunk, or its whole answer: the
    envelope a front door may copy (`id`, `created`, `model`, `system_fingerprint`) and, for
    a whole answer, every other field of the upstream's completion; {} when the upstream
    failed before it said anything."""

    upstream: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChoiceStart:
    """A choice's first event (the upstream sent its first chunk for it)."""

    choice: int = 0


@dataclass(slots=True)
class ReasoningDelta:
    """More of the model's reasoning: the upstream's own, or a think block's when the
    deployment reads those as reasoning."""

    text: str
    choice: int = 0


@dataclass(slots=True)
class ContentDelta:
    """More of the answer's text, with the calls taken out."""

    text: str
    choice: int = 0


@dataclass(frozen=True, slots=True)
class CallStart:
    """A tool call begins: its number in the choice, its id (`call_...`), the declared tool
    it calls and that tool's kind. Its arguments follow in `CallDelta`s."""

    index: int
    call_id: str
    name: str
    kind: CallKind = "function"
    choice: int = 0


@dataclass(slots=True)
class CallDelta:
    """More of call `index`'s arguments: a fragment of their JSON text (a free-form call's,
    of its input text). Joined, a call's fragments are its whole arguments."""

    index: int
    text: str
    choice: int = 0


@dataclass(frozen=True, slots=True)
class ChoiceEnd:
    """A choice is done. `finish_reason`: chat's (`stop`, `length`, `tool_calls`,
    `content_filter`...); `matched_stop`: the stop sequence that ended a `stop`, when the
    upstream says; `upstream`: a whole answer's own choice, for a front door that passes on
    its other fields (None when streamed)."""

    finish_reason: str
    matched_stop: str | None = None
    choice: int = 0
    upstream: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AnswerEnd:
    """The answer is whole. `usage`: the upstream's token counts in chat's names
    (`prompt_tokens`, `completion_tokens`, `total_tokens`, their details), if it sent them."""

    usage: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """The answer failed after it began (the upstream broke off, sent a malformed chunk or an
    error, or the proxy failed): no event follows. `error.body()` is its OpenAI error body,
    the upstream's own when the upstream sent one."""

    error: ProxyError


Delta = ReasoningDelta | ContentDelta | CallStart | CallDelta
Event = AnswerStart | ChoiceStart | Delta | ChoiceEnd | AnswerEnd | Failure


class Writer(Protocol):
    """A front door's answer, written from the engine's events in the order they come. A
    writer is made for one answer, streamed or whole; the engine drives it
    (`exchange.respond`), and only what it returns is sent."""

    def write(self, event: Event) -> Sent:
        """What a streamed answer sends for `event`, as it goes on the socket (b"" for
        nothing; always b"" for a whole answer, which grows in the writer instead)."""
        ...

    def whole(self) -> Any:
        """The whole answer as a JSON value, once every event is written (only for an
        answer that is not streamed)."""
        ...
