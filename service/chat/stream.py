"""The streaming answer: upstream SSE chunks in, their text through the parser, OpenAI
`chat.completion.chunk` events out (the caller owns and closes the upstream stream)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
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
    DONE_EVENT,
    JSON_MEDIA_TYPE,
    SERVER_ERROR,
    UPSTREAM_ERROR,
    EventStream,
    ProxyError,
    UpstreamStatusError,
    data_event,
    error_body,
    json_bytes,
    json_value,
)
from .chunks import ROLE_DELTA, STOP, ChunkEncoder, finish_reason
from .parser_config import OutputParsing

logger = logging.getLogger(__name__)

# How long an upstream may take to end its body after [DONE] (it normally comes in the same
# read): read to its end, the connection goes back to the pool; closed before, it is closed.
AFTER_DONE_READ_SECONDS = 0.05


class _ChoiceStream:
    """One choice's parser and mapper, turning its upstream deltas into encoded events."""

    __slots__ = ("_encoder", "_index", "_mapper", "_parser", "finished")

    def __init__(self, index: int, parsing: OutputParsing, encoder: ChunkEncoder) -> None:
        self._index = index
        self._encoder = encoder
        self._parser = parsing.stream_parser()
        self._mapper = parsing.mapper()
        self.finished = False

    def start(self) -> bytes:
        return data_event(self._encoder.chunk(self._index, ROLE_DELTA))

    def delta(self, upstream: UpstreamChoice) -> list[bytes]:
        events = []
        upstream_delta = upstream.delta
        for key in REASONING_KEYS:
            if reasoning := upstream_delta.get(key):
                delta = {"reasoning_content": reasoning}
                events.append(data_event(self._encoder.chunk(self._index, delta)))
                break
        if content := upstream_delta.get("content"):
            for delta in self._mapper.deltas(self._parser.feed(content)):
                events.append(data_event(self._encoder.chunk(self._index, delta)))
        if upstream.calls:  # an upstream that calls tools itself
            for delta in self._mapper.native(upstream.calls):
                events.append(data_event(self._encoder.chunk(self._index, delta)))
        return events

    def finish(self, upstream_reason: str | None, matched_stop: str | None = None) -> list[bytes]:
        self.finished = True
        chunk = self._encoder.chunk
        mapper = self._mapper
        events = [
            data_event(chunk(self._index, delta))
            for delta in [*mapper.deltas(self._parser.finish()), *mapper.rescued()]
        ]
        reason = finish_reason(upstream_reason, self._mapper)
        stop = matched_stop if reason == STOP else None  # a stop sequence ended its text
        events.append(data_event(chunk(self._index, {}, reason, stop)))
        return events


async def stream_completion(
    stream: UpstreamStream,
    parsing: OutputParsing,
    *,
    n: int,
    include_usage: bool,
    fallback_model: str,
) -> EventStream:
    """SSE event bytes for the client, for the `n` choices asked for. A failure after the
    first event becomes one `data: {"error": ...}` event and the stream ends there, without
    `[DONE]`."""
    encoder: ChunkEncoder | None = None
    choices: dict[int, _ChoiceStream] = {}
    usage = None
    payloads = chunk_payloads(stream)
    if parsing.trace is not None:
        payloads = parsing.trace.upstream_payloads(payloads)
    complete = False  # [DONE] came: an upstream that ends otherwise was cut off
    try:
        async for payload in payloads:
            if payload == DONE:
                complete = True
                await _release_after_done(payloads, stream)  # before the last events
                break
            chunk, upstream_choices = _decoded(
                payload, stream, n, first=encoder is None, calls=parsing.native
            )
            if encoder is None:
                encoder = ChunkEncoder.matching(chunk, fallback_model)
            for upstream_choice in upstream_choices:
                index = upstream_choice.index
                choice = choices.get(index)
                if choice is None:
                    choice = choices[index] = _ChoiceStream(index, parsing, encoder)
                    yield choice.start()
                for event in choice.delta(upstream_choice):
                    yield event
                reason = upstream_choice.finish_reason
                if reason and not choice.finished:
                    for event in choice.finish(reason, upstream_choice.matched_stop):
                        yield event
            usage = chunk.get("usage") or usage
        if not complete and not (choices and all(c.finished for c in choices.values())):
            stream.failed(UpstreamFailure.MID_STREAM)
            raise ProxyError(
                502,
                "upstream stream ended before its finish_reason and [DONE]",
                error_type=UPSTREAM_ERROR,
                code="upstream_stream_cut",
            )
        if encoder is None:  # an upstream that sent nothing still gets a well-formed answer
            encoder = ChunkEncoder.matching({}, fallback_model)
        if not choices:
            choices[0] = _ChoiceStream(0, parsing, encoder)
            yield choices[0].start()
        for choice in choices.values():
            if not choice.finished:  # the upstream ended without a finish_reason
                for event in choice.finish(None):
                    yield event
        parsing.observer.usage(usage)
        if include_usage and usage is not None:
            yield data_event(encoder.usage(usage))
        yield DONE_EVENT
    except ProxyError as error:
        logger.warning("upstream stream failed: %s", error.message)
        yield data_event(json_bytes(error.body()))
    except Exception:
        logger.exception("streaming answer failed")
        yield data_event(json_bytes(error_body("internal proxy error", error_type=SERVER_ERROR)))


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
    payload: str, stream: UpstreamStream, n: int, *, first: bool, calls: bool
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
        return checked_envelope(chunk) if first else chunk, chunk_choices(chunk, n, calls=calls)
    except ProxyError:
        stream.failed(UpstreamFailure.BAD_RESPONSE)
        raise
