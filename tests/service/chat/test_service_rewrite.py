"""Request rewriting, read off the scripted upstream: tools become system-prompt text, the
tool-call history becomes protocol text, and every other field reaches upstream untouched."""

from __future__ import annotations

import json
from typing import Any

from servers import MODEL, QUESTION, TIME_TOOL, WEATHER_TOOL, Proxy, chat_body
from upstream_server import Reply, ScriptedUpstream

from protocols import ToolSpec, get_protocol

SYSTEM = {"role": "system", "content": "You are terse."}
WEATHER_ARGUMENTS = {"city": "Paris"}


def assistant_calls(
    *calls: tuple[str, str, dict[str, Any]], content: str | None = None
) -> dict[str, Any]:
    """An earlier assistant turn as the client sends it back: (id, name, arguments) each."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": id_,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for id_, name, args in calls
        ],
    }


def tool_result(call_id: str, content: str | list[dict[str, str]]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


WEATHER_HISTORY = [
    QUESTION,
    assistant_calls(("call_w", "get_weather", WEATHER_ARGUMENTS)),
    tool_result("call_w", "18°C, sunny"),
]


def text_of(content: str | list[dict[str, str]]) -> str:
    """A message's text, whether sent as a string or as a list of text parts."""
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def appear_in_order(text: str, *parts: str) -> bool:
    position = 0
    for part in parts:
        position = text.find(part, position)
        if position < 0:
            return False
        position += len(part)
    return True


def sent_messages(upstream: ScriptedUpstream) -> list[dict[str, Any]]:
    [sent] = upstream.chat_requests
    return list(sent.json["messages"])


def rendered_tools(protocol: str, *tools: dict[str, Any]) -> str:
    return get_protocol(protocol).render_tools([ToolSpec.from_openai(tool) for tool in tools])


def test_tools_are_appended_to_the_clients_system_message(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply("Sunny."))

    protocol_proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, messages=[SYSTEM, QUESTION]))

    system, *rest = sent_messages(upstream)
    assert system["role"] == "system"
    assert appear_in_order(
        system["content"], SYSTEM["content"], rendered_tools(protocol, WEATHER_TOOL, TIME_TOOL)
    )
    assert system["content"].startswith(SYSTEM["content"])
    assert rest == [QUESTION]


def test_tools_become_a_first_system_message_when_the_client_sent_none(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply("Sunny."))

    protocol_proxy.chat(chat_body(WEATHER_TOOL))

    system, *rest = sent_messages(upstream)
    assert system["role"] == "system"
    assert rendered_tools(protocol, WEATHER_TOOL) in system["content"]
    assert rest == [QUESTION]


def test_calling_fields_are_removed_and_every_other_field_passes_untouched(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    others = {
        "stream": False,
        "temperature": 0.2,
        "max_tokens": 64,
        "stop": ["\n\n"],
        "seed": 7,
        "user": "user-1",
        "top_k": 40,
        "response_format": {"type": "text"},
    }
    calling = {
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "functions": [WEATHER_TOOL["function"]],
        "function_call": "auto",
    }
    upstream.script(Reply("Sunny."))

    proxy.chat(chat_body(WEATHER_TOOL, **calling, **others))

    [sent] = upstream.chat_requests
    assert {k: v for k, v in sent.json.items() if k != "messages"} == {"model": MODEL, **others}


def test_call_and_result_history_becomes_protocol_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    text = get_protocol(protocol)
    upstream.script(Reply("It is sunny in Paris."))

    protocol_proxy.chat(chat_body(WEATHER_TOOL, messages=WEATHER_HISTORY))

    _system, *messages = sent_messages(upstream)
    assert messages == [
        QUESTION,
        {"role": "assistant", "content": text.render_call("get_weather", WEATHER_ARGUMENTS)},
        {"role": "user", "content": text.render_result("get_weather", "call_w", "18°C, sunny")},
    ]


def test_consecutive_tool_results_become_one_user_message_in_call_order(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    text = get_protocol(protocol)
    upstream.script(Reply("Sunny, and it is noon."))
    history = [
        QUESTION,
        assistant_calls(
            ("call_w", "get_weather", WEATHER_ARGUMENTS),
            ("call_t", "get_time", {"zone": "UTC"}),
            content="Checking both.",
        ),
        tool_result("call_w", "18°C, sunny"),
        tool_result("call_t", "12:00"),
        {"role": "user", "content": "Thanks! And tomorrow?"},
    ]

    protocol_proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, messages=history))

    _system, question, assistant, results, follow_up = sent_messages(upstream)
    assert (question, follow_up) == (QUESTION, history[-1])
    assert assistant["role"] == "assistant"
    assert appear_in_order(
        assistant["content"],
        "Checking both.",
        text.render_call("get_weather", WEATHER_ARGUMENTS),
        text.render_call("get_time", {"zone": "UTC"}),
    )
    assert results["role"] == "user"
    assert appear_in_order(
        results["content"],
        text.render_result("get_weather", "call_w", "18°C, sunny"),
        text.render_result("get_time", "call_t", "12:00"),
    )


def test_json_mix_ties_each_result_to_its_call_name_and_id(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sunny."))

    proxy.chat(chat_body(WEATHER_TOOL, messages=WEATHER_HISTORY))

    result = sent_messages(upstream)[-1]["content"]
    assert appear_in_order(result, "<tool_response>", "18°C, sunny", "</tool_response>")
    assert "get_weather" in result and "call_w" in result


def test_text_part_lists_are_read_as_their_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply("Sunny."))
    parts = [{"type": "text", "text": "18°C"}, {"type": "text", "text": "sunny"}]
    history = [
        {"role": "system", "content": [{"type": "text", "text": "You are terse."}]},
        QUESTION,
        assistant_calls(("call_w", "get_weather", WEATHER_ARGUMENTS)),
        tool_result("call_w", parts),
    ]

    protocol_proxy.chat(chat_body(WEATHER_TOOL, messages=history))

    system, *_, result = sent_messages(upstream)
    rendered = rendered_tools(protocol, WEATHER_TOOL)
    assert appear_in_order(text_of(system["content"]), "You are terse.", rendered)
    assert result["role"] == "user"
    assert appear_in_order(result["content"], "18°C", "sunny")
    assert "'type'" not in result["content"] and '"type"' not in result["content"]


def test_tool_history_is_rendered_even_when_no_tools_are_declared(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Sunny."))

    proxy.chat(chat_body(messages=WEATHER_HISTORY, stream=stream))

    messages = sent_messages(upstream)
    assert [m["role"] for m in messages if m["role"] != "system"] == ["user", "assistant", "user"]
    assert all("tool_calls" not in m and "tool_call_id" not in m for m in messages)
