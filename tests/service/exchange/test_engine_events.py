"""The engine's events, in-process: what an upstream stream or a whole answer becomes, in the
order the events module promises (a start, each choice's start, deltas and end, then the
answer's end, or a failure as the last event after the start)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from servers import WEATHER_TOOL, chat_body
from upstream_server import WEATHER_CALL, raw_chunk_event

from protocols import get_protocol
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
    ReasoningDelta,
    parse_chat_request,
)
from service.exchange.parsing import OutputParsing
from service.exchange.stream import stream_events
from service.exchange.whole import parsed_choices, whole_events
from service.observability.metrics import ProxyMetrics, UpstreamFailure
from service.observability.observer import CompletionObserver
from service.observability.request_record import RequestRecord
from service.settings import Settings
from service.wire import json_bytes

CALL = WEATHER_CALL["json-mix"]


class RawStream:
    """Stands in for `UpstreamStream`: these `data:` payloads, then the end of the body."""

    def __init__(self, *payloads: str) -> None:
        self.headers = {"content-type": "text/event-stream"}
        self._payloads = payloads
        self.failures: list[UpstreamFailure] = []
        self.closed = False

    async def data_payloads(self) -> AsyncIterator[str]:
        for payload in self._payloads:
            yield payload

    def failed(self, kind: UpstreamFailure) -> None:
        self.failures.append(kind)

    async def aclose(self) -> None:
        self.closed = True


def parsing() -> OutputParsing:
    chat = parse_chat_request(json_bytes(chat_body(WEATHER_TOOL)))
    record = RequestRecord(
        request_id="req", method="POST", path="/v1/chat/completions", route="chat"
    )
    settings = Settings.model_construct()
    return OutputParsing.configured(
        settings.parser_options(),
        get_protocol("json-mix"),
        chat.tools,
        think_as_reasoning=settings.think_as_reasoning,
        single_call=False,
        observer=CompletionObserver("json-mix", ProxyMetrics(), record),
    )


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return raw_chunk_event(choice).decode().removeprefix("data: ").strip()


def streamed(stream: RawStream) -> list[list[Event]]:
    async def run() -> list[list[Event]]:
        return [batch async for batch in stream_events(stream, parsing(), n=1)]

    return asyncio.run(run())


def test_a_stream_is_a_start_a_choice_its_deltas_and_end_then_the_answers_end() -> None:
    stream = RawStream(
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "Paris?"}),
        chunk({"content": "Let me check. " + CALL[:12]}),
        chunk({"content": CALL[12:]}),
        chunk({}, "stop"),
        "[DONE]",
    )

    events = [event for batch in streamed(stream) for event in batch]

    kinds = [type(event) for event in events]
    assert kinds[:3] == [AnswerStart, ChoiceStart, ReasoningDelta]
    assert kinds[-2:] == [ChoiceEnd, AnswerEnd]
    assert events[3] == ContentDelta("Let me check. ")
    start = next(event for event in events if isinstance(event, CallStart))
    assert (start.index, start.name, start.kind) == (0, "get_weather", "function")
    arguments = "".join(event.text for event in events if isinstance(event, CallDelta))
    assert arguments == '{"city": "Paris"}'
    assert events[-2] == ChoiceEnd("tool_calls")
    assert stream.closed


def test_an_upstream_error_mid_stream_is_the_last_event_after_what_came_before() -> None:
    stream = RawStream(
        chunk({"content": "It is "}),
        '{"error": {"message": "overloaded", "type": "server_error", "code": "busy"}}',
    )

    events = [event for batch in streamed(stream) for event in batch]

    assert isinstance(events[0], AnswerStart)
    assert events[1:3] == [ChoiceStart(), ContentDelta("It is ")]
    failure = events[-1]
    assert isinstance(failure, Failure) and len(events) == 4
    assert failure.error.status == 502
    assert failure.error.body()["error"]["message"] == "overloaded"
    assert stream.failures == [UpstreamFailure.MID_STREAM]


def test_a_stream_that_fails_before_its_first_chunk_still_starts_then_fails() -> None:
    stream = RawStream("{not json")

    events = [event for batch in streamed(stream) for event in batch]

    assert events[0] == AnswerStart({})
    assert isinstance(events[1], Failure) and len(events) == 2
    assert events[1].error.code == "upstream_bad_chunk"


def test_a_stream_cut_before_its_end_fails_after_its_text() -> None:
    stream = RawStream(chunk({"content": "It is "}))

    events = [event for batch in streamed(stream) for event in batch]

    assert ContentDelta("It is ") in events
    assert isinstance(events[-1], Failure)
    assert events[-1].error.code == "upstream_stream_cut"


def test_a_whole_answer_gives_reasoning_then_text_then_calls_each_text_in_one_delta() -> None:
    message = {
        "role": "assistant",
        "content": f"Let me check. {CALL} Then I will answer.",
        "reasoning_content": "Paris?",
    }
    choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
    answer = {"id": "chatcmpl-1", "choices": [choice], "usage": {"total_tokens": 3}}

    whole = parsing()
    events = whole_events(answer, parsed_choices(answer, whole), whole)

    assert events[0] == AnswerStart(answer)
    assert events[1:4] == [
        ChoiceStart(),
        ReasoningDelta("Paris?"),
        ContentDelta("Let me check.  Then I will answer."),
    ]
    assert isinstance(events[4], CallStart) and events[5] == CallDelta(0, '{"city": "Paris"}')
    assert events[6] == ChoiceEnd("tool_calls", upstream=choice)
    assert events[7] == AnswerEnd({"total_tokens": 3})
