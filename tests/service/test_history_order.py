"""An assistant turn that goes back into the prompt keeps the model's order: at the doors
whose turns interleave text and calls (Messages' blocks, Responses' items, Gemini's parts),
the text the model wrote after its call follows the call in the rendered turn (it was moved
before it); an upstream that calls tools itself still gets chat's one message a turn."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from gemini_client import declaration, generate
from google.genai import types
from messages_client import anthropic_tool, create
from responses_client import flat_function, respond
from servers import WEATHER_TOOL, Proxy, StartProxy
from upstream_server import Reply, ScriptedUpstream

from protocols import get_protocol

BEFORE, AFTER = "I'll check Paris.", "Then I'll compare it with Rome."
ARGUMENTS = {"city": "Paris"}
RESULT = "21 degrees"


def _messages(proxy: Proxy) -> None:
    turn = [
        {"type": "text", "text": BEFORE},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ARGUMENTS},
        {"type": "text", "text": AFTER},
    ]
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT}
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": turn},
        {"role": "user", "content": [result]},
    ]
    create(proxy, False, tools=[anthropic_tool(WEATHER_TOOL)], messages=history)


def _responses(proxy: Proxy) -> None:
    def said(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}

    items = [
        {"role": "user", "content": "Weather?"},
        said(BEFORE),
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": json.dumps(ARGUMENTS),
        },
        said(AFTER),
        {"type": "function_call_output", "call_id": "call_1", "output": RESULT},
    ]
    respond(proxy, False, input=items, tools=[flat_function(WEATHER_TOOL)])


def _gemini(proxy: Proxy) -> None:
    call = types.FunctionCall(name="get_weather", args=ARGUMENTS)
    result = types.FunctionResponse(name="get_weather", response={"output": RESULT})
    contents = [
        types.Content(role="user", parts=[types.Part(text="Weather?")]),
        types.Content(
            role="model",
            parts=[types.Part(text=BEFORE), types.Part(function_call=call), types.Part(text=AFTER)],
        ),
        types.Content(role="user", parts=[types.Part(function_response=result)]),
    ]
    declared = [types.Tool(function_declarations=[declaration(WEATHER_TOOL)])]
    generate(proxy, False, contents=contents, tools=declared)


DOORS: dict[str, Callable[[Proxy], None]] = {
    "messages": _messages,
    "responses": _responses,
    "gemini": _gemini,
}


def _assistant_turns(upstream: ScriptedUpstream) -> list[dict[str, Any]]:
    return [m for m in upstream.chat_requests[-1].json["messages"] if m["role"] == "assistant"]


@pytest.mark.parametrize("protocol", ["json-mix", "morph-xml"])
@pytest.mark.parametrize("door", DOORS)
def test_the_text_after_a_call_follows_it_in_the_history(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, protocol: str
) -> None:
    proxy = start_proxy(tool_protocol=protocol)
    upstream.script(Reply("Rome is cooler."))

    DOORS[door](proxy)

    [turn] = _assistant_turns(upstream)
    call = get_protocol(protocol).render_call("get_weather", ARGUMENTS)
    assert turn["content"] == f"{BEFORE}\n{call}\n{AFTER}"


@pytest.mark.parametrize("door", DOORS)
def test_an_upstream_that_calls_tools_itself_gets_one_message_a_turn(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    upstream.script(Reply("Rome is cooler."))

    DOORS[door](proxy)

    [turn] = _assistant_turns(upstream)
    assert turn["content"] == BEFORE + AFTER
    assert [call["function"]["name"] for call in turn["tool_calls"]] == ["get_weather"]
