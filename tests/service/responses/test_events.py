"""The Responses event stream written from the engine's events, in-process: however the answer
fails (the writing itself, or the upstream mid-call), the stream still ends with `error` and
`response.failed`, every event numbered in turn."""

from __future__ import annotations

import asyncio
import json
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
