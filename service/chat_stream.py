"""The streaming answer: upstream SSE chunks in, their text through the parser, OpenAI
`chat.completion.chunk` events out, the upstream stream closed however it ends."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from .chunks import ROLE_DELTA, ChunkEncoder, finish_reason
from .errors import (
    SERVER_ERROR,
    UPSTREAM_ERROR,
    ProxyError,
    UpstreamStatusError,
    error_body,
)
from .metrics import UpstreamFailure
from .parser_config import OutputParsing
from .sse import DONE, DONE_EVENT, data_event, data_payloads
from .upstream import UpstreamStream
from .wire_json import JSON_MEDIA_TYPE

logger = logging.getLogger(__name__)

# Upstreams name the reasoning delta either way; clients read `reasoning_content`.
REASONING_KEYS = ("reasoning_content", "reasoning")


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

    def delta(self, upstream_delta: dict[str, Any]) -> list[bytes]:
        events = []
        for key in REASONING_KEYS:
            if reasoning := upstream_delta.get(key):
                delta = {"reasoning_content": reasoning}
                events.append(data_event(self._encoder.chunk(self._index, delta)))
                break
        if content := upstream_delta.get("content"):
            for delta in self._mapper.deltas(self._parser.feed(content)):
                events.append(data_event(self._encoder.chunk(self._index, delta)))
        return events

    def finish(self, upstream_reason: str | None) -> list[bytes]:
        self.finished = True
        chunk = self._encoder.chunk
        events = [
            data_event(chunk(self._index, delta))
            for delta in self._mapper.deltas(self._parser.finish())
        ]
        reason = finish_reason(upstream_reason, self._mapper)
        events.append(data_event(chunk(self._index, {}, reason)))
        return events


async def stream_completion(
    stream: UpstreamStream, parsing: OutputParsing, *, include_usage: bool, fallback_model: str
) -> AsyncIterator[bytes]:
    """SSE event bytes for the client. A failure after the first event becomes one
    `data: {"error": ...}` event and the stream ends there, without `[DONE]`."""
    encoder: ChunkEncoder | None = None
    choices: dict[int, _ChoiceStream] = {}
    usage = None
    payloads = chunk_payloads(stream)
    if parsing.trace is not None:
        payloads = parsing.trace.upstream_payloads(payloads)
    try:
        async for payload in payloads:
            if payload == DONE:
                break
            chunk = _decoded(payload, stream)
            if encoder is None:
                encoder = ChunkEncoder.matching(chunk, fallback_model)
            usage = chunk.get("usage") or usage
            for upstream_choice in chunk.get("choices") or ():
                index = upstream_choice.get("index", 0)
                choice = choices.get(index)
                if choice is None:
                    choice = choices[index] = _ChoiceStream(index, parsing, encoder)
                    yield choice.start()
                delta = upstream_choice.get("delta") or upstream_choice.get("message") or {}
                for event in choice.delta(delta):
                    yield event
                if upstream_choice.get("finish_reason") and not choice.finished:
                    for event in choice.finish(upstream_choice["finish_reason"]):
                        yield event
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
        yield data_event(json.dumps(error.body()))
    except Exception:
        logger.exception("streaming answer failed")
        yield data_event(json.dumps(error_body("internal proxy error", error_type=SERVER_ERROR)))
    finally:
        await stream.aclose()


def chunk_payloads(stream: UpstreamStream) -> AsyncIterator[str]:
    """The upstream's chunks as JSON texts. An upstream that ignored `stream: true` and sent
    one JSON completion (or a 200 holding an `error`) gives that as the only chunk; its
    choices hold a `message` where chunks hold a `delta`."""
    if stream.headers.get("content-type", "").startswith(JSON_MEDIA_TYPE):
        return _whole_body(stream.lines())
    return data_payloads(stream.lines())


async def _whole_body(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    # JSON strings hold no raw line breaks, so joining the lines keeps the JSON value.
    yield "\n".join([line async for line in lines])


def _decoded(payload: str, stream: UpstreamStream) -> dict[str, Any]:
    """One upstream chunk; an upstream `error` event or a garbled chunk is counted, raised."""
    try:
        chunk = json.loads(payload)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        stream.failed(UpstreamFailure.BAD_RESPONSE)
        raise ProxyError(
            502,
            "upstream sent a chunk that is not a JSON object",
            error_type=UPSTREAM_ERROR,
            code="upstream_bad_chunk",
        )
    if "error" in chunk:
        stream.failed(UpstreamFailure.MID_STREAM)
        raise UpstreamStatusError(502, payload.encode())
    return chunk
