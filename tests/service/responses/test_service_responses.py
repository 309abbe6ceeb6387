"""`POST /v1/responses` through the official SDK: function tools rendered into the prompt, the
model's calls answered as `function_call` items, conversations continued by items, by
`previous_response_id` or by reference; the upstream only ever gets chat completions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from observability import scrape
from responses_client import TIME_FUNCTION, WEATHER_FUNCTION, calls, respond, text
from servers import MODEL, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy
from upstream_server import (
    FENCE_OF_CALLS,
    PARIS_WEATHER,
    PROSE_BEFORE_FENCE,
    SHOWN_CALL,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Drop,
    Fail,
    Reply,
    ScriptedUpstream,
)

from protocols import ToolSpec, get_protocol
from protocols.formats.forced_call import render_forced_call_prompt

QUESTION = "What is the weather in Paris?"
CALL_ID = "call_paris"
EARLIER_CALL = {
    "type": "function_call",
    "call_id": CALL_ID,
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
}
CALL_OUTPUT = {"type": "function_call_output", "call_id": CALL_ID, "output": "sunny, 24 C"}


def test_model_call_is_a_function_call_item_after_its_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL[protocol]))

    response = respond(protocol_proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])

    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["message", "function_call"]
    assert text(response).strip() == "Let me check."
    assert calls(response) == [PARIS_WEATHER]
    call = response["output"][1]
    assert call["id"].startswith("fc_") and call["call_id"] and call["status"] == "completed"
    assert response["usage"]["input_tokens"] == USAGE["prompt_tokens"]
    assert response["usage"]["total_tokens"] == USAGE["total_tokens"]
    [sent] = upstream.chat_requests
    assert "tools" not in sent.json and "tool_choice" not in sent.json
    tools = get_protocol(protocol).render_tools([ToolSpec.from_openai(WEATHER_TOOL)])
    assert sent.json["messages"] == [
        {"role": "system", "content": tools},
        {"role": "user", "content": QUESTION},
    ]


def test_call_arguments_stream_as_the_model_writes_them(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(small_call_chars=0)  # stream even a call this small
    call = WEATHER_CALL["json-mix"]
    cut = call.index("Paris") + 2
    upstream.script(Reply(call[:cut], call[cut:]))

    with proxy.client.responses.create(
        model=MODEL, input=QUESTION, tools=[WEATHER_FUNCTION], stream=True
    ) as stream:
        events = [event.model_dump() for event in stream]

    fragments = [event["delta"] for event in events if event["type"].endswith("arguments.delta")]
    assert len(fragments) >= 2, "arguments went out before the call was complete"
    assert json.loads("".join(fragments)) == {"city": "Paris"}


def test_metrics_count_the_call_under_the_responses_route(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    respond(proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])

    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_tool_calls_total", tool="get_weather") == 1
    labels = {"route": "responses", "protocol": "json-mix", "status_class": "2xx"}
    assert metrics.value("toolcall_proxy_requests_total", **labels) == 1


def test_model_route_picks_the_upstream_model_and_protocol(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text('[routes.coder]\nmodel = "upstream-coder"\nprotocol = "morph-xml"\n')
    proxy = start_proxy(routes_file=str(routes))
    upstream.script(Reply(WEATHER_CALL["morph-xml"]))

    response = respond(proxy, False, model="coder", input=QUESTION, tools=[WEATHER_FUNCTION])

    assert calls(response) == [PARIS_WEATHER]
    assert upstream.chat_requests[0].json["model"] == "upstream-coder"


def test_instructions_lead_the_system_message_before_the_tools(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Sunny."))

    response = respond(
        proxy, stream, instructions="Be terse.", input=QUESTION, tools=[WEATHER_FUNCTION]
    )

    assert text(response) == "Sunny." and calls(response) == []
    system = upstream.chat_requests[0].json["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be terse.\n\n")


@pytest.mark.parametrize(
    ("tool_choice", "named", "answer"),
    [
        ("required", None, '{"name": "get_weather", "arguments": {"city": "Paris"}}'),
        ({"type": "function", "name": "get_weather"}, "get_weather", '{"city": "Paris"}'),
    ],
    ids=["required", "named"],
)
def test_tool_choice_forces_exactly_one_call(
    upstream: ScriptedUpstream,
    proxy: Proxy,
    stream: bool,
    tool_choice: Any,
    named: str | None,
    answer: str,
) -> None:
    upstream.script(Reply(answer))

    response = respond(
        proxy,
        stream,
        input=QUESTION,
        tools=[WEATHER_FUNCTION, TIME_FUNCTION],
        tool_choice=tool_choice,
    )

    assert calls(response) == [PARIS_WEATHER]
    assert [item["type"] for item in response["output"]] == ["function_call"]
    [sent] = upstream.chat_requests
    offered = [WEATHER_TOOL] + ([] if named else [TIME_TOOL])
    demand = render_forced_call_prompt([ToolSpec.from_openai(t) for t in offered], named=named)
    assert demand in sent.json["messages"][0]["content"] and "tools" not in sent.json


def test_required_never_answered_with_a_call_is_the_models_message(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("It is sunny."), Reply("It is sunny, as I said."))

    response = respond(
        proxy,
        stream,
        input=QUESTION,
        tools=[WEATHER_FUNCTION, TIME_FUNCTION],
        tool_choice="required",
    )

    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["message"]
    assert text(response) == "It is sunny."
    assert len(upstream.chat_requests) == 2


def test_function_call_output_is_rendered_and_answered_in_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("It is sunny in Paris."))
    items = [{"role": "user", "content": QUESTION}, EARLIER_CALL, CALL_OUTPUT]

    response = respond(protocol_proxy, stream, input=items, tools=[WEATHER_FUNCTION])

    assert text(response) == "It is sunny in Paris." and calls(response) == []
    rendering = get_protocol(protocol)
    messages = upstream.chat_requests[0].json["messages"]
    assert messages[1:] == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": rendering.render_call("get_weather", {"city": "Paris"})},
        {"role": "user", "content": rendering.render_result("get_weather", CALL_ID, "sunny, 24 C")},
    ]


def test_previous_response_id_carries_the_conversation(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]), Reply("Sunny."))
    first = respond(proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])
    [call] = [item for item in first["output"] if item["type"] == "function_call"]

    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second = respond(
        proxy, stream, previous_response_id=first["id"], input=[output], tools=[WEATHER_FUNCTION]
    )

    assert text(second) == "Sunny."
    messages = upstream.chat_requests[1].json["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == QUESTION
    assert "Paris" in messages[2]["content"] and "sunny" in messages[3]["content"]


def test_item_reference_names_an_earlier_output_item(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Bonjour."), Reply("Au revoir."))
    first = respond(proxy, False, input="Say hello in French.")
    reference = {"type": "item_reference", "id": first["output"][0]["id"]}

    respond(proxy, False, input=[reference, {"role": "user", "content": "And goodbye?"}])

    assert upstream.chat_requests[1].json["messages"] == [
        {"role": "assistant", "content": "Bonjour."},
        {"role": "user", "content": "And goodbye?"},
    ]


def test_text_format_is_sent_as_response_format(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    text_format = {"type": "json_schema", "name": "place", "schema": schema, "strict": True}

    response = respond(proxy, False, input=QUESTION, text={"format": text_format})

    assert text(response) == '{"city": "Paris"}'
    assert upstream.chat_requests[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": schema, "strict": True},
    }


def test_unknown_reference_is_a_400_that_names_it_and_the_way_out(proxy: Proxy) -> None:
    body = {"model": MODEL, "input": [{"type": "item_reference", "id": "msg_gone"}]}

    answer = proxy.http.post("/v1/responses", json=body)

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert "msg_gone" in error["message"] and "store: false" in error["message"]
    assert (error["param"], error["code"]) == ("input[0]", "item_not_found")


def test_store_false_keeps_nothing_to_continue_from(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Hi."))
    first = respond(proxy, False, input="Hello", store=False)

    with pytest.raises(openai.BadRequestError) as raised:
        respond(proxy, False, input="Again", previous_response_id=first["id"])

    assert raised.value.code == "previous_response_not_found"
    assert len(upstream.chat_requests) == 1


def test_store_holds_only_the_configured_number_of_responses(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(response_store_size=1)
    upstream.script(Reply("One."), Reply("Two."))
    first = respond(proxy, False, input="1")
    respond(proxy, False, input="2")

    with pytest.raises(openai.BadRequestError, match=first["id"]):
        respond(proxy, False, input="3", previous_response_id=first["id"])


def test_stop_at_max_output_tokens_is_incomplete(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("It is sun", finish_reason="length"))

    response = respond(proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION], max_output_tokens=3)

    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert text(response) == "It is sun"
    assert upstream.chat_requests[0].json["max_tokens"] == 3


def test_request_without_tools_is_answered_as_the_model_wrote_it(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Hello ", "there."))

    response = respond(proxy, stream, input=[{"role": "developer", "content": "Greet."}])

    assert text(response) == "Hello there." and response["status"] == "completed"
    assert response["usage"]["output_tokens"] == USAGE["completion_tokens"]
    assert upstream.chat_requests[0].json["messages"] == [{"role": "system", "content": "Greet."}]


def test_upstream_reasoning_is_a_reasoning_item_before_the_message(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Sunny.", reasoning=("Paris is ", "sunny today.")))

    response = respond(proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])

    reasoning, message = response["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Paris is sunny today."}]
    assert message["type"] == "message" and text(response) == "Sunny."


def test_a_think_block_is_a_reasoning_item_when_no_tools_are_offered(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(think_as_reasoning=True)
    upstream.script(Reply("<think>Paris is ", "sunny today.</think>", "Sunny."))

    response = respond(proxy, stream, input=QUESTION)

    reasoning, message = response["output"]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Paris is sunny today."}]
    assert message["type"] == "message" and text(response) == "Sunny."


def test_request_with_nothing_to_answer_is_a_400(proxy: Proxy) -> None:
    answer = proxy.http.post("/v1/responses", json={"model": MODEL, "input": []})

    assert answer.status_code == 400 and answer.json()["error"]["param"] == "input"


def test_upstream_error_status_is_the_clients_error_status(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Fail(429, "slow down"))

    with pytest.raises(openai.RateLimitError, match="slow down"):
        respond(proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION])


def test_upstream_failure_mid_stream_ends_with_error_and_failed(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Drop("It is "))

    response = respond(proxy, True, input=QUESTION, tools=[WEATHER_FUNCTION])

    assert response["status"] == "failed" and response["error"]["message"]
    assert text(response) == "It is "


def test_client_key_is_required_as_for_chat_completions(start_proxy: StartProxy) -> None:
    proxy = start_proxy(proxy_api_keys="sk-right")

    answer = proxy.http.post("/v1/responses", json={"model": MODEL, "input": "hi"})

    assert answer.status_code == 401


def test_a_call_format_shown_as_an_example_is_text_and_a_fence_of_calls_after_prose_is_calls(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(SHOWN_CALL), Reply(PROSE_BEFORE_FENCE, FENCE_OF_CALLS))
    tools = [WEATHER_FUNCTION, TIME_FUNCTION]

    example = respond(protocol_proxy, stream, input=QUESTION, tools=tools)
    called = respond(protocol_proxy, stream, input=QUESTION, tools=tools)

    assert (text(example), calls(example)) == (SHOWN_CALL, [])
    assert (text(called), calls(called)) == (PROSE_BEFORE_FENCE, [UTC_TIME])
