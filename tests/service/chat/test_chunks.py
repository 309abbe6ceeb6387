"""Parser parts to the engine's deltas, written as OpenAI deltas, chunks and messages, without
a server."""

from __future__ import annotations

import json
import sys
import tracemalloc
from types import FrameType
from typing import Any

import pytest

from protocols import (
    Part,
    TextDelta,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
)
from service.chat.writer import ChatWriter, ChunkEncoder
from service.exchange import AnswerEnd, AnswerStart, ChoiceEnd, ChoiceStart, ContentDelta
from service.exchange.deltas import (
    MAX_UNNAMED_ARGUMENTS_CHARS,
    DeltaMapper,
    EndReason,
    finish_reason,
)
from service.exchange.events import CallDelta, CallStart
from service.upstream import CallFragment

ARGUMENTS = '{"city": "Paris"}'


def mapper(**options: bool) -> DeltaMapper:
    return DeltaMapper(**{"think_as_reasoning": False, "single_call": False, **options})


def chat_deltas(
    parts_mapper: DeltaMapper, parts: list[Part], *steps: list[Part]
) -> list[dict[str, object]]:
    """The mapper's deltas as the chat writer streams them, each chunk's `delta`: of `parts`,
    then of each later step's."""
    writer = ChatWriter(stream=True, fallback_model="m", include_usage=False)
    writer.write(AnswerStart({}))
    deltas = [delta for step in (parts, *steps) for delta in parts_mapper.deltas(step)]
    chunks = [writer.write(delta).removeprefix(b"data: ") for delta in deltas]
    return [json.loads(chunk)["choices"][0]["delta"] for chunk in chunks]


def atomic_call(call_id: str, name: str = "get_weather") -> ToolCall:
    return ToolCall(call_id, name, ARGUMENTS, {"city": "Paris"}, "<tool_call>...</tool_call>")


def test_adjacent_text_parts_become_one_content_delta() -> None:
    deltas = chat_deltas(mapper(), [TextDelta("t", "Hel"), TextDelta("t", "lo")])

    assert deltas == [{"content": "Hello"}]


def test_texts_between_think_tags_are_one_delta_copied_once() -> None:
    """A whole answer of `</seed:think><seed:think>x` repeated is one content delta (tags in
    the content), each character copied into it once, not once for every piece after it.
    Counted: the characters of every content delta made."""
    pieces = 2_000
    parts: list[Part] = []
    for _ in range(pieces):
        parts += [ThinkEnd("</seed:think>"), ThinkStart("<seed:think>"), TextDelta("t", "x")]
    copied = 0

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal copied
        made = frame.f_locals.get("self") if event == "call" else None
        if frame.f_code.co_name == "__init__" and isinstance(made, ContentDelta):
            copied += len(frame.f_locals["text"])

    sys.setprofile(count)
    try:
        deltas = mapper().deltas(parts)
    finally:
        sys.setprofile(None)

    text = "</seed:think><seed:think>x" * pieces
    assert deltas == [ContentDelta(text)]
    assert copied == len(text)


def test_an_incremental_call_sends_its_start_then_only_argument_fragments() -> None:
    deltas = chat_deltas(
        mapper(),
        [ToolCallStart("call_a", "get_weather"), ToolCallDelta("call_a", '{"city": ')],
        [
            ToolCallDelta("call_a", '"Paris"}'),
            ToolCall("call_a", "get_weather", ARGUMENTS, {"city": "Paris"}, "..."),
        ],
    )

    assert deltas == [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
    ]


def test_an_atomic_call_sends_its_start_then_its_whole_arguments() -> None:
    deltas = chat_deltas(mapper(), [atomic_call("call_a")])

    assert deltas[0]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    assert deltas[1] == {"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS}}]}


def test_call_indexes_are_dense_in_emission_order() -> None:
    deltas = chat_deltas(
        mapper(), [atomic_call("call_a"), TextDelta("t", " "), atomic_call("call_b", "search")]
    )

    starts = [
        d["tool_calls"][0] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]
    ]
    assert [(start["index"], start["id"]) for start in starts] == [(0, "call_a"), (1, "call_b")]


def test_a_single_call_request_drops_later_calls_and_reports_them() -> None:
    dropped: list[str] = []
    single = DeltaMapper(think_as_reasoning=False, single_call=True, on_dropped_call=dropped.append)
    parts = [
        atomic_call("call_a"),
        ToolCallStart("call_b", "get_time"),
        ToolCallDelta("call_b", "{}"),
        ToolCall("call_b", "get_time", "{}", {}, "..."),
    ]

    deltas = chat_deltas(single, parts)

    assert {d["tool_calls"][0]["index"] for d in deltas} == {0}
    assert dropped == ["get_time"]
    assert single.completed_calls == 1
    assert single.ended == EndReason.SINGLE_CALL


def test_a_single_call_answer_ends_after_its_first_call() -> None:
    single = DeltaMapper(think_as_reasoning=False, single_call=True)
    before = single.deltas([TextDelta("t", "Reading it."), atomic_call("call_a")])
    assert single.ended == EndReason.SINGLE_CALL
    assert single.deltas([TextDelta("t", "Then I will write it.")]) == []
    assert [type(delta) for delta in before] == [ContentDelta, CallStart, CallDelta]


def test_a_call_repeated_in_one_answer_is_sent_once_and_the_answer_ends_at_the_bound() -> None:
    repeated: list[str] = []
    calls = mapper(on_repeated_call=repeated.append)
    first = calls.deltas([atomic_call("call_1"), atomic_call("call_2", "read_file")])
    assert [d.call_id for d in first if isinstance(d, CallStart)] == ["call_1", "call_2"]
    # Whole in one step as an incremental parser writes a small call: read at its end.
    again = [
        ToolCallStart("call_3", "get_weather"),
        ToolCallDelta("call_3", ARGUMENTS),
        ToolCall("call_3", "get_weather", ARGUMENTS, {"city": "Paris"}, "..."),
        TextDelta("t", " and "),
        atomic_call("call_4", "read_file"),
    ]
    assert calls.deltas(again) == [ContentDelta(" and ")]
    assert repeated == ["get_weather", "read_file"] and calls.ended is None
    assert calls.deltas([atomic_call("call_5"), atomic_call("call_6", "search")]) == []
    assert repeated == ["get_weather", "read_file", "get_weather"]
    assert calls.ended == EndReason.REPEATED_CALLS
    assert calls.completed_calls == 2


def test_the_same_tool_with_other_arguments_is_no_repeat() -> None:
    calls = mapper()
    other = ToolCall("call_2", "get_weather", '{"city": "Rome"}', {"city": "Rome"}, "...")
    calls.deltas([atomic_call("call_1"), other])
    assert calls.completed_calls == 2


@pytest.mark.parametrize(
    ("think_as_reasoning", "expected"),
    [
        (False, [{"content": "<think>hmm</think>ok"}]),
        (True, [{"reasoning_content": "hmm"}, {"content": "ok"}]),
    ],
)
def test_think_blocks_stay_content_unless_configured_as_reasoning(
    think_as_reasoning: bool, expected: list[dict[str, str]]
) -> None:
    parts = [
        ThinkStart("<think>"),
        TextDelta("t", "hmm"),
        ThinkEnd("</think>"),
        TextDelta("t", "ok"),
    ]

    assert chat_deltas(mapper(think_as_reasoning=think_as_reasoning), parts) == expected


@pytest.mark.parametrize(
    ("upstream_reason", "parts", "expected"),
    [
        pytest.param("stop", [TextDelta("t", "hi")], "stop", id="text-keeps-upstream-reason"),
        pytest.param(None, [TextDelta("t", "hi")], "stop", id="missing-reason-is-stop"),
        pytest.param("stop", [atomic_call("call_a")], "tool_calls", id="calls-made"),
        pytest.param(
            "length",
            [ToolCallStart("call_a", "f"), ToolCallUnfinished("call_a", "f", "<tool_call>{")],
            "length",
            id="call-cut-by-length",
        ),
    ],
)
def test_finish_reason(upstream_reason: str | None, parts: list[Part], expected: str) -> None:
    parts_mapper = mapper()
    parts_mapper.deltas(parts)

    assert finish_reason(upstream_reason, parts_mapper) == expected


def test_a_chunk_carries_the_whole_envelope() -> None:
    encoder = ChunkEncoder(response_id="chatcmpl-1", created=7, model="m", system_fingerprint="fp")

    chunk = json.loads(encoder.chunk(0, {"content": "Hi"}))

    assert chunk == {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "m",
        "system_fingerprint": "fp",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
    }


def test_the_usage_chunk_has_no_choices() -> None:
    encoder = ChunkEncoder(response_id="chatcmpl-1", created=7, model="m")

    chunk = json.loads(encoder.usage({"total_tokens": 3}))

    assert chunk["choices"] == [] and chunk["usage"] == {"total_tokens": 3}
    assert "system_fingerprint" not in chunk


def test_a_message_with_only_calls_has_null_content() -> None:
    writer = ChatWriter(stream=False, fallback_model="m", include_usage=False)
    upstream = {"message": {"role": "assistant", "content": "<tool_call>...</tool_call>"}}
    for event in [
        AnswerStart({}),
        ChoiceStart(),
        *mapper().deltas([atomic_call("call_a")]),
        ChoiceEnd("tool_calls", upstream=upstream),
        AnswerEnd(),
    ]:
        writer.write(event)

    message = writer.whole()["choices"][0]["message"]

    assert message["content"] is None
    assert message["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ARGUMENTS},
        }
    ]


def test_arguments_of_a_native_call_never_named_are_let_go_past_a_bound() -> None:
    # 200 MB of a call the upstream never named were held, and never sent.
    native = mapper(native=True)
    piece = "x" * 10_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(100):  # ~1 MB, each piece made as it comes
            fragment = CallFragment(0, "call_up", "function", None, f"{number}{piece}")
            assert native.native([fragment]) == []
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 * MAX_UNNAMED_ARGUMENTS_CHARS
    # Named at last, it is not sent: part of its arguments is gone.
    assert native.native([CallFragment(0, "call_up", "function", "get_weather", "}")]) == []


def test_a_native_call_named_after_a_few_fragments_is_sent_whole() -> None:
    native = mapper(native=True)
    assert native.native([CallFragment(0, "call_up", "function", None, '{"city": ')]) == []
    deltas = native.native([CallFragment(0, "call_up", "function", "get_weather", '"Paris"}')])
    assert [type(delta).__name__ for delta in deltas] == ["CallStart", "CallDelta"]
    assert deltas[1].text == ARGUMENTS
