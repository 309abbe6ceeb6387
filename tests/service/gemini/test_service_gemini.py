"""`generateContent` and `streamGenerateContent` through the official google-genai SDK: tools
rendered into the prompt, the model's calls answered as `functionCall` parts, streamed or
whole, results rendered back into the history with ids or without, forced calls, thoughts,
token counts, upstream failures before and during a stream; the upstream only ever gets
tools-free chat completions."""

from __future__ import annotations

import json

import pytest
from gemini_client import (
    KEY_FORM_NAMES,
    KEY_FORMS,
    PROXY_KEY,
    QUESTION,
    TIME,
    TOOLS,
    WEATHER,
    gemini_client,
    generate,
)
from google.genai import errors, types
from observability import scrape
from servers import MODEL, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
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
from service.exchange import estimated_prompt_tokens

NO_CALLING = types.AutomaticFunctionCallingConfig(disable=True)


def ask(proxy: Proxy, stream: bool, **config: object):  # type: ignore[no-untyped-def]
    config.setdefault("tools", TOOLS)
    return generate(proxy, stream, automatic_function_calling=NO_CALLING, **config)


def test_model_call_is_a_function_call_part_after_its_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL[protocol]))

    answer = ask(protocol_proxy, stream, tools=[types.Tool(function_declarations=[WEATHER])])

    assert answer.text.strip() == "Let me check."
    assert answer.called == [PARIS_WEATHER]
    assert (answer.calls[0].id or "").startswith("call_")
    assert answer.finish_reason == types.FinishReason.STOP
    assert answer.usage is not None
    assert (answer.usage.prompt_token_count, answer.usage.candidates_token_count) == (
        USAGE["prompt_tokens"],
        USAGE["completion_tokens"],
    )
    assert answer.usage.total_token_count == USAGE["total_tokens"]
    assert answer.responses[0].model_version == MODEL
    [sent] = upstream.chat_requests
    assert "tools" not in sent.json and "tool_choice" not in sent.json
    assert sent.json.get("stream", False) is stream
    tools = get_protocol(protocol).render_tools([ToolSpec.from_openai(WEATHER_TOOL)])
    assert sent.json["messages"] == [
        {"role": "system", "content": tools},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]


def test_text_streams_in_pieces_and_ends_the_turn(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("It is ", "sunny ", "in Paris."))

    answer = ask(proxy, True, system_instruction="Be terse.")

    assert answer.text == "It is sunny in Paris." and answer.calls == []
    assert len(answer.responses) >= 3, "text went out as it came"
    assert answer.finish_reason == types.FinishReason.STOP
    system = upstream.chat_requests[0].json["messages"][0]["content"]
    assert system.startswith("Be terse.\n\n")


@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "no-ids"])
def test_a_tool_round_trip_renders_the_call_and_its_result_into_the_history(
    upstream: ScriptedUpstream,
    protocol_proxy: Proxy,
    protocol: str,
    stream: bool,
    with_ids: bool,
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol]), Reply("Sunny, 24 C in Paris."))

    first = ask(protocol_proxy, stream)
    [call] = first.calls
    model_turn = first.content
    if not with_ids:  # Pi's Google provider drops them both ways
        model_turn = types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name=call.name, args=call.args))],
        )
    result = types.FunctionResponse(
        id=call.id if with_ids else None, name=call.name, response={"output": "sunny, 24 C"}
    )
    history = [
        QUESTION,
        model_turn,
        types.Content(role="user", parts=[types.Part(function_response=result)]),
    ]
    final = ask(protocol_proxy, stream, contents=history)

    assert final.text == "Sunny, 24 C in Paris." and final.calls == []
    rendered = get_protocol(protocol)
    second = upstream.chat_requests[1].json["messages"]
    assert second[2] == {"role": "assistant", "content": rendered.render_call(*PARIS_WEATHER)}
    # Without ids the call is named by its place (turn 1, part 0) and the result paired to it.
    call_id = call.id if with_ids else "call_1_0"
    result_text = rendered.render_result("get_weather", call_id, "sunny, 24 C")
    assert second[3] == {"role": "user", "content": result_text}


def test_several_calls_in_one_answer_are_several_function_call_parts(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Checking both. ", WEATHER_CALL[protocol], TIME_CALL[protocol]))

    answer = ask(protocol_proxy, stream)

    assert answer.called == [PARIS_WEATHER, UTC_TIME]
    assert answer.finish_reason == types.FinishReason.STOP


def test_any_with_one_allowed_function_forces_that_call(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(json.dumps({"name": "get_time", "arguments": {"zone": "UTC"}})))
    allowed = types.FunctionCallingConfig(mode="ANY", allowed_function_names=["get_time"])

    answer = ask(proxy, stream, tool_config=types.ToolConfig(function_calling_config=allowed))

    assert answer.called == [UTC_TIME] and answer.text == ""
    [sent] = upstream.chat_requests
    assert sent.json["stream"] is False, "a forced call is asked for whole"
    prompt = render_forced_call_prompt([ToolSpec.from_openai(TIME_TOOL)], named="get_time")
    assert sent.json["messages"][0] == {"role": "system", "content": prompt}


def test_any_asks_again_when_the_reply_holds_no_call(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply("I would rather chat."),
        Reply(json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})),
    )
    forced = types.FunctionCallingConfig(mode="ANY")

    answer = ask(proxy, True, tool_config=types.ToolConfig(function_calling_config=forced))

    assert answer.called == [PARIS_WEATHER]
    assert len(upstream.chat_requests) == 2


def test_none_offers_no_tools_and_a_call_written_as_text_stays_text(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    none = types.FunctionCallingConfig(mode="NONE")

    answer = ask(proxy, stream, tool_config=types.ToolConfig(function_calling_config=none))

    assert answer.calls == [] and answer.text == WEATHER_CALL["json-mix"]
    [sent] = upstream.chat_requests
    assert sent.json["messages"] == [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.mark.parametrize("include_thoughts", [True, False])
def test_reasoning_is_thought_parts_only_when_asked_for(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, include_thoughts: bool
) -> None:
    upstream.script(Reply("Sunny.", reasoning=("Paris is ", "in France.")))
    thinking = types.ThinkingConfig(include_thoughts=include_thoughts)

    answer = ask(proxy, stream, thinking_config=thinking)

    assert answer.text == "Sunny."
    assert answer.thoughts == ("Paris is in France." if include_thoughts else "")


def test_count_tokens_estimates_the_prompt_the_upstream_would_be_sent(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with gemini_client(proxy) as client:
        counted = client.models.count_tokens(model=MODEL, contents=[QUESTION])

    expected = estimated_prompt_tokens(
        {"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}
    )
    assert counted.total_tokens == expected
    assert upstream.requests == []


def test_count_tokens_counts_the_tools_written_into_a_whole_requests_prompt(proxy: Proxy) -> None:
    whole = {
        "generateContentRequest": {
            "model": f"models/{MODEL}",
            "contents": [{"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}],
            "tools": [{"functionDeclarations": [WEATHER.model_dump(exclude_none=True)]}],
        }
    }
    bare = {"contents": whole["generateContentRequest"]["contents"]}

    with_tools = proxy.http.post(f"/v1beta/models/{MODEL}:countTokens", json=whole)
    without = proxy.http.post(f"/v1beta/models/{MODEL}:countTokens", json=bare)

    assert with_tools.status_code == without.status_code == 200
    assert with_tools.json()["totalTokens"] > without.json()["totalTokens"] > 0


@pytest.mark.parametrize(
    ("status", "raised", "name"),
    [
        (429, errors.ClientError, "RESOURCE_EXHAUSTED"),
        (400, errors.ClientError, "INVALID_ARGUMENT"),
        (503, errors.ServerError, "UNAVAILABLE"),
    ],
)
def test_an_upstream_error_before_the_answer_is_raised_with_its_status(
    upstream: ScriptedUpstream,
    proxy: Proxy,
    stream: bool,
    status: int,
    raised: type[errors.APIError],
    name: str,
) -> None:
    upstream.script(Fail(status, "upstream says no"))

    with pytest.raises(raised) as caught:
        ask(proxy, stream)

    assert caught.value.code == status and caught.value.status == name
    assert "upstream says no" in (caught.value.message or "")


def test_a_stream_that_breaks_mid_way_ends_with_an_error_the_sdk_raises(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Drop("It is ", "sunny"))
    received: list[types.GenerateContentResponse] = []

    with gemini_client(proxy) as client, pytest.raises(errors.ServerError) as caught:
        for response in client.models.generate_content_stream(model=MODEL, contents=[QUESTION]):
            received.append(response)

    assert "".join(response.text or "" for response in received) == "It is sunny"
    assert caught.value.code == 503 and caught.value.status == "UNAVAILABLE"


# google.rpc.Code's names and the HTTP status Google maps each to (google/rpc/code.proto).
GOOGLE_PAIRS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


@pytest.mark.parametrize(
    ("upstream_status", "name"),
    [
        (400, "INVALID_ARGUMENT"),
        (404, "NOT_FOUND"),
        (413, "INVALID_ARGUMENT"),
        (422, "FAILED_PRECONDITION"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (502, "UNAVAILABLE"),
        (503, "UNAVAILABLE"),
        (504, "DEADLINE_EXCEEDED"),
    ],
)
def test_an_error_is_answered_with_a_code_and_status_google_pairs(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, upstream_status: int, name: str
) -> None:
    upstream.script(Fail(upstream_status, "upstream says no"))
    method = "streamGenerateContent" if stream else "generateContent"
    body = {"contents": [{"parts": [{"text": "Hi"}]}]}

    response = proxy.http.post(f"/v1beta/models/{MODEL}:{method}", params={"alt": "sse"}, json=body)

    error = response.json()["error"]
    assert error["status"] == name
    assert response.status_code == error["code"] == GOOGLE_PAIRS[name]


def test_without_alt_sse_the_stream_is_one_json_array(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [WEATHER.model_dump(exclude_none=True)]}],
    }

    response = proxy.http.post(f"/v1beta/models/{MODEL}:streamGenerateContent", json=body)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    responses = response.json()
    parts = [part for item in responses for part in item["candidates"][0]["content"]["parts"]]
    assert [part["functionCall"]["args"] for part in parts if "functionCall" in part] == [
        {"city": "Paris"}
    ]
    assert responses[-1]["candidates"][0]["finishReason"] == "STOP"


def test_the_stream_is_data_events_only(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("Hi ", "there."))
    body = {"contents": [{"parts": [{"text": "Hi"}]}]}

    with proxy.http.stream(
        "POST", f"/v1beta/models/{MODEL}:streamGenerateContent", params={"alt": "sse"}, json=body
    ) as response:
        lines = list(response.iter_lines())

    assert response.headers["content-type"].startswith("text/event-stream")
    assert all(line.startswith("data: {") for line in lines if line), lines
    assert "[DONE]" not in "".join(lines)


@pytest.mark.parametrize("api_version", ["v1", "v1beta"])
def test_both_api_versions_answer(
    upstream: ScriptedUpstream, proxy: Proxy, api_version: str
) -> None:
    upstream.script(Reply("Hi."))

    with gemini_client(proxy, api_version=api_version) as client:
        answer = client.models.generate_content(model=f"models/{MODEL}", contents="Hi")

    assert answer.text == "Hi."
    assert upstream.chat_requests[0].json["model"] == MODEL


@pytest.mark.parametrize("sent", KEY_FORMS, ids=KEY_FORM_NAMES)
def test_each_form_of_the_key_is_let_in_and_none_reaches_the_upstream(
    upstream: ScriptedUpstream, start_proxy: StartProxy, sent: dict[str, dict[str, str]]
) -> None:
    proxy = start_proxy(proxy_api_keys=[PROXY_KEY])
    upstream.script(Reply("Hi."))
    body = {"contents": [{"parts": [{"text": "Hi"}]}]}

    answered = proxy.http.post(f"/v1beta/models/{MODEL}:generateContent", json=body, **sent)
    refused = proxy.http.post(f"/v1beta/models/{MODEL}:generateContent", json=body)

    assert answered.status_code == 200, answered.text
    assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    [asked] = upstream.chat_requests
    assert PROXY_KEY not in json.dumps(asked.headers) + asked.query


def test_a_bad_request_is_a_400_in_googles_shape_naming_the_field(proxy: Proxy) -> None:
    with gemini_client(proxy) as client, pytest.raises(errors.ClientError) as caught:
        client.models.generate_content(
            model=MODEL,
            contents=[
                types.Content(
                    role="user",
                    parts=[
                        types.Part(
                            inline_data=types.Blob(mime_type="application/pdf", data=b"%PDF")
                        )
                    ],
                )
            ],
        )

    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert (caught.value.message or "").startswith("contents[0].parts[0].inlineData:")


def test_an_unknown_method_is_a_404_in_googles_shape(proxy: Proxy) -> None:
    response = proxy.http.post(f"/v1beta/models/{MODEL}:embedContent", json={})

    assert response.status_code == 404
    assert response.json()["error"]["status"] == "NOT_FOUND"


def test_an_unknown_model_asked_by_a_gemini_client_on_v1_is_a_404_in_googles_shape(
    proxy: Proxy,
) -> None:
    response = proxy.http.get("/v1/models/no-such-model", params={"key": "k"})

    assert response.status_code == 404
    assert response.json()["error"]["status"] == "NOT_FOUND"


def test_built_in_tools_are_left_out_and_counted(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("Sunny."))
    tools = [*TOOLS, types.Tool(google_search=types.GoogleSearch())]

    answer = ask(proxy, False, tools=tools)

    assert answer.text == "Sunny."
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_dropped_hosted_tools_total", type="googleSearch") == 1
    assert TIME.name in upstream.chat_requests[0].json["messages"][0]["content"]
