"""The engine's answer written by a front door's writer and sent: whole, as one JSON body, or
streamed, each event's bytes as the writer makes them. A failure in the writer itself ends a
stream as the upstream's would, with the writer's own failure."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.responses import Response

from ..observability import ParserTrace
from ..settings import Settings
from ..upstream import ClosingResponse, UpstreamStream
from ..wire import (
    EVENT_STREAM,
    EventStream,
    PingsBetweenEvents,
    ProxyError,
    joined_when_ready,
    json_response,
    keepalive_event,
)
from .engine import Answer
from .event_writer import PIECE_CHARS
from .events import AnswerEnd, CallDelta, ContentDelta, Event, Failure, ReasoningDelta, Sent, Writer
from .stream import Events, internal_error

# Comment events keep idle intermediaries from closing the stream during a long prefill;
# clients ignore them.
KEEPALIVE_PING_SECONDS = 15
NO_KEEPALIVE = 0  # sse-starlette's interval that sends none

logger = logging.getLogger(__name__)

Finished = Callable[[], Awaitable[None]]


async def respond(
    answer: Answer,
    writer: Writer,
    settings: Settings,
    *,
    on_finished: Finished | None = None,
    media_type: str = EVENT_STREAM,
    keepalive: bool = True,
) -> Response:
    """`answer` written by `writer`, whole or streamed as the client asked. `on_finished` is
    awaited once an answer ended well, before its last bytes (or its whole body) are sent.
    A stream is sent as `media_type`, with keep-alive comments unless `keepalive` is False
    (for clients that take a comment line for data).

    >>> answer = await exchange.answered()
    >>> return await respond(answer, ChatWriter(...), settings)
    """
    if not answer.stream:
        assert isinstance(answer.events, list), "a whole answer's events are all known"
        for event in answer.events:
            writer.write(event)
        if on_finished is not None:
            await on_finished()
        return traced_json_response(writer.whole(), answer.trace)
    events = answer.events
    batches = _streamed_whole(events) if isinstance(events, list) else events
    written = written_stream(writer, batches, on_finished=on_finished)
    return traced_event_response(
        written,
        answer.trace,
        answer.upstream,
        settings,
        media_type=media_type,
        keepalive=keepalive,
    )


async def written_stream(
    writer: Writer, batches: Events, *, on_finished: Finished | None = None
) -> EventStream:
    """The bytes `writer` makes of each list of events, joined, but for those it makes in
    pieces: each piece is sent alone, and made once the one before it was taken. A failure of
    the writer (or of `on_finished`) is written as the answer's `Failure`: the stream ends as
    a failed upstream's would."""
    written: list[Sent] = []
    async with aclosing(batches):
        try:
            async for batch in batches:
                for event in batch:
                    written.append(writer.write(event))
                # An answer's end is the last event of its last list; if what is to happen
                # then fails, the end is not sent: the failure is instead.
                if on_finished is not None and isinstance(batch[-1], AnswerEnd):
                    ending = written.pop()
                    await on_finished()
                    written.append(ending)
                if len(written) == 1 and isinstance(sent := written[0], bytes):
                    written.clear()  # the common batch: one event's bytes (or none)
                    if sent:
                        yield sent
                    continue
                for data in _joined(written):
                    yield data
        except Exception as error:
            if isinstance(error, ProxyError):
                logger.warning("answer failed: %s", error.message)
            else:
                logger.exception("streaming answer failed")
                error = internal_error()
            written.append(writer.write(Failure(error)))
            for data in _joined(written):
                yield data


def _joined(written: list[Sent]) -> Iterator[bytes]:
    """What was written, taken from `written` as it is sent: the bytes written one after
    another joined, each piece alone. Pieces that fail to be made leave in `written` only
    what was not sent."""
    run: list[bytes] = []
    while written:
        sent = written.pop(0)
        if isinstance(sent, bytes):
            run.append(sent)
            continue
        if data := b"".join(run):
            yield data
        run.clear()
        yield from sent
    if data := b"".join(run):
        yield data


async def _streamed_whole(events: list[Event]) -> Events:
    """A whole answer's events as a stream's batches: one, but for a text or arguments longer
    than PIECE_CHARS, sent as deltas of that length, each in a batch of its own. Whole, a
    30 MB reply to a forced call was encoded as one delta, copied as that was framed, then
    joined with the events around it: streamed, it peaked at +150 MB."""
    batch: list[Event] = []
    for event in events:
        if not isinstance(event, ContentDelta | ReasoningDelta | CallDelta) or (
            len(event.text) <= PIECE_CHARS
        ):
            batch.append(event)
            continue
        for start in range(0, len(event.text), PIECE_CHARS):
            batch.append(replace(event, text=event.text[start : start + PIECE_CHARS]))
            yield batch
            batch = []
    if batch:
        yield batch


def traced_json_response(answer: Any, trace: ParserTrace | None) -> Response:
    if trace is not None:
        trace.client_answer(answer)
    return json_response(answer)


def traced_event_response(
    events: EventStream,
    trace: ParserTrace | None,
    upstream: UpstreamStream | None,
    settings: Settings,
    *,
    media_type: str = EVENT_STREAM,
    keepalive: bool = True,
) -> Response:
    """An event stream; `upstream`, if any, owned by the response: closed however it ends,
    even if the client left before the first event was pulled."""
    if trace is not None:
        events = trace.client_events(events)
    # At shutdown sse-starlette would end the stream at once; it gets DRAIN_TIMEOUT to finish,
    # as uvicorn gives the whole server (`timeout_graceful_shutdown`).
    response: Response = PingsBetweenEvents(
        EventSourceResponse(
            joined_when_ready(events),
            media_type=media_type,
            ping=KEEPALIVE_PING_SECONDS if keepalive else NO_KEEPALIVE,
            ping_message_factory=keepalive_event,
            sep="\n",
            shutdown_grace_period=settings.drain_timeout,
        )
    )
    if upstream is None:
        return response
    return ClosingResponse(response, upstream, send_timeout=settings.server_send_timeout)
