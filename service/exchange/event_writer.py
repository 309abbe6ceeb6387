"""A writer for an API that answers one choice and streams it as named JSON events (the
Responses API, Anthropic's Messages API): its subclass says what the API makes of each step
of the answer, as event objects; they are encoded only for a stream, at the socket, while the
whole answer grows in the writer either way."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from ..wire import json_bytes
from .events import (
    AnswerEnd,
    AnswerStart,
    CallDelta,
    CallStart,
    ChoiceEnd,
    ContentDelta,
    Event,
    Failure,
    ReasoningDelta,
)

ApiEvent = dict[str, Any]  # one event of the writer's own API, with its `type`


def named_event(event: ApiEvent) -> bytes:
    """One server-sent event named by its type, as OpenAI's Responses and Anthropic's Messages
    streams send them: `event: <type>` and the event as `data`."""
    return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json_bytes(event))


class EventWriter(ABC):
    """The steps of one answer, each returning the API's events for it; a choice's end is
    held until the answer's, where its usage comes.

    >>> class Plain(EventWriter):
    ...     def content_delta(self, text): return [{"type": "text", "text": text}]
    ...     ...
    >>> Plain(stream=True).write(ContentDelta("Hi"))
    b'event: text\\ndata: {"type":"text","text":"Hi"}\\n\\n'
    """

    def __init__(self, *, stream: bool) -> None:
        self._stream = stream
        self._finish_reason: str | None = None
        self._matched_stop: str | None = None

    def write(self, event: Event) -> bytes:
        events = self._events(event)
        if not self._stream or not events:
            return b""
        return b"".join([named_event(each) for each in events])

    def _events(self, event: Event) -> list[ApiEvent]:
        # A delta with no text adds nothing: no event says so.
        if isinstance(event, ContentDelta):  # the commonest first
            return self.content_delta(event.text) if event.text else []
        if isinstance(event, CallDelta):
            return self.call_delta(event.index, event.text) if event.text else []
        if isinstance(event, ReasoningDelta):
            return self.reasoning_delta(event.text) if event.text else []
        if isinstance(event, CallStart):
            return self.call_start(event)
        if isinstance(event, AnswerStart):
            return self.start()
        if isinstance(event, ChoiceEnd):
            self._finish_reason, self._matched_stop = event.finish_reason, event.matched_stop
            return []
        if isinstance(event, AnswerEnd):
            return self.finish(self._finish_reason, event.usage, self._matched_stop)
        if isinstance(event, Failure):
            return self.fail(event.error.body()["error"])
        return []  # a choice's start: the answer's start said all there is

    @abstractmethod
    def whole(self) -> Any: ...

    @abstractmethod
    def start(self) -> list[ApiEvent]: ...

    @abstractmethod
    def reasoning_delta(self, text: str) -> list[ApiEvent]: ...

    @abstractmethod
    def content_delta(self, text: str) -> list[ApiEvent]: ...

    @abstractmethod
    def call_start(self, call: CallStart) -> list[ApiEvent]: ...

    @abstractmethod
    def call_delta(self, index: int, text: str) -> list[ApiEvent]:
        """More of call `index`'s arguments."""

    @abstractmethod
    def finish(
        self, finish_reason: str | None, usage: Mapping[str, Any] | None, matched_stop: str | None
    ) -> list[ApiEvent]:
        """`finish_reason`: None for an answer that had no choice."""

    @abstractmethod
    def fail(self, error: dict[str, Any]) -> list[ApiEvent]:
        """`error`: the fields of an OpenAI error body's `error` (message, type, code)."""
