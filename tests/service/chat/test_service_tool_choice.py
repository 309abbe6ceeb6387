"""The request fields that steer calling: `tool_choice` ("none", "required", a named
function) and `parallel_tool_calls`."""

from __future__ import annotations

from typing import Any

import pytest
from servers import QUESTION, TIME_TOOL, WEATHER_TOOL, Proxy, chat_body
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    USAGE,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
)

from protocols import ToolSpec
from protocols.forced_call import render_forced_call_prompt

NAMED = {"type": "function", "function": {"name": "get_weather"}}
EXPLICIT_CHOICES = [
    pytest.param(
        "required", None, '{"name": "get_weather", "arguments": {"city": "Paris"}}', id="required"
    ),
    # Asked for one named function, the model may leave the name out.
    pytest.param(NAMED, "get_weather", '{"arguments": {"city": "Paris"}}', id="named"),
]


def test_tool_choice_none_renders_no_tools_and_parses_no_calls(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    completion = proxy.chat(chat_body(WEATHER_TOOL, tool_choice="none", stream=stream))

    assert (completion.content, completion.tool_calls) == (WEATHER_CALL["json-mix"], [])
    [sent] = upstream.chat_requests
    assert sent.json["messages"] == [QUESTION]
    assert "tools" not in sent.json and "tool_choice" not in sent.json


@pytest.mark.parametrize(("tool_choice", "named", "answer"), EXPLICIT_CHOICES)
def test_explicit_tool_choice_asks_upstream_once_for_one_json_object(
    upstream: ScriptedUpstream,
    proxy: Proxy,
    stream: bool,
    tool_choice: Any,
    named: str | None,
    answer: str,
) -> None:
    upstream.script(Reply(answer))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice=tool_choice, stream=stream)
    )

    assert completion.calls == [PARIS_WEATHER]
    assert completion.finish_reason == "tool_calls"
    [sent] = upstream.chat_requests
    assert sent.json["stream"] is False
    system = sent.json["messages"][0]
    demand = render_forced_call_prompt(
        [ToolSpec.from_openai(WEATHER_TOOL), ToolSpec.from_openai(TIME_TOOL)], named=named
    )
    assert system["role"] == "system" and demand in system["content"]


def test_explicit_tool_choice_answers_with_exactly_one_call_when_the_model_sends_more(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply('{"name": "get_weather", "arguments": {"city": "Paris"}}\n' * 2))

    completion = proxy.chat(chat_body(WEATHER_TOOL, tool_choice="required", stream=stream))

    assert completion.calls == [PARIS_WEATHER]


def test_streamed_tool_choice_reports_usage_without_streaming_from_upstream(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """Upstreams reject `stream_options` on a non-streaming request, so it is not sent."""
    upstream.script(Reply('{"name": "get_weather", "arguments": {"city": "Paris"}}'))
    body = chat_body(
        WEATHER_TOOL, tool_choice=NAMED, stream=True, stream_options={"include_usage": True}
    )

    completion = proxy.chat(body)

    assert (completion.calls, completion.usage) == ([PARIS_WEATHER], USAGE)
    [sent] = upstream.chat_requests
    assert "stream_options" not in sent.json


def test_parallel_tool_calls_false_returns_only_the_first_call(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"], TIME_CALL["json-mix"]))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, parallel_tool_calls=False, stream=stream)
    )

    assert completion.calls == [PARIS_WEATHER]
