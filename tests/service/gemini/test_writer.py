"""The Gemini writer on its own: each streamed `GenerateContentResponse` whole and framed as
Google frames them (SSE `data:` events, or the items of one JSON array), a call's part
written once its arguments are complete, thoughts only when asked for, the finish reason
and usage on the last response, a failure as Google's error body; a whole answer's parts
merged as the stream's would be."""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.gemini.writer import JSON_ARRAY, SSE, Framing, GeminiWriter, usage_metadata
from service.wire import ProxyError

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def sse_responses(stream: bytes) -> list[dict[str, Any]]:
    """Each `data:` event of a Gemini stream, checked to hold nothing else."""
    events = stream.decode().split("\r\n\r\n")
    assert events[-1] == "", "every event ends with a blank line"
    assert all(event.startswith("data: ") and "\n" not in event for event in events[:-1])
    return [json.loads(event.removeprefix("data: ")) for event in events[:-1]]


def written(writer: GeminiWriter, *steps: tuple[str, Any]) -> bytes:
    out = b""
    for method, argument in steps:
        out += getattr(writer, method)(*argument)
    return out


def parts_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    [candidate] = response["candidates"]
    assert candidate["index"] == 0 and candidate["content"]["role"] == "model"
    parts: list[dict[str, Any]] = candidate["content"]["parts"]
    return parts


def writer(framing: Framing | None = SSE, *, thoughts: bool = False) -> GeminiWriter:
    return GeminiWriter(model="m", thoughts=thoughts, framing=framing, input_estimate=30)


A_CALL = (
    ("content", ("Let me check. ",)),
    ("call_start", ("call_1", "get_weather")),
    ("call_arguments", ('{"city": ',)),
    ("call_arguments", ('"Paris"}',)),
    ("call_start", ("call_2", "get_time")),
    ("call_arguments", ("{}",)),
    ("choice_end", ("tool_calls",)),
    ("end", (USAGE,)),
)


def test_text_streams_as_it_comes_and_each_call_once_its_arguments_are_whole() -> None:
    answer = writer()

    responses = sse_responses(written(answer, *A_CALL))

    assert [parts_of(response) for response in responses] == [
        [{"text": "Let me check. "}],
        [{"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}}],
        [{"functionCall": {"id": "call_2", "name": "get_time", "args": {}}}],
    ]
    last = responses[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"] == {
        "promptTokenCount": 11,
        "candidatesTokenCount": 7,
        "totalTokenCount": 18,
    }
    assert all("finishReason" not in response["candidates"][0] for response in responses[:-1])
    assert {(r["modelVersion"], r["responseId"]) for r in responses} == {("m", answer.response_id)}


def test_the_json_array_framing_holds_the_same_responses_as_the_event_stream() -> None:
    def without_ids(responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**response, "responseId": None} for response in responses]

    array = json.loads(written(writer(JSON_ARRAY), *A_CALL))

    assert without_ids(array) == without_ids(sse_responses(written(writer(SSE), *A_CALL)))


def test_a_text_answer_ends_with_an_empty_text_part_holding_the_finish_reason() -> None:
    responses = sse_responses(
        written(writer(), ("content", ("Sunny.",)), ("choice_end", ("stop",)), ("end", (None,)))
    )

    assert [parts_of(response) for response in responses] == [[{"text": "Sunny."}], [{"text": ""}]]
    assert responses[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize(
    ("finish_reason", "gemini"),
    [
        ("stop", "STOP"),
        ("tool_calls", "STOP"),
        ("length", "MAX_TOKENS"),
        ("content_filter", "SAFETY"),
        ("abort", "OTHER"),
        (None, "STOP"),
    ],
)
def test_the_finish_reason_is_geminis(finish_reason: str | None, gemini: str) -> None:
    answer = writer(None)
    answer.content("x")
    answer.choice_end(finish_reason)
    answer.end(USAGE)

    assert answer.whole()["candidates"][0]["finishReason"] == gemini


def test_thoughts_are_thought_parts_when_asked_for_and_left_out_otherwise() -> None:
    steps = (("reasoning", ("Paris, so ",)), ("reasoning", ("weather.",)), ("content", ("Hi",)))
    asked, unasked = writer(thoughts=True), writer(thoughts=False)

    streamed = sse_responses(written(asked, *steps))
    plain = sse_responses(written(unasked, *steps))

    assert [parts_of(response) for response in streamed] == [
        [{"text": "Paris, so ", "thought": True}],
        [{"text": "weather.", "thought": True}],
        [{"text": "Hi"}],
    ]
    assert [parts_of(response) for response in plain] == [[{"text": "Hi"}]]


def test_a_whole_answer_merges_its_text_and_keeps_thoughts_apart() -> None:
    answer = writer(None, thoughts=True)
    for method, argument in (
        ("reasoning", ("Paris, ",)),
        ("reasoning", ("so weather.",)),
        *A_CALL[:-1],
    ):
        assert getattr(answer, method)(*argument) == b""
    assert answer.end(USAGE) == b""

    whole = answer.whole()

    assert parts_of(whole) == [
        {"text": "Paris, so weather.", "thought": True},
        {"text": "Let me check. "},
        {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"id": "call_2", "name": "get_time", "args": {}}},
    ]
    assert whole["usageMetadata"]["totalTokenCount"] == 18
    assert whole["modelVersion"] == "m" and whole["responseId"] == answer.response_id


def test_arguments_that_are_no_json_object_are_kept_as_text() -> None:
    answer = writer(None)
    answer.call_start("call_1", "get_weather")
    answer.call_arguments('{"city": "Par')
    answer.choice_end("length")
    answer.end(None)

    [part] = parts_of(answer.whole())
    assert part["functionCall"]["args"] == {"arguments": '{"city": "Par'}


@pytest.mark.parametrize("framing", [SSE, JSON_ARRAY], ids=["sse", "array"])
def test_a_failure_mid_stream_ends_it_with_googles_error_body(framing: Framing) -> None:
    answer = writer(framing)
    stream = answer.content("Hel") + answer.failure(
        ProxyError(504, "upstream read timed out", code="upstream_timeout")
    )

    if framing is SSE:
        *_text, error = sse_responses(stream)
    else:
        *_text, error = json.loads(stream)
    assert error == {
        "error": {"code": 504, "message": "upstream read timed out", "status": "DEADLINE_EXCEEDED"}
    }


def test_usage_counts_thoughts_apart_and_estimates_what_the_upstream_did_not_count() -> None:
    counted = usage_metadata(
        {
            "prompt_tokens": 100,
            "completion_tokens": 40,
            "completion_tokens_details": {"reasoning_tokens": 30},
            "prompt_tokens_details": {"cached_tokens": 64},
        },
        input_estimate=90,
        output_chars=0,
    )
    estimated = usage_metadata(None, input_estimate=90, output_chars=41)

    assert counted == {
        "promptTokenCount": 100,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 140,
        "cachedContentTokenCount": 64,
    }
    assert estimated == {"promptTokenCount": 90, "candidatesTokenCount": 11, "totalTokenCount": 101}
