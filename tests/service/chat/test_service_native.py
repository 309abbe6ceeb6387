"""Upstreams that call tools themselves (UPSTREAM_NATIVE_TOOLS, a route's `native_tools`):
tools, `tool_choice` and `parallel_tool_calls` go to them as the client sent them, their own
calls come back as they made them, and calls they left in their text are rescued, numbered
after their own, streamed or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from observability import scrape
from servers import TIME_TOOL, WEATHER_TOOL, StartProxy, chat_body
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
    Verbatim,
    native_call,
    raw_chunk_event,
    raw_completion,
)

NATIVE_ID = "call_upstream_paris"
TOOL_FIELDS = ("messages", "tools", "tool_choice", "parallel_tool_calls")


@pytest.mark.parametrize("leak_first", [False, True], ids=["leak-after", "leak-before"])
def test_native_calls_are_relayed_and_calls_left_in_text_are_rescued_after_them(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    protocol: str,
    stream: bool,
    leak_first: bool,
) -> None:
    proxy = start_proxy(tool_protocol=protocol, upstream_native_tools=True)
    native = native_call(0, NATIVE_ID, *PARIS_WEATHER)
    leaked = ["Let me check. ", TIME_CALL[protocol]]
    chunks = [*leaked, *native] if leak_first else [*native, *leaked]
    upstream.script(Reply(*chunks, finish_reason="tool_calls"))
    body = chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="auto", parallel_tool_calls=True)

    completion = proxy.chat({**body, "stream": stream})

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert completion.tool_calls[0].id == NATIVE_ID
    assert completion.content == "Let me check. "
    assert completion.finish_reason == "tool_calls"
    [sent] = upstream.chat_requests
    assert {field: sent.json[field] for field in TOOL_FIELDS} == {
        field: body[field] for field in TOOL_FIELDS
    }
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_rescued_tool_calls_total", protocol=protocol) == 1
    assert metrics.value("toolcall_proxy_tool_calls_total") == 2


def test_a_native_answer_with_nothing_left_in_its_text_comes_back_as_the_upstream_sent_it(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    calls = [*native_call(0, NATIVE_ID, *PARIS_WEATHER), *native_call(1, "call_2", *UTC_TIME)]
    upstream.script(Reply("Checking both.", *calls, finish_reason="tool_calls"))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream, stream_options={"include_usage": True})
    )

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert [call.id for call in completion.tool_calls] == [NATIVE_ID, "call_2"]
    assert (completion.content, completion.usage) == ("Checking both.", USAGE)
    assert scrape(proxy.http).value("toolcall_proxy_rescued_tool_calls_total") == 0


def test_a_forced_choice_goes_to_a_native_upstream_as_it_is(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    """The upstream forces its own calls: no forced-call prompt, no whole answer asked for."""
    proxy = start_proxy(upstream_native_tools=True)
    upstream.script(Reply(*native_call(0, NATIVE_ID, *PARIS_WEATHER), finish_reason="stop"))
    choice = {"type": "function", "function": {"name": "get_weather"}}

    completion = proxy.chat(chat_body(WEATHER_TOOL, tool_choice=choice, stream=stream))

    assert (completion.calls, completion.finish_reason) == ([PARIS_WEATHER], "tool_calls")
    [sent] = upstream.chat_requests
    assert sent.json["tool_choice"] == choice and sent.json.get("stream", False) is stream
    assert sent.json["messages"] == chat_body()["messages"]


def test_parallel_tool_calls_false_keeps_the_upstreams_own_call_over_a_rescued_one(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    upstream.script(Reply(WEATHER_CALL["json-mix"], *native_call(0, NATIVE_ID, *UTC_TIME)))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, parallel_tool_calls=False, stream=stream)
    )

    assert completion.calls == [UTC_TIME]
    assert upstream.chat_requests[0].json["parallel_tool_calls"] is False


def test_a_native_call_cut_by_the_token_limit_keeps_finish_reason_length(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    cut = native_call(0, NATIVE_ID, *PARIS_WEATHER)[:-1]
    upstream.script(Reply(*cut, finish_reason="length"))

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True))

    deltas = [event["choices"][0]["delta"] for event in events[:-1]]
    sent = [call for delta in deltas for call in delta.get("tool_calls", ())]
    written = "".join(delta["tool_calls"][0]["function"]["arguments"] for delta in cut)
    assert sent[0]["id"] == NATIVE_ID
    assert "".join(call["function"]["arguments"] for call in sent) == written
    assert events[-2]["choices"][0]["finish_reason"] == "length"


def test_a_native_call_without_an_index_continues_the_last_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    """Some servers leave `index` out of a call's later fragments."""
    proxy = start_proxy(upstream_native_tools=True)
    start = {"id": NATIVE_ID, "type": "function", "function": {"name": "get_weather"}}
    more: list[dict[str, Any]] = [
        {"function": {"arguments": '{"city": '}},
        {"function": {"arguments": '"Paris"}'}},
    ]
    upstream.script(
        Verbatim(
            *(
                raw_chunk_event({"index": 0, "delta": {"tool_calls": [call]}})
                for call in [start, *more]
            ),
            raw_chunk_event({"index": 0, "delta": {}, "finish_reason": "tool_calls"}),
            b"data: [DONE]\n\n",
        )
    )

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    assert completion.calls == [PARIS_WEATHER]


def test_malformed_native_calls_are_a_bad_upstream_answer(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    call = {"id": NATIVE_ID, "type": "function", "function": "get_weather"}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    upstream.script(raw_completion({"index": 0, "message": message, "finish_reason": "tool_calls"}))

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_bad_chunk"


def test_a_route_says_its_upstream_calls_tools_itself(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path, stream: bool
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text('[routes.native]\nmodel = "served"\nnative_tools = true\n')
    proxy = start_proxy(routes_file=str(routes))
    upstream.script(
        Reply(*native_call(0, NATIVE_ID, *PARIS_WEATHER)), Reply(WEATHER_CALL["json-mix"])
    )

    native = proxy.chat(chat_body(WEATHER_TOOL, model="native", stream=stream))
    rendered = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert native.calls == rendered.calls == [PARIS_WEATHER]
    to_native, to_default = upstream.chat_requests
    assert (to_native.json["model"], to_native.json["tools"]) == ("served", [WEATHER_TOOL])
    assert "tools" not in to_default.json
