"""A streamed answer: upstream SSE chunks in, their text through the parser, the engine's
events out, a list of them per upstream chunk (the caller owns and closes the upstream
stream). An answer that ends before the model's output does (one call allowed and made,
calls repeated past the bound, a result the model invents for its call: `EndReason`) closes
the upstream stream there: the rest costs the model's time and would never be used."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import anyio

from ..observability import UpstreamFailure
from ..upstream import (
    REASONING_KEYS,
    UpstreamChoice,
    UpstreamStream,
    bad_chunk,
    checked_envelope,
    chunk_choices,
)
from ..wire import (
    DONE,
    JSON_MEDIA_TYPE,
    SERVER_ERROR,
    UPSTREAM_ERROR,
    ProxyError,
    UpstreamStatusError,
    json_value,
)
from .deltas import STOP, EndReason, finish_reason
from .events import (
    AnswerEnd,
    AnswerStart,
    ChoiceEnd,
    ChoiceStart,
    Event,
    Failure,
    ReasoningDelta,
)
from .parsing import OutputParsing

logger = logging.getLogger(__name__)

# How long an upstream may take to end its body after [DONE] (it normally comes in the same
# read): read to its end, the connection goes back to the pool; closed before, it is closed.
AFTER_DONE_READ_SECONDS = 0.05

Events = AsyncGenerator[list[Event], None]  # the events of each upstream chunk, in turn


def internal_error() -> ProxyError:
    """The proxy's own failure, as the client is told it (nothing of what went wrong)."""
    return ProxyError(500, "internal proxy error", error_type=SERVER_ERROR)


class _ChoiceStream:
    """One choice's parser and mapper, turning its upstream deltas into events."""

    __slots__ = ("_index", "_mapper", "_parser", "ended_early", "finished")

    def __init__(self, index: int, parsing: OutputParsing) -> None:
        self._index = index
        self._parser = parsing.stream_parser()
        self._mapper = parsing.mapper(index)
        self.finished = False
        self.ended_early: str | None = None  # why it ended before the model's output did

    def end_if_ended(self, events: list[Event]) -> None:
        """Finish the choice if its answer has ended though the model's output goes on."""
        reason = self._mapper.ended
        if reason is None and self._parser.ended:
            reason = EndReason.INVENTED_RESULT
        if reason is not None and not self.finished:
            self.ended_early = reason
            self.finish(None, events)

    def delta(self, upstream: UpstreamChoice, events: list[Event]) -> None:
        upstream_delta = upstream.delta
        for key in REASONING_KEYS:
            if reasoning := upstream_delta.get(key):
                events.append(ReasoningDelta(reasoning, self._index))
                break
        if content := upstream_delta.get("content"):
            events += self._mapper.deltas(self._parser.feed(content))
        if upstream.calls:  # an upstream that calls tools itself
            events += self._mapper.native(upstream.calls)

    def finish(
        self, upstream_reason: str | None, events: list[Event], matched_stop: str | None = None
    ) -> None:
        self.finished = True
        mapper = self._mapper
        events += mapper.deltas(self._parser.finish())
        events += mapper.rescued()
        reason = finish_reason(upstream_reason, mapper)
        stop = matched_stop if reason == STOP else None  # a stop sequence ended its text
        events.append(ChoiceEnd(reason, stop, self._index))


async def stream_events(stream: UpstreamStream, parsing: OutputParsing, *, n: int) -> Events:
    """The events of the `n` choices asked for, a list per upstream chunk. A failure, once
    the answer began, is a `Failure` event, and the last; the events made before it are
    still sent."""
    choices: dict[int, _ChoiceStream] = {}
    usage = None
    payloads = chunk_payloads(stream)
    if parsing.trace is not None:
        payloads = parsing.trace.upstream_payloads(payloads)
    events: list[Event] = []  # not yet handed on
    started = False
    complete = False  # [DONE] came: an upstream that ends otherwise was cut off
    try:
        async for payload in payloads:
            if payload == DONE:
                complete = True
                await _release_after_done(payloads, stream)  # before the last events
                break
            chunk, upstream_choices = _decoded(payload, stream, n, not started, parsing.native)
            if not started:
                started = True
                events.append(AnswerStart(chunk))
            finished = False  # a choice finished in this chunk
            for upstream_choice in upstream_choices:
                index = upstream_choice.index
                choice = choices.get(index)
                if choice is None:
                    choice = choices[index] = _ChoiceStream(index, parsing)
                    events.append(ChoiceStart(index))
                if choice.ended_early is not None:
                    continue  # the rest of an answer that ended is not read
                choice.delta(upstream_choice, events)
                reason = upstream_choice.finish_reason
                if reason and not choice.finished:
                    choice.finish(reason, events, upstream_choice.matched_stop)
                else:
                    choice.end_if_ended(events)
                finished = finished or choice.finished
            usage = chunk.get("usage") or usage
            if events:
                yield events
                events = []
            if finished and (early := _ended_early(choices, n)):
                parsing.observer.answer_ended(early)
                await _close(payloads)
                await stream.aclose()  # what the model writes on is never read
                break
        if not complete and not (choices and all(c.finished for c in choices.values())):
            stream.failed(UpstreamFailure.MID_STREAM)
            raise ProxyError(
                502,
                "upstream stream ended before its finish_reason and [DONE]",
                error_type=UPSTREAM_ERROR,
                code="upstream_stream_cut",
            )
        if not started:  # an upstream that sent nothing still gets a well-formed answer
            started = True
            events.append(AnswerStart({}))
        if not choices:
            choices[0] = _ChoiceStream(0, parsing)
            events.append(ChoiceStart(0))
        for choice in choices.values():
            if not choice.finished:  # the upstream ended without a finish_reason
                choice.finish(None, events)
        parsing.observer.usage(usage)
        events.append(AnswerEnd(usage))
        yield events
    except ProxyError as error:
        logger.warning("upstream stream failed: %s", error.message)
        yield [*events, *_start_unless(started), Failure(error)]
    except Exception:
        logger.exception("streaming answer failed")
        yield [*events, *_start_unless(started), Failure(internal_error())]


async def _close(payloads: AsyncIterator[str]) -> None:
    """The chunk reader left before its end, closed now rather than when it is collected."""
    close = getattr(payloads, "aclose", None)
    if close is not None:
        await close()


def _ended_early(choices: dict[int, _ChoiceStream], n: int) -> str | None:
    """Why the answer ended before the upstream's output did, once every choice asked for
    is finished and one of them ended early; else None."""
    if len(choices) < n or not all(choice.finished for choice in choices.values()):
        return None
    return next((c.ended_early for c in choices.values() if c.ended_early is not None), None)


def _start_unless(started: bool) -> list[Event]:
    """The answer's start, for a failure that came before it."""
    return [] if started else [AnswerStart({})]


async def _release_after_done(payloads: AsyncIterator[str], stream: UpstreamStream) -> None:
    """Whatever follows [DONE] dropped, then the stream closed. Read to its end, the upstream
    connection serves the next request; closed before, the next request opens a new one.

    The limit is an anyio cancel scope, never `asyncio.timeout`: reading the body to its end
    also closes the response, and httpcore hands the connection back to its pool in code
    shielded by anyio only. A native cancellation landing there (on a starved loop the
    50 ms pass right then) leaves the connection checked out for good; an anyio one waits
    for the shielded close to finish (see `upstream.deadline_scope`)."""
    with contextlib.suppress(ProxyError):  # the answer is whole already
        with anyio.move_on_after(AFTER_DONE_READ_SECONDS):
            async for _ in payloads:
                pass
    await stream.aclose()


def chunk_payloads(stream: UpstreamStream) -> AsyncIterator[str]:
    """The upstream's chunks as JSON texts. An upstream that ignored `stream: true` and sent
    one JSON completion (or a 200 holding an `error`) gives that as the only chunk; its
    choices hold a `message` where chunks hold a `delta`."""
    if stream.headers.get("content-type", "").startswith(JSON_MEDIA_TYPE):
        return _whole_body(stream)
    return stream.data_payloads()


async def _whole_body(stream: UpstreamStream) -> AsyncIterator[str]:
    yield (await stream.read_body()).decode("utf-8", "replace")
    yield DONE  # a whole body is complete: a cut one fails while it is read


def _decoded(
    payload: str, stream: UpstreamStream, n: int, first: bool, calls: bool
) -> tuple[dict[str, Any], list[UpstreamChoice]]:
    """One upstream chunk and its checked choices (with, `calls`, the upstream's own tool
    calls), and the first chunk's envelope checked too (the only envelope the answer
    copies); an upstream `error` event or a garbled or malformed chunk is counted, raised."""
    try:
        chunk = json_value(payload)
    except ValueError:
        chunk = None
    if isinstance(chunk, dict) and "error" in chunk:
        stream.failed(UpstreamFailure.MID_STREAM)
        raise UpstreamStatusError(502, payload.encode())
    try:
        if not isinstance(chunk, dict):
            raise bad_chunk("not a JSON object")
        return checked_envelope(chunk) if first else chunk, chunk_choices(chunk, n, calls)
    except ProxyError:
        stream.failed(UpstreamFailure.BAD_RESPONSE)
        raise
