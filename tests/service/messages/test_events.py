"""The Messages writer fed the engine's events directly: a failure mid-stream is Anthropic's
one `error` event, typed by what failed, after the blocks sent so far and with no
`message_stop`; text and arguments go to their own blocks however they come."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from service.exchange import (
    AnswerStart,
    CallDelta,
    CallStart,
    ChoiceStart,
    ContentDelta,
    Event,
    Failure,
    ReasoningDelta,
)
from service.messages.events import MessageWriter
from service.wire import UPSTREAM_ERROR, ProxyError


def sent(*events: Event, thinking: bool = False) -> list[dict[str, Any]]:
    writer = MessageWriter(model="m", thinking=thinking, input_estimate=3, stream=True)
    data = b"".join(writer.write(event) for event in events).decode()
    return [json.loads(event.split("data: ", 1)[1]) for event in data.split("\n\n") if event]


def test_a_failure_mid_stream_is_one_error_event_typed_by_its_code() -> None:
    late = ProxyError(504, "upstream timed out", error_type=UPSTREAM_ERROR, code="upstream_timeout")

    events = sent(AnswerStart({}), ChoiceStart(), ContentDelta("It is "), Failure(late))

    assert [event["type"] for event in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "error",
    ]
    assert events[-1]["error"] == {"type": "timeout_error", "message": "upstream timed out"}


def test_reasoning_is_a_thinking_block_only_when_asked_for_and_calls_have_their_own() -> None:
    steps = (
        AnswerStart({}),
        ReasoningDelta("Paris?"),
        ContentDelta("Let me check."),
        CallStart(0, "call_abc", "get_weather"),
        CallDelta(0, '{"city": '),
        CallDelta(0, '"Paris"}'),
    )

    with_thinking = sent(*steps, thinking=True)
    without = sent(*steps)

    starts = [e["content_block"] for e in with_thinking if e["type"] == "content_block_start"]
    assert [block["type"] for block in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["id"] == "toolu_abc"
    deltas = [(e["index"], e["delta"]) for e in with_thinking if e["type"] == "content_block_delta"]
    assert deltas[-2:] == [
        (2, {"type": "input_json_delta", "partial_json": '{"city": '}),
        (2, {"type": "input_json_delta", "partial_json": '"Paris"}'}),
    ]
    assert [e["content_block"]["type"] for e in without if e["type"] == "content_block_start"] == [
        "text",
        "tool_use",
    ]


def _held_after_writing(stream: bool, text: str, count: int) -> int:
    """Bytes the writer holds, by Python's allocations, once it wrote `count` deltas of
    `text` and of a call's arguments, each made as it comes, as a stream's are, and the
    bytes it gave out are gone."""
    writer = MessageWriter(model="m", thinking=False, input_estimate=3, stream=stream)
    writer.write(AnswerStart({}))
    writer.write(ChoiceStart())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(count):
            writer.write(ContentDelta(f"{number} {text}"))
        writer.write(CallStart(0, "call_abc", "write_file"))
        for number in range(count):
            writer.write(CallDelta(0, json.dumps(f"{number} {text}")))
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_stream_holds_none_of_the_text_it_sent_and_a_whole_answer_all_of_it() -> None:
    # Every delta was kept for a message no stream reads: 200 MB of text took +210 MB.
    text = "Some generated prose, streamed word by word. " * 20
    sent_chars = 2 * 1000 * len(text)  # ~1.8 MB

    assert _held_after_writing(True, text, 1000) < sent_chars // 100
    assert _held_after_writing(False, text, 1000) > sent_chars
