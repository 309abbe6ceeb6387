"""A writer for an API that answers one choice and streams it as named JSON events (the
Responses API, Anthropic's Messages API): its subclass says what the API makes of each step
of the answer, as event objects; they are encoded only for a stream, at the socket, while the
whole answer grows in the writer either way. The events a stream sends most, its text deltas,
are encoded once but for their text (`EventTemplate`), as chat's chunks are."""

from __future__ import annotations

import io
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

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
    Sent,
)

ApiEvent = dict[str, Any]  # one event of the writer's own API, with its `type`
Written = ApiEvent | bytes  # an event, or one already encoded as `named_event` would
# Where an `EventTemplate`'s event holds its text and its sequence number: strings that JSON
# writes as they are, and no event holds.
TEXT, SEQUENCE = "\ue000text", "\ue000sequence"
# A string longer than this is encoded a slice of this many characters at a time, each slice
# sent before the next is made: the last events of a Responses stream each hold its whole
# text, and 60 MiB of it encoded four times over, then joined, peaked at +632 MB.
PIECE_CHARS = 1 << 16


def named_event(event: ApiEvent) -> bytes:
    """One server-sent event named by its type, as OpenAI's Responses and Anthropic's Messages
    streams send them: `event: <type>` and the event as `data`."""
    return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json_bytes(event))


def named_event_pieces(event: ApiEvent) -> Iterator[bytes]:
    """The bytes of `named_event(event)` in pieces: each string longer than PIECE_CHARS is
    encoded a slice at a time (JSON escapes characters one by one, so the slices' encodings
    make up the string's). No piece but the event's own frame ends as an event does."""
    long_strings: list[str] = []
    mark = f"\ue000{uuid.uuid4().hex}"  # no string of the event holds it
    framed = named_event(_marked(event, mark, long_strings))
    for number, text in enumerate(long_strings):
        before, framed = framed.split(json_bytes(f"{mark}{number}"), 1)
        yield before + b'"'
        for start in range(0, len(text), PIECE_CHARS):
            yield json_bytes(text[start : start + PIECE_CHARS])[1:-1]
        framed = b'"' + framed
    yield framed


def _marked(value: Any, mark: str, long_strings: list[str]) -> Any:
    """`value` with each string longer than PIECE_CHARS in `long_strings` and in its place
    `mark` and its number there."""
    if isinstance(value, str) and len(value) > PIECE_CHARS:
        long_strings.append(value)
        return f"{mark}{len(long_strings) - 1}"
    if isinstance(value, dict):
        return {key: _marked(item, mark, long_strings) for key, item in value.items()}
    if isinstance(value, list):
        return [_marked(item, mark, long_strings) for item in value]
    return value


class EventTemplate:
    """An event encoded once but for its text (`TEXT` in the event it is made from) and, if
    it has one, its sequence number (`SEQUENCE`): each event made from it costs one encoding
    of its text, and the same bytes `named_event` writes.

    >>> template = EventTemplate({"type": "delta", "sequence_number": SEQUENCE, "text": TEXT})
    >>> template.encoded("Hi", 7)
    b'event: delta\\ndata: {"type":"delta","sequence_number":7,"text":"Hi"}\\n\\n'
    """

    __slots__ = ("_after", "_before", "_between")

    def __init__(self, event: ApiEvent) -> None:
        encoded = named_event(event)
        head, self._after = encoded.split(json_bytes(TEXT))
        self._before, _, self._between = head.rpartition(json_bytes(SEQUENCE))

    def encoded(self, text: str, sequence: int = 0) -> bytes:
        if not self._before:  # no sequence number
            return self._between + json_bytes(text) + self._after
        return b"".join(
            (self._before, b"%d" % sequence, self._between, json_bytes(text), self._after)
        )


def _in_pieces(events: list[Written]) -> Iterator[bytes]:
    for event in events:
        if isinstance(event, bytes):
            yield event
        else:
            yield from named_event_pieces(event)


Continuing = ContentDelta | ReasoningDelta | CallDelta  # the deltas that continue an open item


class TextSink(Protocol):
    """Where an open item's text goes (`HeldText` keeps it, `Counted` counts it)."""

    chars: int  # written to it so far

    def write(self, text: str, /) -> int: ...


class HeldText:
    """A sink that keeps the text written to it and gives it back as one string, never
    holding it twice: `io.StringIO.getvalue` copies all of it, and the end of 60 MiB of
    text streamed took 60 MiB more. A StringIO takes a model's fragments of a few characters
    (a list of them would cost some 60 bytes each beside their text); each CHUNK_CHARS of
    them are added to one string, which CPython grows where it lies while nothing else
    refers to it (kept in pieces and joined, the pieces' freed room stayed with the process).

    >>> held = HeldText()
    >>> held.write("Hi "), held.write("there")
    >>> held.value()
    'Hi there'
    """

    CHUNK_CHARS = 64 * 1024
    __slots__ = ("_fragments", "_text", "chars")

    def __init__(self) -> None:
        self._text = ""  # all but the text after its last chunk
        self._fragments = io.StringIO()  # that text
        self.chars = 0  # written in all

    def write(self, text: str, /) -> int:
        self.chars += len(text)
        if len(text) >= self.CHUNK_CHARS and not self._fragments.tell():
            self._add(text)  # a whole answer's text, or most of it: never copied
        elif self._fragments.write(text) and self._fragments.tell() >= self.CHUNK_CHARS:
            self._add(self._fragments.getvalue())
            self._fragments = io.StringIO()
        return len(text)

    def value(self) -> str:
        """All the text written so far, as one string."""
        if self._fragments.tell():
            self._add(self._fragments.getvalue())
            self._fragments = io.StringIO()
        return self._text

    def _add(self, chunk: str) -> None:
        text, self._text = self._text, ""
        text += chunk  # `text` is referred to from here alone: grown in place
        self._text = text


class Counted:
    """A sink that keeps only how much text went to it: an item of a stream no one needs
    whole (a Messages stream held every delta, 200 MB of text took +210 MB)."""

    __slots__ = ("chars",)

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str, /) -> int:
        self.chars += len(text)
        return len(text)


class EventWriter(ABC):
    """The steps of one answer, each returning the API's events for it. The text of the item
    (or block) that is open goes to it directly, each delta sent from its template: a step
    opens an item with `open_text`, and a delta reaches the subclass only when nothing it
    adds to is open. A choice's end is held until the answer's, where its usage comes.

    >>> writer = ResponseWriter(body, model="m", stream=True)  # a subclass
    >>> writer.write(ContentDelta("Hi"))  # content_delta opens a message: its events, a delta
    >>> writer.write(ContentDelta(" there"))  # the open message's delta event alone
    """

    def __init__(self, *, stream: bool) -> None:
        self._stream = stream
        self.sequence = 0  # the next event's number, for an API that numbers its events
        self._finish_reason: str | None = None
        self._matched_stop: str | None = None
        self._adding: type[Continuing] | None = None  # the deltas that add to the open item
        self._adding_call = -1  # for a call: its index
        self._held: TextSink = HeldText()  # where their text goes
        self._delta_event: EventTemplate | None = None  # and how each is sent
        self._writing: Event = AnswerStart({})  # the event being written
        self._longest_text = 0  # of the items' texts before the open one

    def write(self, event: Event) -> Sent:
        if type(event) is self._adding and (self._adding_call < 0 or self._adds(event)):
            return self._more(event)  # the commonest: more of the open item's text
        self._writing = event
        events = self._events(event)
        if isinstance(event, Continuing) and self._adds(event):
            events.append(self._more(event))  # the item it opened
        if not self._stream or not events:
            return b""
        if max(self._longest_text, self._held.chars) > PIECE_CHARS:
            return _in_pieces(events)  # an event may hold a text too long to copy
        return b"".join([e if isinstance(e, bytes) else named_event(e) for e in events])

    def open_text(self, held: TextSink, event: EventTemplate | None) -> None:
        """The item just opened for the event being written takes what continues it (more
        text of its kind; after a call's start, the call's arguments): their text written to
        `held`, each sent as `event` (None: not sent)."""
        opened_by = self._writing
        if isinstance(opened_by, CallStart):
            self._adding, self._adding_call = CallDelta, opened_by.index
        else:
            assert isinstance(opened_by, ContentDelta | ReasoningDelta)
            self._adding, self._adding_call = type(opened_by), -1
        self._longest_text = max(self._longest_text, self._held.chars)
        self._held, self._delta_event = held, event

    def close_text(self) -> None:
        """No item is open any more."""
        self._adding = None

    def _adds(self, event: Event) -> bool:
        return type(event) is self._adding and (
            not isinstance(event, CallDelta) or event.index == self._adding_call
        )

    def _more(self, delta: Event) -> bytes:
        """More of the open item's text, and its delta event."""
        assert isinstance(delta, Continuing)
        text = delta.text
        self._held.write(text)
        if not self._stream or self._delta_event is None or not text:
            return b""
        encoded = self._delta_event.encoded(text, self.sequence)
        self.sequence += 1
        return encoded

    def _events(self, event: Event) -> list[Written]:
        # A delta with no text adds nothing: no event says so.
        if isinstance(event, ContentDelta):
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
    def start(self) -> list[Written]: ...

    @abstractmethod
    def reasoning_delta(self, text: str) -> list[Written]:
        """Reasoning with no item open for it: the events that open one (`open_text`), or
        none when the API leaves reasoning out."""

    @abstractmethod
    def content_delta(self, text: str) -> list[Written]:
        """Text with no item open for it: the events that open one (`open_text`)."""

    @abstractmethod
    def call_start(self, call: CallStart) -> list[Written]:
        """The events that open the call's item (`open_text`)."""

    @abstractmethod
    def call_delta(self, index: int, text: str) -> list[Written]:
        """More arguments of call `index` while another item is open (no model's output
        interleaves calls, but nothing is lost if one did)."""

    @abstractmethod
    def finish(
        self, finish_reason: str | None, usage: Mapping[str, Any] | None, matched_stop: str | None
    ) -> list[Written]:
        """`finish_reason`: None for an answer that had no choice."""

    @abstractmethod
    def fail(self, error: dict[str, Any]) -> list[Written]:
        """`error`: the fields of an OpenAI error body's `error` (message, type, code)."""
