"""`POST /v1/responses` with every tool type an agent such as Codex sends: custom (free-form)
tools answered as custom_tool_call items, namespaces flattened and their calls answered with
their namespace, a client-executed tool_search answered as a tool_search_call whose loaded
tools become callable, hosted tools left out (counted, traced) or refused, and the rest of
what Codex's requests hold accepted."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from observability import caught_logs, scrape
from responses_client import (
    PATCH_CUSTOM,
    WEATHER_FUNCTION,
    calls,
    custom_calls,
    respond,
    response_from_events,
    text,
)
from servers import MODEL, PATCH_GRAMMAR, Proxy, StartProxy
from upstream_server import (
    PARIS_WEATHER,
    PATCH,
    PATCH_CALL,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
    rendered_calls,
)

from protocols import get_protocol

QUESTION = "What is the weather in Paris?"
SPAWN = {
    "type": "function",
    "name": "spawn_agent",
    "description": "Spawn a sub-agent for a task.",
    "parameters": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [SPAWN],
}
SPAWN_CALL = rendered_calls("spawn_agent", {"message": "Look up the weather."})
HOSTED = [
    {"type": "web_search", "external_web_access": True},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "tool_search"},  # run by the server: hosted too
]
TOOL_SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "Search the deferred tools.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}
REQUEST_ID = "codex-turn-1"


def system_prompt(upstream: ScriptedUpstream, index: int = 0) -> str:
    content: str = upstream.chat_requests[index].json["messages"][0]["content"]
    return content


def declared_names(prompt: str) -> list[str]:
    """The tools the prompt declares, one JSON object a line."""
    return [
        json.loads(line)["name"]
        for line in prompt.splitlines()
        if line.startswith('{"name"') and '"parameters"' in line
    ]


def test_custom_tool_call_is_a_custom_tool_call_item_with_the_raw_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Patching. ", PATCH_CALL[protocol]))

    response = respond(
        protocol_proxy, stream, input="Add a.py.", tools=[WEATHER_FUNCTION, PATCH_CUSTOM]
    )

    assert [item["type"] for item in response["output"]] == ["message", "custom_tool_call"]
    assert custom_calls(response) == [("apply_patch", PATCH)]
    call = response["output"][1]
    assert call["id"].startswith("ctc_") and call["call_id"].startswith("call_")
    assert call["status"] == "completed" and call.get("namespace") is None
    prompt = system_prompt(upstream)
    assert "apply_patch" in declared_names(prompt) and "Lark grammar" in prompt
    assert PATCH_GRAMMAR.replace('"', '\\"') in prompt


def test_a_streamed_custom_call_sends_its_input_as_deltas_then_done(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(small_call_chars=0)  # stream even a patch this small
    call = PATCH_CALL["json-mix"]
    upstream.script(Reply(*(call[at : at + 9] for at in range(0, len(call), 9))))

    with proxy.client.responses.create(
        model=MODEL, input="Add a.py.", tools=[PATCH_CUSTOM], stream=True
    ) as stream:
        events = [event.model_dump() for event in stream]

    kinds = [event["type"] for event in events]
    deltas = [e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta"]
    assert len(deltas) > 1 and "".join(deltas) == PATCH
    first, last = kinds.index("response.output_item.added"), kinds.index("response.completed")
    assert set(kinds[first + 1 : last]) == {
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.output_item.done",
    }
    assert kinds[last - 2 : last] == [
        "response.custom_tool_call_input.done",
        "response.output_item.done",
    ]
    added = events[first]["item"]
    assert (added["type"], added["name"], added["input"]) == ("custom_tool_call", "apply_patch", "")
    assert custom_calls(response_from_events(events)) == [("apply_patch", PATCH)]


def test_custom_call_and_its_output_are_rendered_into_the_history(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply("Added a.py."))
    items = [
        {"role": "user", "content": "Add a.py."},
        {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Success."},
    ]

    respond(protocol_proxy, False, input=items, tools=[PATCH_CUSTOM])

    rendering = get_protocol(protocol)
    assert upstream.chat_requests[0].json["messages"][1:] == [
        {"role": "user", "content": "Add a.py."},
        {"role": "assistant", "content": PATCH_CALL[protocol]},
        {"role": "user", "content": rendering.render_result("apply_patch", "call_p", "Success.")},
    ]


def test_a_named_custom_tool_choice_forces_one_custom_call(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(json.dumps({"name": "apply_patch", "arguments": {"input": PATCH}})))

    response = respond(
        proxy,
        stream,
        input="Add a.py.",
        tools=[WEATHER_FUNCTION, PATCH_CUSTOM],
        tool_choice={"type": "custom", "name": "apply_patch"},
    )

    assert custom_calls(response) == [("apply_patch", PATCH)] and calls(response) == []


def test_namespace_tools_are_offered_by_their_names_and_answered_with_their_namespace(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply(SPAWN_CALL[protocol]))

    response = respond(protocol_proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION, AGENTS])

    [call] = response["output"]
    assert (call["type"], call["name"], call["namespace"]) == (
        "function_call",
        "spawn_agent",
        "multi_agent_v1",
    )
    assert json.loads(call["arguments"]) == {"message": "Look up the weather."}
    prompt = system_prompt(upstream)
    assert declared_names(prompt) == ["get_weather", "spawn_agent"]
    assert "Tools for spawning and managing sub-agents.\\n\\nSpawn a sub-agent" in prompt


def test_a_namespace_tool_named_like_another_tool_is_offered_as_namespace_dot_name(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    lookup = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    forecasts = {"type": "namespace", "name": "forecasts", "description": "", "tools": [lookup]}
    qualified = get_protocol("json-mix").render_call("forecasts.get_weather", {})
    upstream.script(Reply(qualified, WEATHER_CALL["json-mix"]), Reply("Sunny."))
    tools = [WEATHER_FUNCTION, forecasts]

    first = respond(proxy, False, input=QUESTION, tools=tools)
    respond(proxy, False, input=QUESTION, tools=tools, previous_response_id=first["id"])

    assert [(item["name"], item.get("namespace")) for item in first["output"]] == [
        ("get_weather", "forecasts"),
        ("get_weather", None),
    ]
    assert declared_names(system_prompt(upstream)) == ["get_weather", "forecasts.get_weather"]
    history = upstream.chat_requests[1].json["messages"][2]["content"]
    assert history == f"{qualified}\n{WEATHER_CALL['json-mix']}"


@pytest.mark.parametrize("previous_tools", [[], [AGENTS]], ids=["loaded", "also-declared"])
def test_client_tool_search_is_a_tool_search_call_whose_loaded_tools_become_callable(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, previous_tools: list[Any]
) -> None:
    search = get_protocol("json-mix").render_call("tool_search", {"query": "sub-agents"})
    upstream.script(Reply(search), Reply(SPAWN_CALL["json-mix"]))
    tools = [WEATHER_FUNCTION, TOOL_SEARCH, *HOSTED[:1], *previous_tools]

    first = respond(proxy, stream, input=QUESTION, tools=tools)
    [call] = first["output"]
    assert (call["type"], call["execution"], call["arguments"]) == (
        "tool_search_call",
        "client",
        {"query": "sub-agents"},
    )
    loaded = {
        "type": "tool_search_output",
        "call_id": call["call_id"],
        "execution": "client",
        "status": "completed",
        "tools": [AGENTS],
    }
    items = [{"role": "user", "content": QUESTION}, call, loaded]
    second = respond(proxy, stream, input=items, tools=tools)

    assert (second["output"][0]["name"], second["output"][0]["namespace"]) == (
        "spawn_agent",
        "multi_agent_v1",
    )
    assert declared_names(system_prompt(upstream, 1)) == [
        "get_weather",
        "tool_search",
        "spawn_agent",
    ]
    history = upstream.chat_requests[1].json["messages"][2:]
    assert history[0] == {"role": "assistant", "content": search}
    assert "Tools loaded: spawn_agent." in history[1]["content"]


def test_hosted_tools_are_left_out_counted_and_noted_once_in_the_trace(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(debug_parser_mw="stream")
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    body = {"model": MODEL, "input": QUESTION, "tools": [WEATHER_FUNCTION, *HOSTED]}

    with caught_logs("toolcall_proxy.debug") as logs:
        answer = proxy.http.post("/v1/responses", json=body, headers={"X-Request-ID": REQUEST_ID})

    assert answer.status_code == 200 and calls(answer.json()) == [PARIS_WEATHER]
    assert declared_names(system_prompt(upstream)) == ["get_weather"]
    notes = [line for line in logs.messages if "hosted tools left out" in line]
    assert notes == [f"[{REQUEST_ID}] hosted tools left out web_search, file_search, tool_search"]
    metrics = scrape(proxy.http)
    for kind in ("web_search", "file_search", "tool_search"):
        assert metrics.value("toolcall_proxy_dropped_hosted_tools_total", type=kind) == 1


def test_hosted_tools_are_a_400_naming_them_when_the_deployment_says_so(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(hosted_tools="reject")

    with pytest.raises(openai.BadRequestError) as raised:
        respond(proxy, False, input=QUESTION, tools=[WEATHER_FUNCTION, *HOSTED])

    assert raised.value.body["param"] == "tools[1]"  # type: ignore[index]
    assert "'web_search'" in raised.value.message and "HOSTED_TOOLS" in raised.value.message
    assert upstream.chat_requests == []


@pytest.mark.parametrize(
    ("tool", "param", "message"),
    [
        ({"type": "local_shell"}, "tools[0]", "the proxy offers function, custom and namespace"),
        (
            {"type": "namespace", "name": "n", "tools": [{"type": "mcp"}]},
            "tools[0].tools[0]",
            "tools of type 'mcp' are not supported",
        ),
        ({"type": "namespace", "tools": [SPAWN]}, "tools[0]", "a namespace tool needs a name"),
        (
            {"type": "namespace", "name": "n", "tools": [{**SPAWN, "parameters": "none"}]},
            "tools[0].tools[0].parameters",
            "parameters must be a JSON schema object",
        ),
    ],
    ids=[
        "client-built-in",
        "hosted-in-a-namespace",
        "namespace-without-name",
        "parameters-not-a-schema",
    ],
)
def test_tools_the_proxy_cannot_offer_are_a_400_naming_them(
    proxy: Proxy, tool: dict[str, Any], param: str, message: str
) -> None:
    body = {"model": MODEL, "input": QUESTION, "tools": [tool]}

    answer = proxy.http.post("/v1/responses", json=body)

    error = answer.json()["error"]
    assert answer.status_code == 400 and error["param"] == param and message in error["message"]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch"},
            "a custom_tool_call needs a string call_id and name and input",
        ),
        (
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "spawn_agent",
                "arguments": "{}",
                "namespace": ["multi_agent_v1"],
            },
            "a function_call's namespace must be a string",
        ),
        (
            {"type": "tool_search_output", "call_id": "call_1", "tools": None},
            "a tool_search_output needs an array of tools",
        ),
    ],
    ids=["custom-call-without-input", "namespace-not-a-string", "tool-search-without-tools"],
)
def test_a_malformed_call_item_is_a_400_saying_what_it_lacks(
    proxy: Proxy, item: dict[str, Any], message: str
) -> None:
    body = {"model": MODEL, "input": [{"role": "user", "content": QUESTION}, item]}

    answer = proxy.http.post("/v1/responses", json=body)

    error = answer.json()["error"]
    assert answer.status_code == 400 and error["param"] == "input[1]"
    assert error["message"] == message


def test_a_request_shaped_like_codexs_is_answered(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Paris is sunny."))
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": None,
        "encrypted_content": "gAAAAB-opaque",
    }
    body = {
        "model": "gpt-5.5",
        "instructions": "You are a coding agent.",
        "input": [
            {
                "type": "message",
                "id": "msg_dev",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Sandbox: none."}],
            },
            {
                "type": "message",
                "id": "msg_user",
                "role": "user",
                "content": [{"type": "input_text", "text": QUESTION}],
            },
            reasoning,
        ],
        "tools": [WEATHER_FUNCTION, PATCH_CUSTOM, AGENTS, TOOL_SEARCH, *HOSTED[:1]],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": stream,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thread-1",
        "text": {"verbosity": "low"},
        "client_metadata": {"x-codex-turn-metadata": "{}", "session_id": "thread-1"},
    }

    answer = proxy.http.post("/v1/responses", json=body)

    assert answer.status_code == 200, answer.text
    if stream:
        events = [
            json.loads(line.removeprefix("data: "))
            for line in answer.text.splitlines()
            if line.startswith("data: ")
        ]
        response = response_from_events(events)
    else:
        response = answer.json()
    assert text(response) == "Paris is sunny." and response["status"] == "completed"
    messages = upstream.chat_requests[0].json["messages"]
    assert [message["role"] for message in messages] == ["system", "system", "user"]
    assert declared_names(messages[0]["content"]) == [
        "get_weather",
        "apply_patch",
        "spawn_agent",
        "tool_search",
    ]


def test_a_strict_function_call_that_fails_its_schema_is_asked_for_again_unless_it_streamed(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    """`maxLength` binds a tool declared strict only."""
    proxy = start_proxy(call_repair_retries=1)
    city = {"type": "string", "maxLength": 5}
    strict = {
        **WEATHER_FUNCTION,
        "strict": True,
        "parameters": {"type": "object", "properties": {"city": city}, "required": ["city"]},
    }
    wrong = {"city": "Paris, France"}
    upstream.script(
        Reply(rendered_calls("get_weather", wrong)["json-mix"]),
        Reply(WEATHER_CALL["json-mix"]),
    )

    response = respond(proxy, stream, input=QUESTION, tools=[strict])

    assert calls(response) == [("get_weather", wrong if stream else PARIS_WEATHER[1])]
    assert len(upstream.chat_requests) == (1 if stream else 2)
    if not stream:
        correction = upstream.chat_requests[1].json["messages"][-1]["content"]
        assert "city: 'Paris, France' is too long" in correction
