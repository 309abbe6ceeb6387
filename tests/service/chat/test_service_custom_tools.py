"""Chat completions' `custom` (free-form) tools: offered to the model with their grammar,
the model's call answered as a `custom` tool call carrying the raw text (streamed as input
fragments), earlier custom calls rendered into the history, and a named custom tool_choice."""

from __future__ import annotations

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inprocess_stream import stream_in_process
from parser_harness import split
from servers import (
    PATCH_GRAMMAR,
    PATCH_TOOL,
    QUESTION,
    WEATHER_TOOL,
    Call,
    Proxy,
    StartProxy,
    chat_body,
)
from upstream_server import PATCH, PATCH_CALL, WEATHER_CALL, Reply, ScriptedUpstream

from protocols import get_protocol

CUSTOM_CHOICE = {"type": "custom", "custom": {"name": "apply_patch"}}


def custom_calls(calls: list[Call]) -> list[tuple[str, str, str]]:
    return [(call.type, call.name, call.arguments) for call in calls]


def test_custom_tool_call_comes_back_as_a_custom_call_with_the_raw_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Patching. ", PATCH_CALL[protocol]))

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, PATCH_TOOL, stream=stream))

    assert custom_calls(completion.tool_calls) == [("custom", "apply_patch", PATCH)]
    assert completion.content.strip() == "Patching."
    assert completion.finish_reason == "tool_calls"
    system = upstream.chat_requests[0].json["messages"][0]["content"]
    assert "free-form text, not JSON" in system and "Lark grammar" in system
    assert PATCH_GRAMMAR.replace('"', '\\"') in system


def test_a_large_custom_call_streams_its_text_in_input_fragments(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(small_call_chars=0)  # stream even a patch this small
    call = PATCH_CALL["json-mix"]
    upstream.script(Reply(*split(call, [call.index(word) for word in ("Add", "print", "End")])))
    body = chat_body(PATCH_TOOL, stream=True)

    events = proxy.events(body)

    fragments = [
        fragment["custom"]["input"]
        for event in events[:-1]
        for fragment in event["choices"][0]["delta"].get("tool_calls") or ()
        if "id" not in fragment
    ]
    assert len(fragments) > 1 and "".join(fragments) == PATCH


@settings(max_examples=60, deadline=None)
@given(
    protocol=st.sampled_from(sorted(PATCH_CALL)),
    cuts=st.lists(st.integers(0, 200), max_size=8),
    small_call_chars=st.sampled_from([0, 1024]),
)
def test_any_chunking_gives_the_custom_call_the_whole_answer_gives(
    protocol: str, cuts: list[int], small_call_chars: int
) -> None:
    text = "Patching. " + PATCH_CALL[protocol]
    completion = stream_in_process(
        protocol, Reply(*split(text, cuts)), PATCH_TOOL, small_call_chars=small_call_chars
    )

    assert custom_calls(completion.tool_calls) == [("custom", "apply_patch", PATCH)]


def test_the_sdk_reads_a_custom_call(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply(PATCH_CALL["json-mix"]))

    reply = proxy.client.chat.completions.create(
        model="test-model", messages=[QUESTION], tools=[PATCH_TOOL]
    )

    [call] = reply.choices[0].message.tool_calls or []
    assert call.type == "custom" and (call.custom.name, call.custom.input) == ("apply_patch", PATCH)


def test_earlier_custom_call_and_its_result_are_rendered_like_a_function_calls(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply("Done."))
    custom = {"name": "apply_patch", "input": PATCH}
    history = [
        QUESTION,
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "custom", "custom": custom}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Success."},
    ]

    protocol_proxy.chat(chat_body(PATCH_TOOL, messages=history))

    rendering = get_protocol(protocol)
    assert upstream.chat_requests[0].json["messages"][1:] == [
        QUESTION,
        {"role": "assistant", "content": PATCH_CALL[protocol]},
        {"role": "user", "content": rendering.render_result("apply_patch", "call_1", "Success.")},
    ]


def test_a_named_custom_tool_choice_answers_one_custom_call(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply('{"name": "apply_patch", "arguments": {"input": "*** Begin Patch"}}'))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, PATCH_TOOL, tool_choice=CUSTOM_CHOICE, stream=stream)
    )

    assert custom_calls(completion.tool_calls) == [("custom", "apply_patch", "*** Begin Patch")]


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "custom", "custom": {"description": "no name"}},
        {"type": "custom", "custom": {"name": "x", "format": "lark"}},
        {"type": "custom", "function": {"name": "x"}},
    ],
    ids=["no-name", "format-not-an-object", "declared-under-function"],
)
def test_a_malformed_custom_tool_is_a_400_showing_the_shape_it_needs(
    proxy: Proxy, tool: dict[str, object]
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        proxy.client.chat.completions.create(
            model="test-model", messages=[QUESTION], tools=[WEATHER_TOOL, tool]
        )

    assert raised.value.body["param"] == "tools[1]"  # type: ignore[index]
    assert '{"type": "custom", "custom": {"name": ...}}' in raised.value.message


def test_a_custom_call_in_a_weather_answer_stays_apart_from_the_function_call(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"], PATCH_CALL["json-mix"]))

    completion = proxy.chat(chat_body(WEATHER_TOOL, PATCH_TOOL, stream=True))

    assert [call.type for call in completion.tool_calls] == ["function", "custom"]
    assert completion.calls == [("get_weather", {"city": "Paris"}), ("apply_patch", PATCH)]
