"""The chat writer fed the engine's events directly: a failure mid-stream ends the chunks with
one error event and no [DONE]; a whole answer keeps every field of the upstream's own."""

from __future__ import annotations

import json
from typing import Any

from service.chat.writer import ChatWriter
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
)
from service.wire import UPSTREAM_ERROR, ProxyError


def chunks(*events: Event, include_usage: bool = False) -> list[Any]:
    writer = ChatWriter(stream=True, fallback_model="m", include_usage=include_usage)
    data = b"".join(writer.write(event) for event in events).decode()
    payloads = [event.removeprefix("data: ") for event in data.split("\n\n") if event]
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


def test_a_failure_mid_stream_is_one_error_event_after_the_chunks_and_no_done() -> None:
    cut = ProxyError(502, "upstream stream ended", error_type=UPSTREAM_ERROR, code="cut")

    sent = chunks(
        AnswerStart({"id": "chatcmpl-1", "created": 7, "model": "up"}),
        ChoiceStart(),
        ContentDelta("It is "),
        CallStart(0, "call_1", "get_weather"),
        CallDelta(0, '{"city": '),
        Failure(cut),
    )

    assert [chunk["choices"][0]["delta"] for chunk in sent[:-1]] == [
        {"role": "assistant", "content": ""},
        {"content": "It is "},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
    ]
    assert {chunk["id"] for chunk in sent[:-1]} == {"chatcmpl-1"}
    assert sent[-1] == {"error": cut.body()["error"]}


def test_a_streamed_answers_end_is_its_finish_then_usage_when_asked_then_done() -> None:
    sent = chunks(
        AnswerStart({}),
        ChoiceStart(),
        ChoiceEnd("stop", "END"),
        AnswerEnd({"total_tokens": 3}),
        include_usage=True,
    )

    assert sent[1]["choices"] == [
        {"index": 0, "delta": {}, "finish_reason": "stop", "stop_reason": "END"}
    ]
    assert sent[2]["choices"] == [] and sent[2]["usage"] == {"total_tokens": 3}
    assert sent[3] == "[DONE]" and sent[1]["model"] == "m"


def test_a_whole_answer_keeps_the_upstreams_fields_and_its_reasoning_under_its_name_too() -> None:
    message = {"role": "assistant", "content": "raw", "reasoning": "Paris?", "refusal": None}
    choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": {"x": 1}}
    upstream = {"id": "chatcmpl-1", "system_fingerprint": "fp", "choices": [choice]}
    writer = ChatWriter(stream=False, fallback_model="m", include_usage=False)

    for event in [
        AnswerStart(upstream),
        ChoiceStart(),
        ReasoningDelta("Paris?"),
        ContentDelta("Sunny."),
        CallStart(0, "call_1", "apply_patch", "custom"),
        CallDelta(0, "*** Begin"),
        ChoiceEnd("tool_calls", upstream=choice),
        AnswerEnd({"total_tokens": 3}),
    ]:
        assert writer.write(event) == b""  # a whole answer is sent once, whole

    assert writer.whole() == {
        "id": "chatcmpl-1",
        "system_fingerprint": "fp",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Sunny.",
                    "reasoning": "Paris?",
                    "refusal": None,
                    "reasoning_content": "Paris?",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "custom",
                            "custom": {"name": "apply_patch", "input": "*** Begin"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": {"x": 1},
            }
        ],
        "usage": {"total_tokens": 3},
    }
