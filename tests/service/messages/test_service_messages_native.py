"""`POST /v1/messages` on the chat exchange's own way to its upstream, as chat completions and
responses take it: a route whose upstream calls tools itself gets the tools as chat tools and
its calls (and those it left in its text) come back as `tool_use` blocks; a forced call
answered in prose is asked for again; a route that takes a JSON schema is asked for the
forced call by one; `count_tokens` estimates what such a route is sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from messages_client import QUESTION, TIME, WEATHER, anthropic_client, create, text, tool_uses
from observability import scrape
from servers import MODEL, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy
from upstream_server import PARIS_WEATHER, TIME_CALL, UTC_TIME, Reply, ScriptedUpstream, native_call

from protocols import ToolSpec
from protocols.formats.forced_call import forced_call_schema, render_forced_call_correction

NATIVE_ID = "call_upstream_paris"
PROSE = "It is sunny in Paris today."
TIME_OBJECT = '{"name": "get_time", "arguments": {"zone": "UTC"}}'
ANY = {"type": "any"}


def test_a_native_route_gets_chat_tools_and_its_own_and_rescued_calls_are_tool_use_blocks(
    upstream: ScriptedUpstream, start_proxy: StartProxy, protocol: str, stream: bool
) -> None:
    proxy = start_proxy(tool_protocol=protocol, upstream_native_tools=True)
    own_call = native_call(0, NATIVE_ID, *PARIS_WEATHER)
    upstream.script(Reply("On it. ", *own_call, TIME_CALL[protocol], finish_reason="tool_calls"))

    message = create(proxy, stream, tools=[WEATHER, TIME], tool_choice={"type": "auto"})

    assert [block["type"] for block in message["content"]] == ["text", "tool_use", "tool_use"]
    assert text(message) == "On it. "
    assert tool_uses(message) == [PARIS_WEATHER, UTC_TIME]
    assert message["content"][1]["id"] == "toolu_upstream_paris", "its id, told as Anthropic's"
    assert message["stop_reason"] == "tool_use"
    [sent] = upstream.chat_requests
    assert sent.json["tools"] == [WEATHER_TOOL, TIME_TOOL]
    assert sent.json["messages"] == [QUESTION]
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_rescued_tool_calls_total", protocol=protocol) == 1


def test_a_native_route_gets_the_history_s_calls_and_results_as_chat_messages(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    upstream.script(Reply("Sunny, 24 C in Paris."))
    call = {"type": "tool_use", "id": NATIVE_ID, "name": "get_weather", "input": {"city": "Paris"}}
    result = {"type": "tool_result", "tool_use_id": NATIVE_ID, "content": "sunny, 24 C"}
    history = [QUESTION, {"role": "assistant", "content": [call]}]

    message = create(
        proxy, False, tools=[WEATHER], messages=[*history, {"role": "user", "content": [result]}]
    )

    assert text(message) == "Sunny, 24 C in Paris." and message["stop_reason"] == "end_turn"
    [sent] = upstream.chat_requests
    [assistant, tool] = sent.json["messages"][1:]
    [sent_call] = assistant["tool_calls"]
    assert (sent_call["id"], sent_call["function"]["name"]) == (NATIVE_ID, "get_weather")
    assert json.loads(sent_call["function"]["arguments"]) == {"city": "Paris"}
    assert tool == {"role": "tool", "tool_call_id": NATIVE_ID, "content": "sunny, 24 C"}


def test_a_native_route_forces_its_own_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    upstream.script(Reply(*native_call(0, NATIVE_ID, *UTC_TIME), finish_reason="tool_calls"))

    message = create(proxy, stream, tools=[WEATHER, TIME], tool_choice=ANY)

    assert tool_uses(message) == [UTC_TIME]
    [sent] = upstream.chat_requests
    assert sent.json["tool_choice"] == "required"
    assert sent.json.get("stream", False) is stream, "the upstream forces it, streamed or not"


def test_a_forced_call_answered_in_prose_is_asked_for_again(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(PROSE), Reply(TIME_OBJECT))

    message = create(proxy, stream, tools=[WEATHER, TIME], tool_choice=ANY)

    assert (tool_uses(message), text(message)) == ([UTC_TIME], "")
    assert message["stop_reason"] == "tool_use"
    first, again = upstream.chat_requests
    assert again.json["messages"][:-2] == first.json["messages"]
    assert again.json["messages"][-2:] == [
        {"role": "assistant", "content": PROSE},
        {
            "role": "user",
            "content": render_forced_call_correction("it held no tool call", named=None),
        },
    ]
    assert scrape(proxy.http).value("toolcall_proxy_forced_call_retries_total") == 1


def test_any_never_answered_with_a_call_is_the_models_text_ending_the_turn(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(PROSE), Reply("Sorry, no tool fits."))

    message = create(proxy, stream, tools=[WEATHER, TIME], tool_choice=ANY)

    assert (text(message), tool_uses(message)) == (PROSE, [])
    assert message["stop_reason"] == "end_turn"


@pytest.mark.parametrize(
    ("tool_choice", "offered"),
    [
        pytest.param(ANY, [WEATHER_TOOL, TIME_TOOL], id="any"),
        pytest.param({"type": "tool", "name": "get_time"}, [TIME_TOOL], id="named"),
    ],
)
def test_a_route_with_structured_output_is_asked_for_the_forced_call_by_its_schema(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    stream: bool,
    tool_choice: dict[str, Any],
    offered: list[dict[str, Any]],
) -> None:
    proxy = start_proxy(upstream_structured_output=True)
    upstream.script(Reply(TIME_OBJECT))

    message = create(proxy, stream, tools=[WEATHER, TIME], tool_choice=tool_choice)

    assert tool_uses(message) == [UTC_TIME]
    [sent] = upstream.chat_requests
    tools = [ToolSpec.from_openai(tool) for tool in offered]
    assert sent.json["response_format"] == forced_call_schema(tools)


def test_count_tokens_for_a_native_route_counts_the_tools_it_is_sent(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(upstream_native_tools=True)

    with anthropic_client(proxy) as client:
        bare = client.messages.count_tokens(model=MODEL, messages=[QUESTION])
        with_tools = client.messages.count_tokens(
            model=MODEL, messages=[QUESTION], tools=[WEATHER, TIME]
        )

    assert with_tools.input_tokens > bare.input_tokens + 20
    assert upstream.requests == [], "counting asks nothing of the model"
