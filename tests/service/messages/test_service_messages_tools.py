"""The Messages API's tool types and request shapes: Anthropic-defined client tools offered
with their documented schemas, server tools left out and counted (or refused), deferred
tools offered once a tool search loaded them, everything Claude Code sends accepted, images
passed on, and `count_tokens` estimating the rendered prompt."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from messages_client import QUESTION, TIME, WEATHER, anthropic_client, create, message_params
from observability import caught_logs, scrape
from servers import MODEL, Proxy, StartProxy
from upstream_server import PARIS_WEATHER, WEATHER_CALL, Reply, ScriptedUpstream, rendered_calls

from protocols import get_protocol

REQUEST_ID = "messages-1"
SERVER_TOOLS = [
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"type": "web_fetch_20250910", "name": "web_fetch"},
]
EDITOR = {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}
BASH = {"type": "bash_20250124", "name": "bash"}


def declared(upstream: ScriptedUpstream, request: int = 0) -> dict[str, Any]:
    """The tools the upstream's system prompt declares (JSON-mix: one JSON object a line,
    with its parameters; the example call has arguments)."""
    system = upstream.chat_requests[request].json["messages"][0]["content"]
    lines = [line for line in system.splitlines() if line.startswith('{"name": ')]
    return {tool["name"]: tool for tool in map(json.loads, lines) if "parameters" in tool}


def test_anthropic_defined_client_tools_are_offered_with_their_documented_schemas(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    edit = {"command": "create", "path": "/tmp/a.txt", "file_text": "hi"}
    upstream.script(Reply(rendered_calls("str_replace_based_edit_tool", edit)["json-mix"]))

    message = create(proxy, stream, tools=[EDITOR, BASH, WEATHER])

    assert [(b["name"], b["input"]) for b in message["content"]] == [
        ("str_replace_based_edit_tool", edit)
    ]
    tools = declared(upstream)
    assert list(tools) == ["str_replace_based_edit_tool", "bash", "get_weather"]
    editor = tools["str_replace_based_edit_tool"]["parameters"]
    assert editor["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert"]
    assert {"path", "file_text", "old_str", "new_str", "insert_line"} <= editor["properties"].keys()
    assert tools["bash"]["parameters"]["properties"].keys() == {"command", "restart"}


def test_server_tools_are_left_out_counted_and_noted_once_in_the_trace(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(debug_parser_mw="stream")
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    body = message_params(tools=[WEATHER, *SERVER_TOOLS])

    with caught_logs("toolcall_proxy.debug") as logs:
        answer = proxy.http.post("/v1/messages", json=body, headers={"X-Request-ID": REQUEST_ID})

    assert answer.status_code == 200, answer.text
    assert list(declared(upstream)) == ["get_weather"]
    notes = [line for line in logs.messages if "hosted tools left out" in line]
    assert notes == [f"[{REQUEST_ID}] hosted tools left out web_search, code_execution, web_fetch"]
    metrics = scrape(proxy.http)
    for family in ("web_search", "code_execution", "web_fetch"):
        assert metrics.value("toolcall_proxy_dropped_hosted_tools_total", type=family) == 1


def test_server_tools_are_a_400_naming_them_when_the_deployment_says_so(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(hosted_tools="reject")

    with pytest.raises(anthropic.BadRequestError) as raised:
        create(proxy, False, tools=[WEATHER, *SERVER_TOOLS])

    error = raised.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("tools[1]: tools of type 'web_search_20250305' run on")
    assert "HOSTED_TOOLS=reject" in error["message"]
    assert upstream.chat_requests == []


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ({"type": "computer_20250124", "name": "computer"}, "(it needs a screen)"),
        ({"type": "teleport_20990101", "name": "teleport"}, "(the proxy does not know it)"),
        ({"name": "f", "input_schema": "none"}, "input_schema must be a JSON schema object"),
        ({"input_schema": {"type": "object"}}, "a tool needs a name"),
    ],
    ids=["screen", "unknown-type", "bad-schema", "no-name"],
)
def test_tools_the_proxy_cannot_offer_are_a_400_naming_them(
    upstream: ScriptedUpstream, proxy: Proxy, tool: dict[str, Any], message: str
) -> None:
    answer = proxy.http.post("/v1/messages", json=message_params(tools=[WEATHER, tool]))

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and message in error["message"]
    assert error["message"].startswith("tools[1]")
    assert upstream.requests == []


def test_a_deferred_tool_is_offered_once_a_tool_reference_loaded_it(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    search = {
        "name": "ToolSearch",
        "description": "Load deferred tools.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    tools = [search, {**TIME, "defer_loading": True}]
    upstream.script(Reply("Searching."), Reply("Loaded."))
    loaded = [{"type": "tool_reference", "tool_name": "get_time"}]
    history = [
        QUESTION,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_s", "name": "ToolSearch", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_s", "content": loaded}],
        },
    ]

    create(proxy, False, tools=tools)
    create(proxy, False, tools=tools, messages=history)

    assert list(declared(upstream, 0)) == ["ToolSearch"]
    assert list(declared(upstream, 1)) == ["ToolSearch", "get_time"]
    assert "Tool loaded: get_time." in upstream.chat_requests[1].json["messages"][-1]["content"]


def claude_code_body(**fields: Any) -> dict[str, Any]:
    """A request shaped like Claude Code's (2.1.332, seen through a recording relay): system as
    text blocks with cache_control, a system message among the messages, a deferred tool,
    adaptive thinking, context management, output config, metadata, a string tool result."""
    write = {
        "name": "Write",
        "description": "Writes a file to the local filesystem.",
        "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"],
            "additionalProperties": False,
        },
    }
    placeholder = {
        "name": "DeferredToolPlaceholder",
        "description": "Reserved placeholder; never call this tool.",
        "input_schema": {"type": "object", "properties": {}},
        "defer_loading": True,
    }
    cache = {"type": "ephemeral"}
    body = {
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": True,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
            {"type": "text", "text": "You are a Claude agent.", "cache_control": cache},
            {"type": "text", "text": "Use the tools.", "cache_control": cache},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nBe kind.\n</system-reminder>\n"},
                    {"type": "text", "text": "Write hello.txt", "cache_control": cache},
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "# Environment\nLinux"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "", "signature": "c2ln"},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Write",
                        "input": {"file_path": "/w/hello.txt", "content": "hi"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "File created"}
                ],
            },
        ],
        "tools": [write, placeholder],
        "metadata": {"user_id": '{"device_id":"d","session_id":"s"}'},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "medium"},
    }
    return {**body, **fields}


CLAUDE_CODE_HEADERS = {
    "x-api-key": "unused",
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,"
    "context-management-2025-06-27,advanced-tool-use-2025-11-20,effort-2025-11-24",
    "anthropic-dangerous-direct-browser-access": "true",
    "x-app": "cli",
}


def test_a_request_shaped_like_claude_codes_is_answered(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Done."))

    with proxy.http.stream(
        "POST", "/v1/messages?beta=true", json=claude_code_body(), headers=CLAUDE_CODE_HEADERS
    ) as answer:
        assert answer.status_code == 200, answer.read()
        body = b"".join(answer.iter_bytes())

    assert b'"text_delta","text":"Done."' in body and b"event: message_stop" in body
    [sent] = upstream.chat_requests
    assert sent.json["model"] == "claude-opus-5-5" and sent.json["max_tokens"] == 128000
    for field in ("thinking", "context_management", "output_config", "metadata", "system"):
        assert field not in sent.json
    roles = [message["role"] for message in sent.json["messages"]]
    assert roles == ["system", "user", "system", "assistant", "user"]
    system = sent.json["messages"][0]["content"]
    # Claude Code's attribution block, first in `system`, is left out, as Anthropic leaves it.
    assert system.startswith("You are a Claude agent.\n") and "billing-header" not in system
    assert '"name": "Write"' in system and "DeferredToolPlaceholder" not in system
    assert sent.json["messages"][1]["content"].endswith("</system-reminder>\n\nWrite hello.txt")
    json_mix = get_protocol("json-mix")
    write = {"file_path": "/w/hello.txt", "content": "hi"}
    assert sent.json["messages"][3]["content"] == json_mix.render_call("Write", write)
    assert sent.json["messages"][4]["content"] == json_mix.render_result(
        "Write", "toolu_01", "File created"
    )


def test_images_are_passed_on_as_chat_image_parts(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("A red dot."))
    inline = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    content = [
        {"type": "image", "source": inline},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "text", "text": "What are these?"},
    ]

    create(proxy, False, messages=[{"role": "user", "content": content}])

    assert upstream.chat_requests[0].json["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {"type": "text", "text": "What are these?"},
            ],
        }
    ]


def test_stop_sequences_and_sampling_fields_reach_the_upstream(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("One, two"))
    sampling = {"temperature": 0.2, "top_p": 0.9, "top_k": 40, "metadata": {"user_id": "u"}}

    answer = proxy.http.post(
        "/v1/messages", json=message_params(stop_sequences=["three"], **sampling)
    )

    assert answer.status_code == 200, answer.text
    sent = upstream.chat_requests[0].json
    assert (sent["stop"], sent["temperature"], sent["top_p"], sent["top_k"]) == (
        ["three"],
        0.2,
        0.9,
        40,
    )
    assert "metadata" not in sent and "stop_sequences" not in sent


def test_count_tokens_estimates_the_rendered_prompt(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with anthropic_client(proxy) as client:
        bare = client.messages.count_tokens(model=MODEL, messages=[QUESTION])
        with_tools = client.messages.count_tokens(
            model=MODEL, messages=[QUESTION], tools=[WEATHER, TIME]
        )

    # "What is the weather in Paris?": 29 characters, 8 tokens, and 4 for the message.
    assert bare.input_tokens == 12
    rendered = get_protocol("json-mix").render_tools
    assert with_tools.input_tokens > bare.input_tokens + len(rendered([])) // 4
    assert upstream.requests == [], "counting asks nothing of the model"


def test_count_tokens_is_counted_under_its_own_route(proxy: Proxy) -> None:
    answer = proxy.http.post("/v1/messages/count_tokens", json=message_params(tools=[WEATHER]))

    assert answer.status_code == 200 and answer.json()["input_tokens"] > 0
    requests = scrape(proxy.http).value(
        "toolcall_proxy_requests_total", route="count_tokens", status_class="2xx"
    )
    assert requests == 1


def test_a_call_to_a_tool_with_no_schema_parses_like_any_other(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol]))

    message = create(
        protocol_proxy, True, tools=[{**WEATHER, "cache_control": {"type": "ephemeral"}}]
    )

    assert [(b["name"], b["input"]) for b in message["content"]] == [PARIS_WEATHER]


def test_a_tool_use_that_fails_its_schema_is_asked_for_again_unless_it_streamed(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    """The editor's `command` is an enum: "replace" is none of its values."""
    proxy = start_proxy(call_repair_retries=1)
    wrong = {"command": "replace", "path": "a.txt", "old_str": "a", "new_str": "b"}
    right = {**wrong, "command": "str_replace"}
    upstream.script(
        Reply(rendered_calls("str_replace_based_edit_tool", wrong)["json-mix"]),
        Reply(rendered_calls("str_replace_based_edit_tool", right)["json-mix"]),
    )

    message = create(proxy, stream, tools=[EDITOR])

    uses = [(block["name"], block["input"]) for block in message["content"]]
    assert uses == [("str_replace_based_edit_tool", wrong if stream else right)]
    assert len(upstream.chat_requests) == (1 if stream else 2)
    outcome = "sent" if stream else "repaired"
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_invalid_tool_calls_total", outcome=outcome) == 1


def test_a_strict_tool_is_held_to_its_whole_schema(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(call_repair_retries=1)
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}},
        "required": ["city"],
        "additionalProperties": False,
    }
    strict = {"name": "get_weather", "input_schema": schema, "strict": True}
    upstream.script(
        Reply(rendered_calls("get_weather", {"city": "P"})["json-mix"]),
        Reply(rendered_calls("get_weather", {"city": "Paris"})["json-mix"]),
    )

    message = create(proxy, False, tools=[strict])

    assert [block["input"] for block in message["content"]] == [{"city": "Paris"}]
    correction = upstream.chat_requests[1].json["messages"][-1]["content"]
    assert "city: 'P' is too short" in correction
