"""A Gemini API body decoded into the chat request the proxy serves: contents and their
calls and results (paired by id, or by name and order when there is none), the system
instruction, function declarations in either schema, built-in tools, the calling config and
the generation config, in camelCase or snake_case; a 400 naming the field for anything the
proxy cannot serve."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from service.exchange import ChoiceMode
from service.gemini import GeminiRequest, parse_count_tokens_request, parse_gemini_request
from service.settings import HostedTools
from service.wire import ProxyError

QUESTION = {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = {"name": "get_weather", "description": "Weather.", "parametersJsonSchema": WEATHER_SCHEMA}
TIME = {"name": "get_time", "parameters": {"type": "OBJECT", "properties": {}}}


def decoded(
    stream: bool = False, hosted: HostedTools = HostedTools.DROP, **body: Any
) -> GeminiRequest:
    body.setdefault("contents", [QUESTION])
    return parse_gemini_request(json.dumps(body).encode(), "m", stream=stream, hosted_tools=hosted)


def refused(**body: Any) -> ProxyError:
    with pytest.raises(ProxyError) as caught:
        decoded(**body)
    assert caught.value.status == 400
    return caught.value


def model_turn(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def user_turn(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        function_call["id"] = call_id
    return {"functionCall": function_call}


def result(name: str, response: Any, call_id: str | None = None) -> dict[str, Any]:
    function_response: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        function_response["id"] = call_id
    return {"functionResponse": function_response}


def test_a_turn_of_text_parts_is_one_user_message_under_the_system_instruction() -> None:
    asked = decoded(
        systemInstruction={"parts": [{"text": "Be terse."}, {"text": "Be kind."}]},
        contents=[user_turn({"text": "<context>"}, {"text": "Hello"})],
    )

    assert asked.chat.messages == [
        {"role": "system", "content": "Be terse.\nBe kind."},
        {"role": "user", "content": "<context>\nHello"},
    ]
    assert asked.chat.body["model"] == "m" and not asked.chat.stream


def test_a_content_without_a_role_is_the_users_and_a_plain_text_instruction_is_taken() -> None:
    asked = decoded(system_instruction="Be terse.", contents=[{"parts": [{"text": "Hi"}]}])

    assert asked.chat.messages == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
    ]


def test_calls_keep_their_ids_and_results_answer_them_by_id() -> None:
    asked = decoded(
        contents=[
            QUESTION,
            model_turn(
                {"text": "Let me check."},
                {**call("get_weather", {"city": "Paris"}, "c1"), "thoughtSignature": "skip"},
                call("get_weather", {"city": "Rome"}, "c2"),
            ),
            user_turn(
                result("get_weather", {"output": "rainy"}, "c2"),
                result("get_weather", {"output": "sunny"}, "c1"),
            ),
        ]
    )

    _question, assistant, *results = asked.chat.messages
    assert assistant == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
            },
        ],
    }
    assert [(message["tool_call_id"], message["content"]) for message in results] == [
        ("c2", "rainy"),
        ("c1", "sunny"),
    ]


def test_without_ids_results_answer_the_earliest_unanswered_call_of_their_name() -> None:
    asked = decoded(
        contents=[
            QUESTION,
            model_turn(
                call("get_weather", {"city": "Paris"}),
                call("get_time", {"zone": "UTC"}),
                call("get_weather", {"city": "Rome"}),
            ),
            user_turn(
                result("get_time", {"output": "noon"}),
                result("get_weather", {"output": "sunny"}),
                result("get_weather", {"output": "rainy"}),
            ),
        ]
    )

    calls = asked.chat.messages[1]["tool_calls"]
    call_ids = {json.loads(c["function"]["arguments"]).get("city", "time"): c["id"] for c in calls}
    assert len(set(call_ids.values())) == 3
    answered = [(m["tool_call_id"], m["content"]) for m in asked.chat.messages[2:]]
    assert answered == [
        (call_ids["time"], "noon"),
        (call_ids["Paris"], "sunny"),
        (call_ids["Rome"], "rainy"),
    ]


def test_an_id_less_history_gets_the_same_ids_every_time_it_is_sent() -> None:
    contents = [QUESTION, model_turn(call("get_time", {})), user_turn(result("get_time", {}))]

    first, again = decoded(contents=contents), decoded(contents=contents)

    assert first.chat.messages == again.chat.messages


def test_a_result_of_a_call_the_history_lacks_keeps_its_name_and_gets_an_id() -> None:
    asked = decoded(contents=[QUESTION, user_turn(result("get_time", {"output": "noon"}))])

    tool = asked.chat.messages[1]
    assert tool["role"] == "tool" and tool["name"] == "get_time" and tool["tool_call_id"]


@pytest.mark.parametrize(
    ("response", "content"),
    [
        ({"output": "sunny"}, "sunny"),
        ({"output": {"temp": 24}}, '{"temp":24}'),
        ({"error": "city not found"}, "Error: city not found"),
        ({"temp": 24, "sky": "clear"}, '{"temp":24,"sky":"clear"}'),
        (None, ""),
    ],
)
def test_a_results_output_or_error_or_whole_response_is_what_the_model_reads(
    response: Any, content: str
) -> None:
    asked = decoded(contents=[QUESTION, user_turn(result("get_weather", response))])

    assert asked.chat.messages[1]["content"] == content


def test_thoughts_are_left_out_and_a_turn_of_only_thoughts_is_no_message() -> None:
    asked = decoded(
        contents=[
            QUESTION,
            model_turn({"text": "Hmm, weather.", "thought": True}),
            model_turn({"text": "Pondering", "thought": True}, {"text": "Sunny."}),
            user_turn({"text": "Thanks"}),
        ]
    )

    assert [message["content"] for message in asked.chat.messages] == [
        "What is the weather in Paris?",
        "Sunny.",
        "Thanks",
    ]


def test_text_before_a_result_in_a_user_turn_stays_before_it() -> None:
    asked = decoded(
        contents=[
            QUESTION,
            model_turn(call("get_time", {}, "t")),
            user_turn(
                {"text": "Here:"}, result("get_time", {"output": "noon"}, "t"), {"text": "ok"}
            ),
        ]
    )

    assert [message["role"] for message in asked.chat.messages] == [
        "user",
        "assistant",
        "user",
        "tool",
        "user",
    ]


def test_an_inline_image_is_a_data_url_and_inline_text_is_text() -> None:
    note = base64.b64encode("Ünïcode notes".encode()).decode()
    asked = decoded(
        contents=[
            user_turn(
                {"text": "Look:"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"inline_data": {"mime_type": "text/plain", "data": note}},
            )
        ]
    )

    assert asked.chat.messages[0]["content"] == [
        {"type": "text", "text": "Look:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "text", "text": "Ünïcode notes"},
    ]


def test_an_image_a_function_returned_follows_its_result() -> None:
    image = {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/"}}
    response = {"name": "screenshot", "response": {"output": "taken"}, "parts": [image]}

    asked = decoded(contents=[QUESTION, user_turn({"functionResponse": response})])

    assert asked.chat.messages[1]["content"] == [
        {"type": "text", "text": "taken"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
    ]


@pytest.mark.parametrize(
    ("part", "param"),
    [
        (
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBE"}},
            "contents[0].parts[0].inlineData",
        ),
        (
            {"fileData": {"mimeType": "image/png", "fileUri": "files/abc"}},
            "contents[0].parts[0].fileData",
        ),
        ({"executableCode": {"code": "print(1)"}}, "contents[0].parts[0]"),
        (
            {"inlineData": {"mimeType": "text/plain", "data": "not base64!"}},
            "contents[0].parts[0].inlineData.data",
        ),
    ],
)
def test_media_the_upstream_cannot_read_is_a_400_naming_the_part(part: Any, param: str) -> None:
    assert refused(contents=[user_turn(part)]).param == param


def test_an_image_by_http_url_is_passed_by_url() -> None:
    image = {"file_data": {"mime_type": "image/png", "file_uri": "https://example.test/a.png"}}

    asked = decoded(contents=[user_turn(image)])

    assert asked.chat.messages[0]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://example.test/a.png"}}
    ]


@pytest.mark.parametrize(
    ("contents", "param"),
    [
        ([], "contents"),
        ([{"role": "system", "parts": [{"text": "x"}]}], "contents[0].role"),
        ([{"role": "user", "parts": "hi"}], "contents[0].parts"),
        ([model_turn({"functionCall": {"args": {}}})], "contents[0].parts[0].functionCall"),
        (
            [model_turn(call("f", {"a": 1}), {"functionCall": {"name": "g", "args": [1]}})],
            "contents[0].parts[1].functionCall.args",
        ),
        (
            [user_turn({"functionResponse": {"response": {}}})],
            "contents[0].parts[0].functionResponse",
        ),
        ([{"role": ["user"], "parts": [{"text": "x"}]}], "contents[0].role"),
        ([{"role": {"user": 1}, "parts": [{"text": "x"}]}], "contents[0].role"),
        ([user_turn({"inlineData": "aGk="})], "contents[0].parts[0].inlineData"),
        ([user_turn({"fileData": ["a.png"]})], "contents[0].parts[0].fileData"),
        (
            [user_turn({"functionResponse": {"name": "f", "response": {}, "parts": 5}})],
            "contents[0].parts[0].functionResponse.parts",
        ),
        (
            [user_turn({"functionResponse": {"name": "f", "parts": [{"inlineData": 5}]}})],
            "contents[0].parts[0].functionResponse.parts[0].inlineData",
        ),
    ],
)
def test_malformed_contents_are_a_400_naming_the_field(contents: Any, param: str) -> None:
    assert refused(contents=contents).param == param


def test_a_json_schema_declaration_is_taken_as_it_is_and_an_openapi_one_converted() -> None:
    openapi = {
        "name": "get_time",
        "parameters": {
            "type": "OBJECT",
            "properties": {"zone": {"type": "STRING", "nullable": True}},
            "required": ["zone"],
        },
    }
    asked = decoded(
        tools=[{"functionDeclarations": [WEATHER]}, {"function_declarations": [openapi]}]
    )

    assert asked.chat.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": WEATHER_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "parameters": {
                    "type": "object",
                    "required": ["zone"],
                    "properties": {"zone": {"type": ["string", "null"]}},
                },
            },
        },
    ]
    assert [tool.name for tool in asked.chat.tools] == ["get_weather", "get_time"]
    assert asked.chat.choice is ChoiceMode.AUTO


def test_the_python_sdks_snake_case_spelling_is_read_as_well() -> None:
    declaration = {"name": "get_weather", "parameters_json_schema": WEATHER_SCHEMA}
    asked = decoded(
        tools=[{"function_declarations": [declaration]}],
        tool_config={"function_calling_config": {"mode": "ANY"}},
        generation_config={
            "max_output_tokens": 64,
            "top_p": 0.5,
            "stop_sequences": ["END"],
            "thinking_config": {"include_thoughts": True},
        },
        system_instruction={"parts": [{"text": "Be terse."}]},
    )

    assert asked.chat.body["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA
    assert asked.chat.choice is ChoiceMode.NAMED and asked.thoughts
    assert (asked.chat.body["max_tokens"], asked.chat.body["top_p"]) == (64, 0.5)
    assert asked.chat.body["stop"] == ["END"]
    assert asked.chat.messages[0] == {"role": "system", "content": "Be terse."}


def test_built_in_tools_are_left_out_and_named_once_each() -> None:
    asked = decoded(
        tools=[
            {"googleSearch": {}, "functionDeclarations": [WEATHER]},
            {"code_execution": {}},
            {"urlContext": {}},
        ]
    )

    assert [tool["function"]["name"] for tool in asked.chat.body["tools"]] == ["get_weather"]
    assert asked.dropped == ("googleSearch", "codeExecution", "urlContext")


def test_with_hosted_tools_rejected_a_built_in_tool_is_a_400_naming_it() -> None:
    with pytest.raises(ProxyError) as caught:
        decoded(
            hosted=HostedTools.REJECT,
            tools=[{"functionDeclarations": [WEATHER]}, {"googleSearch": {}}],
        )

    assert caught.value.param == "tools[1].googleSearch"
    assert "HOSTED_TOOLS=reject" in caught.value.message


def test_only_built_in_tools_leave_a_request_without_tools() -> None:
    asked = decoded(tools=[{"googleSearch": {}}])

    assert "tools" not in asked.chat.body and asked.chat.tools == ()


@pytest.mark.parametrize(
    ("config", "choice", "named", "offered"),
    [
        ({"mode": "AUTO"}, ChoiceMode.AUTO, None, ["get_weather", "get_time"]),
        ({"mode": "VALIDATED"}, ChoiceMode.AUTO, None, ["get_weather", "get_time"]),
        ({"mode": "none"}, ChoiceMode.NONE, None, ["get_weather", "get_time"]),
        ({"mode": "ANY"}, ChoiceMode.REQUIRED, None, ["get_weather", "get_time"]),
        (
            {"mode": "ANY", "allowedFunctionNames": ["get_time"]},
            ChoiceMode.NAMED,
            "get_time",
            ["get_time"],
        ),
        (
            {"mode": "AUTO", "allowed_function_names": ["get_time"]},
            ChoiceMode.AUTO,
            None,
            ["get_time"],
        ),
    ],
)
def test_the_calling_config_is_chats_tool_choice_and_narrows_the_tools_offered(
    config: dict[str, Any], choice: ChoiceMode, named: str | None, offered: list[str]
) -> None:
    asked = decoded(
        tools=[{"functionDeclarations": [WEATHER, TIME]}],
        toolConfig={"functionCallingConfig": config},
    )

    assert asked.chat.choice is choice and asked.chat.named_tool == named
    assert [tool.name for tool in asked.chat.tools] == offered


def test_any_with_several_allowed_functions_forces_a_call_of_one_of_them() -> None:
    third = {"name": "get_news", "parametersJsonSchema": {"type": "object"}}
    allowed = {"mode": "ANY", "allowedFunctionNames": ["get_time", "get_weather"]}

    asked = decoded(
        tools=[{"functionDeclarations": [WEATHER, TIME, third]}],
        toolConfig={"functionCallingConfig": allowed},
    )

    assert asked.chat.choice is ChoiceMode.REQUIRED
    assert [tool.name for tool in asked.chat.tools] == ["get_weather", "get_time"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tools": {"functionDeclarations": []}}, "tools"),
        (
            {"tools": [{"functionDeclarations": [{"description": "x"}]}]},
            "tools[0].functionDeclarations[0].name",
        ),
        ({"tools": [{"functionDeclarations": [WEATHER, WEATHER]}]}, "tools"),
        (
            {"tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "TUPLE"}}]}]},
            "tools[0].functionDeclarations[0].parameters.type",
        ),
        ({"tools": [{"computerUse": {}}]}, "tools[0].computerUse"),
        (
            {
                "tools": [{"functionDeclarations": [WEATHER]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ALWAYS"}},
            },
            "toolConfig.functionCallingConfig.mode",
        ),
        (
            {
                "tools": [{"functionDeclarations": [WEATHER]}],
                "toolConfig": {
                    "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_news"]}
                },
            },
            "toolConfig.functionCallingConfig.allowedFunctionNames",
        ),
        (
            {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
            "toolConfig.functionCallingConfig.mode",
        ),
        ({"toolConfig": "ANY"}, "toolConfig"),
        ({"toolConfig": [{"mode": "ANY"}]}, "toolConfig"),
        (
            {"toolConfig": {"functionCallingConfig": {"mode": ["ANY"]}}},
            "toolConfig.functionCallingConfig.mode",
        ),
        (
            {"toolConfig": {"functionCallingConfig": {"mode": {"ANY": True}}}},
            "toolConfig.functionCallingConfig.mode",
        ),
        ({"generationConfig": {"candidateCount": 2}}, "generationConfig.candidateCount"),
        ({"generationConfig": {"stopSequences": "END"}}, "generationConfig.stopSequences"),
        ({"generationConfig": []}, "generationConfig"),
        ({"cachedContent": "cachedContents/abc"}, "cachedContent"),
    ],
)
def test_what_the_proxy_cannot_serve_is_a_400_naming_the_field(
    body: dict[str, Any], param: str
) -> None:
    assert refused(**body).param == param


def test_generation_config_becomes_chats_sampling_fields_and_unknown_fields_are_ignored() -> None:
    asked = decoded(
        stream=True,
        safetySettings=[{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        labels={"team": "a"},
        generationConfig={
            "temperature": 0.2,
            "topP": 0.9,
            "topK": 40,
            "maxOutputTokens": 512,
            "stopSequences": ["END"],
            "candidateCount": 1,
            "seed": 7,
            "presencePenalty": 0.1,
            "frequencyPenalty": 0.3,
            "responseModalities": ["TEXT"],
            "thinkingConfig": {"thinkingBudget": 1024},
        },
    )

    body = asked.chat.body
    assert {key: body[key] for key in body if key not in ("model", "messages")} == {
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "max_tokens": 512,
        "stop": ["END"],
        "seed": 7,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.3,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert not asked.thoughts


@pytest.mark.parametrize(
    ("config", "response_format"),
    [
        ({"responseMimeType": "application/json"}, {"type": "json_object"}),
        (
            {"responseMimeType": "application/json", "responseJsonSchema": WEATHER_SCHEMA},
            {"type": "json_schema", "json_schema": {"name": "response", "schema": WEATHER_SCHEMA}},
        ),
        (
            {
                "responseMimeType": "application/json",
                "responseSchema": {"type": "ARRAY", "items": {"type": "STRING"}},
            },
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "response",
                    "schema": {"type": "array", "items": {"type": "string"}},
                },
            },
        ),
        ({"responseMimeType": "text/plain"}, None),
    ],
)
def test_a_json_answer_asked_for_is_chats_response_format(
    config: dict[str, Any], response_format: dict[str, Any] | None
) -> None:
    assert decoded(generationConfig=config).chat.body.get("response_format") == response_format


def test_count_tokens_takes_contents_or_a_whole_generate_content_request() -> None:
    bare = parse_count_tokens_request(json.dumps({"contents": [QUESTION]}).encode(), "m")
    whole = {
        "generateContentRequest": {
            "model": "models/m",
            "contents": [QUESTION],
            "systemInstruction": {"parts": [{"text": "Be terse."}]},
            "tools": [{"functionDeclarations": [WEATHER]}],
        }
    }
    nested = parse_count_tokens_request(json.dumps(whole).encode(), "m")

    assert bare.chat.messages == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert nested.chat.messages[0] == {"role": "system", "content": "Be terse."}
    assert [tool.name for tool in nested.chat.tools] == ["get_weather"]
