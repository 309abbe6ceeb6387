"""The Responses event stream made from a chat event stream, in-process: however the
translation fails, the stream still ends with `error` and `response.failed`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from service.responses.api import response_events
from service.responses.events import ResponseAssembler
from service.wire.sse import DONE_EVENT, data_event


def chat_event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return data_event(json.dumps({"choices": [choice]}).encode())


def translated(*chat_events: bytes) -> list[dict[str, Any]]:
    async def source() -> AsyncIterator[bytes]:
        for event in chat_events:
            yield event

    async def run() -> list[bytes]:
        assembler = ResponseAssembler({}, model="m")
        return [
            event async for event in response_events(assembler, source(), on_finished=lambda: None)
        ]

    return [json.loads(event.split(b"data: ", 1)[1]) for event in asyncio.run(run())]


def test_a_delta_the_translation_cannot_take_still_ends_in_response_failed() -> None:
    events = translated(
        chat_event({"content": "It is "}),
        chat_event({"content": 5}),  # no chat stream sends this; a fault here must not cut
        chat_event({}, "stop"),
        DONE_EVENT,
    )

    assert [event["type"] for event in events[-2:]] == ["error", "response.failed"]
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
    assert failed["output"][0]["content"][0]["text"] == "It is "
