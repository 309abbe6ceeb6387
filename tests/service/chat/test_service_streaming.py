"""Streaming: model text cut at any chunk boundary reaches the client as well-formed
`chat.completion.chunk` events, readable by the official SDK's stream helper."""

from __future__ import annotations

import json
from typing import Any

import pytest
from inprocess_stream import stream_in_process
from servers import (
    MODEL,
    QUESTION,
    TIME_TOOL,
    WEATHER_TOOL,
    Proxy,
    StartProxy,
    chat_body,
    completion_from_events,
)
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
)

from protocols import SMALL_CALL_CHARS

# Every cut of each protocol's call, in-process; over HTTP, a cut in its first tag, in its
# middle and before its last character.
SPLITS = [(protocol, at) for protocol, call in WEATHER_CALL.items() for at in range(1, len(call))]
SPLITS_OVER_HTTP = [
    (protocol, at)
    for protocol, call in WEATHER_CALL.items()
    for at in (1, len(call) // 2, len(call) - 1)
]


def call_fragments(events: list[Any]) -> list[dict[str, Any]]:
    """Every `delta.tool_calls` entry of a stream, in order."""
    return [
        fragment
        for event in events
        if isinstance(event, dict) and event["choices"]
        for fragment in event["choices"][0]["delta"].get("tool_calls") or ()
    ]


def test_streamed_call_opens_with_id_and_name_then_sends_only_argument_fragments(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Let me check.", WEATHER_CALL["json-mix"]))

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True))

    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    opening, *rest = call_fragments(events)
    assert opening == {
        "index": 0,
        "id": opening["id"],
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert all(fragment.keys() == {"index", "function"} for fragment in rest)
    arguments = "".join(fragment["function"]["arguments"] for fragment in rest)
    assert json.loads(arguments) == {"city": "Paris"}
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[-1] == "[DONE]"


@pytest.mark.parametrize(("tool_protocol", "at"), SPLITS)
def test_call_split_at_any_point_streams_as_one_call(tool_protocol: str, at: int) -> None:
    call = WEATHER_CALL[tool_protocol]

    completion = stream_in_process(
        tool_protocol, Reply("Sure.", call[:at], call[at:], " Done."), WEATHER_TOOL
    )

    assert completion.calls == [PARIS_WEATHER]
    assert completion.content == "Sure. Done."


@pytest.mark.parametrize(("tool_protocol", "at"), SPLITS_OVER_HTTP)
def test_call_split_across_two_chunks_streams_as_one_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tool_protocol: str, at: int
) -> None:
    call = WEATHER_CALL[tool_protocol]
    proxy = start_proxy(tool_protocol=tool_protocol)
    upstream.script(Reply("Sure.", call[:at], call[at:], " Done."))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    assert completion.calls == [PARIS_WEATHER]
    assert completion.content == "Sure. Done."


def test_calls_sent_one_character_per_chunk_stream_as_calls(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply(*f"Hi {WEATHER_CALL[protocol]}{TIME_CALL[protocol]}"))

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=True))

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert completion.content == "Hi "


@pytest.mark.parametrize(
    ("mode", "small_call_chars", "in_one_fragment"),
    [
        ("atomic", 0, True),
        ("incremental", 0, False),
        ("incremental", SMALL_CALL_CHARS, True),  # a small call is sent once decided
    ],
)
def test_argument_streaming_mode_sets_whether_arguments_arrive_whole(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    mode: str,
    small_call_chars: int,
    in_one_fragment: bool,
) -> None:
    proxy = start_proxy(tool_arguments_streaming=mode, small_call_chars=small_call_chars)
    upstream.script(Reply(*WEATHER_CALL["json-mix"]))  # one character per chunk

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True))

    assert completion_from_events(events).calls == [PARIS_WEATHER]
    _opening, *rest = call_fragments(events)
    argument_fragments = [fragment for fragment in rest if fragment["function"]["arguments"]]
    assert (len(argument_fragments) == 1) is in_one_fragment


@pytest.mark.parametrize(("include_usage", "usage"), [(True, USAGE), (False, None)])
def test_include_usage_adds_a_final_chunk_with_upstream_usage(
    upstream: ScriptedUpstream, proxy: Proxy, include_usage: bool, usage: dict[str, int] | None
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    options = {"include_usage": include_usage}

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True, stream_options=options))

    assert completion_from_events(events).usage == usage
    assert (events[-2]["choices"] == []) == include_usage


def test_sdk_stream_helper_accumulates_streamed_calls(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    text = f"Checking both. {WEATHER_CALL['json-mix']}{TIME_CALL['json-mix']}"
    upstream.script(Reply(*(text[i : i + 7] for i in range(0, len(text), 7))))

    with proxy.client.chat.completions.stream(
        model=MODEL, messages=[QUESTION], tools=[WEATHER_TOOL, TIME_TOOL]
    ) as stream:
        done = [
            (event.name, json.loads(event.arguments))
            for event in stream
            if event.type == "tool_calls.function.arguments.done"
        ]
        completion = stream.get_final_completion()

    [choice] = completion.choices
    calls = [
        (c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []
    ]
    assert done == calls == [PARIS_WEATHER, UTC_TIME]
    assert choice.message.content == "Checking both. "
    assert choice.finish_reason == "tool_calls"


def test_upstream_reasoning_deltas_pass_through_as_reasoning_content(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sunny.", reasoning=("The user ", "wants the weather.")))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    assert (completion.reasoning, completion.content) == ("The user wants the weather.", "Sunny.")


@pytest.mark.parametrize(
    ("setting", "fields"),
    [
        ("reasoning_content", {"reasoning_content"}),
        ("reasoning", {"reasoning"}),
        ("both", {"reasoning_content", "reasoning"}),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_reasoning_goes_out_under_the_fields_chat_reasoning_field_names(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    stream: bool,
    setting: str,
    fields: set[str],
) -> None:
    proxy = start_proxy(chat_reasoning_field=setting)
    upstream.script(Reply("Sunny.", reasoning=("The user ", "wants the weather.")))

    if stream:
        deltas = [
            event["choices"][0]["delta"]
            for event in proxy.events(chat_body(WEATHER_TOOL, stream=True))
            if isinstance(event, dict) and event["choices"]
        ]
        reasoning = {field: "".join(delta.get(field) or "" for delta in deltas) for field in fields}
        assert {field for delta in deltas for field in delta if "reasoning" in field} == fields
    else:
        answer = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL)).json()
        message = answer["choices"][0]["message"]
        reasoning = {field: message.get(field) for field in fields}
        # A whole message keeps the upstream's own field beside them (the scripted
        # upstream's is reasoning_content).
        assert {field for field in message if "reasoning" in field} == {
            *fields,
            "reasoning_content",
        }

    assert reasoning == dict.fromkeys(fields, "The user wants the weather.")


@pytest.mark.parametrize(
    ("think_as_reasoning", "reasoning", "content"),
    [
        (False, "", "<think>Paris, so get_weather.</think>Sure."),
        (True, "Paris, so get_weather.", "Sure."),
    ],
)
def test_think_block_moves_to_reasoning_content_only_when_configured(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    think_as_reasoning: bool,
    reasoning: str,
    content: str,
) -> None:
    proxy = start_proxy(think_as_reasoning=think_as_reasoning)
    upstream.script(Reply("<thi", "nk>Paris, so ", "get_weather.</th", "ink>Sure."))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    assert (completion.reasoning, completion.content) == (reasoning, content)


@pytest.mark.parametrize("stream", [True, False])
def test_a_think_block_is_reasoning_when_no_tools_are_offered(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(think_as_reasoning=True)
    upstream.script(Reply("<thi", "nk>Paris is ", "sunny.</th", "ink>Sunny."))

    completion = proxy.chat(chat_body(stream=stream))

    assert (completion.reasoning, completion.content) == ("Paris is sunny.", "Sunny.")


SEED_WEATHER_CALL = (
    "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
    "</function>\n</seed:tool_call>"
)


@pytest.mark.parametrize("stream", [True, False])
def test_a_seed_think_block_is_reasoning_and_the_call_after_it_a_tool_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    # Seed-OSS reasons in `<seed:think>`, there about the very call it then makes: only the
    # call after the block is one.
    proxy = start_proxy(think_as_reasoning=True)
    thought = f"Paris, so {SEED_WEATHER_CALL}"
    upstream.script(Reply("<seed:th", f"ink>{thought}</seed:", "think>", SEED_WEATHER_CALL))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.reasoning, completion.content) == (thought, "")
    assert completion.calls == [PARIS_WEATHER]
