"""`POST /v1/messages` through the official Anthropic SDK: tools rendered into the prompt, the
model's calls answered as `tool_use` blocks, streamed or whole, tool results rendered back
into the history, forced calls, errors in Anthropic's shape; the upstream only ever gets
tools-free chat completions."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from messages_client import (
    QUESTION,
    TIME,
    WEATHER,
    anthropic_client,
    create,
    message_from_events,
    message_params,
    text,
    tool_uses,
)
from observability import scrape
from servers import MODEL, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, read_events
from upstream_server import (
    FENCE_OF_CALLS,
    PARIS_WEATHER,
    PROSE_BEFORE_FENCE,
    SHOWN_CALL,
    TIME_CALL,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Drop,
    Fail,
    Reply,
    ScriptedUpstream,
    Verbatim,
    raw_chunk_event,
    raw_completion,
)

from protocols import ToolSpec, get_protocol
from protocols.formats.forced_call import render_forced_call_prompt

TOOL_USE_ID = "toolu_paris"
EARLIER_CALL = {"type": "tool_use", "id": TOOL_USE_ID, "name": "get_weather", "input": {}}
EARLIER_CALL["input"] = {"city": "Paris"}
RESULT = {"type": "tool_result", "tool_use_id": TOOL_USE_ID, "content": "sunny, 24 C"}


def test_model_call_is_a_tool_use_block_after_its_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL[protocol]))

    message = create(protocol_proxy, stream, tools=[WEATHER])

    assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
    assert text(message).strip() == "Let me check."
    assert tool_uses(message) == [PARIS_WEATHER]
    assert message["content"][1]["id"].startswith("toolu_")
    assert message["stop_reason"] == "tool_use" and message["stop_sequence"] is None
    assert message["id"].startswith("msg_") and message["model"] == MODEL
    assert message["usage"]["input_tokens"] == USAGE["prompt_tokens"]
    assert message["usage"]["output_tokens"] == USAGE["completion_tokens"]
    [sent] = upstream.chat_requests
    assert "tools" not in sent.json and "tool_choice" not in sent.json
    assert sent.json["max_tokens"] == 1024 and sent.json.get("stream", False) is stream
    tools = get_protocol(protocol).render_tools([ToolSpec.from_openai(WEATHER_TOOL)])
    assert sent.json["messages"] == [
        {"role": "system", "content": tools},
        {"role": "user", "content": QUESTION["content"]},
    ]


def test_text_only_answer_ends_the_turn(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("It is ", "sunny."))

    message = create(proxy, stream, tools=[WEATHER], system="Be terse.")

    assert message["content"] == [{"type": "text", "text": "It is sunny.", "citations": None}]
    assert message["stop_reason"] == "end_turn"
    assert upstream.chat_requests[0].json["messages"][0]["content"].startswith("Be terse.\n\n")


def test_input_streams_as_partial_json_that_adds_up_to_it(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(small_call_chars=0)  # stream even a call this small
    call = WEATHER_CALL["json-mix"]
    cut = call.index("Paris") + 2
    upstream.script(Reply(call[:cut], call[cut:]))

    with proxy.http.stream(
        "POST", "/v1/messages", json=message_params(tools=[WEATHER], stream=True)
    ) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        events = list(read_events(answer.iter_lines()))

    fragments = [
        event["delta"]["partial_json"] for event in events if event["type"] == "content_block_delta"
    ]
    assert len(fragments) >= 2, "input went out before the call was complete"
    assert json.loads("".join(fragments)) == {"city": "Paris"}
    assert events[1] == {"type": "ping"}
    assert message_from_events(events)["content"][0]["input"] == {"city": "Paris"}


def test_a_tool_round_trip_renders_the_call_and_its_result_into_the_history(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol]), Reply("Sunny, 24 C in Paris."))

    first = create(protocol_proxy, stream, tools=[WEATHER])
    [call] = [block for block in first["content"] if block["type"] == "tool_use"]
    result = {**RESULT, "tool_use_id": call["id"]}
    history = [QUESTION, {"role": "assistant", "content": first["content"]}]
    final = create(
        protocol_proxy,
        stream,
        tools=[WEATHER],
        messages=[*history, {"role": "user", "content": [result]}],
    )

    assert text(final) == "Sunny, 24 C in Paris." and final["stop_reason"] == "end_turn"
    render = get_protocol(protocol)
    sent = upstream.chat_requests[1].json["messages"]
    assert sent[2:] == [
        {"role": "assistant", "content": render.render_call("get_weather", {"city": "Paris"})},
        {"role": "user", "content": render.render_result("get_weather", call["id"], "sunny, 24 C")},
    ]


def test_results_as_blocks_errors_and_thinking_are_rendered_as_the_model_can_read_them(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sorry."))
    thinking = {"type": "thinking", "thinking": "Paris, then.", "signature": "c2ln"}
    failed = {
        "type": "tool_result",
        "tool_use_id": TOOL_USE_ID,
        "is_error": True,
        "content": [{"type": "text", "text": "no such city"}],
    }
    messages = [
        QUESTION,
        {"role": "assistant", "content": [thinking]},  # a turn of thinking alone: not sent
        {
            "role": "assistant",
            "content": [thinking, {"type": "text", "text": "Checking."}, EARLIER_CALL],
        },
        {"role": "user", "content": [failed, {"type": "text", "text": "Try again?"}]},
    ]

    create(proxy, False, tools=[WEATHER], messages=messages)

    json_mix = get_protocol("json-mix")
    call = json_mix.render_call("get_weather", {"city": "Paris"})
    assert upstream.chat_requests[0].json["messages"][2:] == [
        {"role": "assistant", "content": f"Checking.\n{call}"},
        {
            "role": "user",
            "content": json_mix.render_result("get_weather", TOOL_USE_ID, "Error: no such city"),
        },
        {"role": "user", "content": "Try again?"},
    ]


@pytest.mark.parametrize(
    ("tool_choice", "offered"),
    [({"type": "any"}, None), ({"type": "tool", "name": "get_time"}, "get_time")],
    ids=["any", "named"],
)
def test_tool_choice_forces_exactly_one_call(
    upstream: ScriptedUpstream,
    protocol_proxy: Proxy,
    stream: bool,
    tool_choice: dict[str, Any],
    offered: str | None,
) -> None:
    upstream.script(Reply('{"name": "get_time", "arguments": {"zone": "UTC"}}'))

    message = create(protocol_proxy, stream, tools=[WEATHER, TIME], tool_choice=tool_choice)

    assert tool_uses(message) == [UTC_TIME] and message["stop_reason"] == "tool_use"
    [sent] = upstream.chat_requests
    assert sent.json.get("stream") is False, "the one call is asked for whole"
    specs = [ToolSpec.from_openai(tool) for tool in (WEATHER_TOOL, TIME_TOOL)]
    forced = render_forced_call_prompt(specs, named=offered)
    if offered:
        forced = render_forced_call_prompt([specs[1]], named=offered)
    assert sent.json["messages"][0] == {"role": "system", "content": forced}


def test_tool_choice_none_offers_no_tools(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    message = create(proxy, False, tools=[WEATHER], tool_choice={"type": "none"})

    assert tool_uses(message) == [] and text(message) == WEATHER_CALL["json-mix"]
    assert upstream.chat_requests[0].json["messages"][0]["role"] == "user"


@pytest.mark.parametrize("disabled", [False, True], ids=["parallel", "disable_parallel"])
def test_parallel_calls_unless_disable_parallel_tool_use(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool, disabled: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol], "\n", TIME_CALL[protocol]))
    choice = {"type": "auto", "disable_parallel_tool_use": disabled}

    message = create(protocol_proxy, stream, tools=[WEATHER, TIME], tool_choice=choice)

    assert tool_uses(message) == ([PARIS_WEATHER] if disabled else [PARIS_WEATHER, UTC_TIME])
    ids = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
    assert len(set(ids)) == len(ids)


def test_streamed_and_whole_answers_are_the_same_message(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    reply = ("I'll check both.\n", WEATHER_CALL[protocol], TIME_CALL[protocol])
    upstream.script(Reply(*reply), Reply(*reply))

    whole = create(protocol_proxy, False, tools=[WEATHER, TIME])
    streamed = create(protocol_proxy, True, tools=[WEATHER, TIME])

    def same(message: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in b.items() if k != "id"} for b in message["content"]]

    assert same(whole) == same(streamed)
    assert whole["stop_reason"] == streamed["stop_reason"] == "tool_use"


@pytest.mark.parametrize("asked", [True, False], ids=["thinking", "no-thinking"])
def test_upstream_reasoning_is_a_thinking_block_when_thinking_is_asked_for(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, asked: bool
) -> None:
    upstream.script(Reply("Sunny.", reasoning=("Paris is ", "in France.")))
    thinking = {"type": "enabled", "budget_tokens": 1024} if asked else {"type": "disabled"}

    message = create(proxy, stream, thinking=thinking)

    kinds = [block["type"] for block in message["content"]]
    assert kinds == (["thinking", "text"] if asked else ["text"])
    if asked:
        assert message["content"][0]["thinking"] == "Paris is in France."
    assert "thinking" not in upstream.chat_requests[0].json


def test_upstream_error_before_the_stream_keeps_its_status_in_anthropics_shape(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Fail(503, "model is loading"))

    with pytest.raises(anthropic.APIStatusError) as raised:
        create(proxy, stream, tools=[WEATHER])

    assert raised.value.status_code == 503
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "model is loading"},
    }


def test_upstream_failure_during_the_stream_is_an_error_event(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Drop("It is "))

    with proxy.http.stream("POST", "/v1/messages", json=message_params(stream=True)) as answer:
        assert answer.status_code == 200
        lines = list(answer.iter_lines())
    events = list(read_events(lines))

    assert "event: error" in lines
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert [event["type"] for event in events[:2]] == ["message_start", "ping"]
    with anthropic_client(proxy) as client, pytest.raises(anthropic.APIStatusError) as raised:
        upstream.script(Drop("It is "))
        with client.messages.stream(**message_params()) as stream:
            stream.get_final_message()
    assert raised.value.body["error"]["type"] == "api_error"  # type: ignore[index]


def test_a_malformed_request_is_a_400_in_anthropics_shape(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    answer = proxy.http.post("/v1/messages", json={"model": MODEL, "max_tokens": 5})

    assert answer.status_code == 400
    assert answer.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages: 'messages' must be a non-empty array",
        },
    }
    assert upstream.requests == []


def test_x_api_key_is_checked_against_the_proxy_keys_and_never_sent_upstream(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(proxy_api_keys="key-1,key-2")
    upstream.script(Reply("Hello."), Reply("Hello again."))

    with anthropic_client(proxy, api_key="key-2") as client:
        message = client.messages.create(**message_params())
    with anthropic_client(proxy, api_key="key-1", bearer=True) as client:
        client.messages.create(**message_params())
    with (
        anthropic_client(proxy, api_key="key-3") as client,
        pytest.raises(anthropic.AuthenticationError) as refused,
    ):
        client.messages.create(**message_params())

    assert text(message.model_dump()) == "Hello."
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    assert len(upstream.requests) == 2
    for sent in upstream.requests:
        assert "x-api-key" not in sent.headers and "authorization" not in sent.headers
    chat = {"model": MODEL, "messages": [QUESTION]}
    refused_chat = proxy.http.post("/v1/chat/completions", json=chat, headers={"x-api-key": "k"})
    assert refused_chat.status_code == 401, "x-api-key is checked on every endpoint"


def test_the_clients_x_api_key_goes_upstream_as_its_bearer_token(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Hello."))

    with anthropic_client(proxy, api_key="upstream-key") as client:
        client.messages.create(**message_params())

    [sent] = upstream.requests
    assert sent.headers["authorization"] == "Bearer upstream-key"
    assert "x-api-key" not in sent.headers


def test_messages_are_counted_under_their_own_route(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    create(proxy, True, tools=[WEATHER])

    metrics = scrape(proxy.http)
    requests = {"route": "messages", "protocol": "json-mix", "stream": "true"}
    assert metrics.value("toolcall_proxy_requests_total", **requests, status_class="2xx") == 1
    assert metrics.value("toolcall_proxy_tool_calls_total", tool="get_weather") == 1


def test_a_stop_sequence_the_upstream_names_is_the_stop_reason(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    """vLLM names the stop sequence it stopped at (`stop_reason`); OpenAI's API does not."""
    stopped = {"finish_reason": "stop", "stop_reason": "three"}
    if stream:
        upstream.script(
            Verbatim(
                raw_chunk_event({"index": 0, "delta": {"content": "One, two, "}}),
                raw_chunk_event({"index": 0, "delta": {}, **stopped}),
                b"data: [DONE]\n\n",
            )
        )
    else:
        message = {"role": "assistant", "content": "One, two, "}
        upstream.script(raw_completion({"index": 0, "message": message, **stopped}))

    message = create(proxy, stream, stop_sequences=["three", "four"])
    plain = {"finish_reason": "stop", "stop_reason": None}
    upstream.script(raw_completion({"index": 0, "message": {"content": "One."}, **plain}))
    ended = create(proxy, False, stop_sequences=["three"])

    assert text(message) == "One, two, "
    assert (message["stop_reason"], message["stop_sequence"]) == ("stop_sequence", "three")
    assert (ended["stop_reason"], ended["stop_sequence"]) == ("end_turn", None)


def test_a_call_format_shown_as_an_example_is_text_and_a_fence_of_calls_after_prose_is_calls(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(SHOWN_CALL), Reply(PROSE_BEFORE_FENCE, FENCE_OF_CALLS))

    example = create(protocol_proxy, stream, tools=[WEATHER, TIME])
    called = create(protocol_proxy, stream, tools=[WEATHER, TIME])

    assert (text(example), tool_uses(example), example["stop_reason"]) == (
        SHOWN_CALL,
        [],
        "end_turn",
    )
    assert (text(called), tool_uses(called)) == (PROSE_BEFORE_FENCE, [UTC_TIME])
    assert called["stop_reason"] == "tool_use"
