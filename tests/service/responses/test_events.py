"""The Responses event stream written from the engine's events, in-process: however the answer
fails (the writing itself, or the upstream mid-call), the stream still ends with `error` and
`response.failed`, every event numbered in turn."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

from service.exchange import (
    AnswerEnd,
    AnswerStart,
    CallDelta,
    CallStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Event,
    Failure,
    written_stream,
)
from service.responses.events import ResponseWriter
from service.wire import ProxyError


def translated(*batches: list[Event]) -> list[dict[str, Any]]:
    async def source() -> AsyncIterator[list[Event]]:
        for batch in batches:
            yield batch

    async def run() -> list[bytes]:
        writer = ResponseWriter({}, model="m", stream=True)
        return [event async for event in written_stream(writer, source())]

    events = b"".join(asyncio.run(run())).split(b"\n\n")
    return [json.loads(event.split(b"data: ", 1)[1]) for event in events if event]


def test_a_delta_the_translation_cannot_take_still_ends_in_response_failed() -> None:
    events = translated(
        [AnswerStart({}), ChoiceStart(), ContentDelta("It is ")],
        [ContentDelta(5)],  # the engine sends no such delta; a fault here must not cut
        [ChoiceEnd("stop"), AnswerEnd()],
    )

    assert [event["type"] for event in events[-2:]] == ["error", "response.failed"]
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
    assert failed["output"][0]["content"][0]["text"] == "It is "


def test_a_failure_mid_call_fails_the_response_keeping_the_arguments_so_far() -> None:
    cut = ProxyError(502, "upstream stream ended", code="upstream_stream_cut")

    events = translated(
        [AnswerStart({}), ChoiceStart(), ContentDelta("Let me check.")],
        [CallStart(0, "call_1", "get_weather"), CallDelta(0, '{"city": ')],
        [Failure(cut)],
    )

    assert [event["type"] for event in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "upstream_stream_cut"
    message, call = events[-1]["response"]["output"]
    assert message["content"][0]["text"] == "Let me check."
    assert (call["name"], call["arguments"]) == ("get_weather", '{"city": ')
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


def test_a_long_streams_last_events_are_sent_in_pieces_never_held_encoded() -> None:
    # The last events each carry the whole text (text done, part done, item done, response
    # completed): encoded, then joined, 60 MiB of text peaked at +632 MB of the process.
    chunk = "A long answer, written by the model a line at a time.\n" * 1000
    writer = ResponseWriter({}, model="m", stream=True)
    for event in (AnswerStart({}), ChoiceStart(), *(ContentDelta(chunk) for _ in range(80))):
        writer.write(event)
    writer.write(ChoiceEnd("stop"))
    text_bytes = 80 * len(chunk)  # ~4.3 MB
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sent = writer.write(AnswerEnd())
        largest = 0
        ends = []
        for piece in sent:
            largest = max(largest, len(piece))
            ends.append(piece[-60:])
        grown = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()

    # The text it held, written into its item as it is (`getvalue` copied it), and pieces
    # of a few dozen KiB sent one at a time.
    assert grown < text_bytes // 2, (grown, text_bytes)
    assert largest < 200_000
    assert sum(end.endswith(b"\n\n") for end in ends) == 4  # text, part, item, response
