"""The request fields that steer calling: `tool_choice` ("none", "required", a named
function) and `parallel_tool_calls`."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from observability import scrape
from servers import QUESTION, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    USAGE,
    WEATHER_CALL,
    Hang,
    Paused,
    Reply,
    ScriptedUpstream,
)
from waits import HUNG_AFTER_SECONDS

from protocols import ToolSpec
from protocols.formats.forced_call import (
    forced_call_schema,
    render_forced_call_correction,
    render_forced_call_prompt,
)
from service.exchange.asking_again import MAX_ECHOED_REPLY_CHARS
from service.exchange.event_writer import PIECE_CHARS

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


PROSE = "It is sunny in Paris today."
CALL_OBJECT = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def _failures(proxy: Proxy, kind: str) -> float:
    return scrape(proxy.http).value("toolcall_proxy_parse_failures_total", kind=kind)


def test_a_forced_call_answered_in_prose_is_asked_for_again_with_the_reply_and_why(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(PROSE), Reply(CALL_OBJECT))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required", stream=stream)
    )

    assert (completion.calls, completion.content) == ([PARIS_WEATHER], "")
    first, again = upstream.chat_requests
    assert again.json["messages"][:-2] == first.json["messages"]
    reply, correction = again.json["messages"][-2:]
    assert reply == {"role": "assistant", "content": PROSE}
    assert correction["role"] == "user"
    assert correction["content"] == render_forced_call_correction(
        "it held no tool call", named=None
    )
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_forced_call_retries_total") == 1
    assert metrics.value("toolcall_proxy_parse_failures_total") == 0


def test_required_with_no_call_after_asking_again_is_the_models_text_and_stop(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(PROSE), Reply("Sorry, no tool fits."))
    body = chat_body(
        WEATHER_TOOL,
        TIME_TOOL,
        tool_choice="required",
        stream=stream,
        stream_options={"include_usage": True} if stream else None,
    )

    completion = proxy.chat(body)

    assert (completion.content, completion.tool_calls) == (PROSE, [])
    assert completion.finish_reason == "stop"
    doubled = {key: 2 * value for key, value in USAGE.items()}
    assert completion.usage == doubled
    assert len(upstream.chat_requests) == 2
    assert _failures(proxy, "tool_choice_unmet") == 1


def test_required_never_calls_a_tool_that_was_not_declared(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    invented = '{"name": "unknown", "arguments": {}}'
    upstream.script(Reply(invented), Reply(invented))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required", stream=stream)
    )

    assert (completion.content, completion.tool_calls) == (invented, [])
    assert completion.finish_reason == "stop"


def test_forced_call_retries_zero_asks_once(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(forced_call_retries=0)
    upstream.script(Reply(PROSE))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required", stream=stream)
    )

    assert (completion.content, completion.finish_reason) == (PROSE, "stop")
    assert len(upstream.chat_requests) == 1


def test_a_named_choice_never_answered_is_its_call_with_empty_arguments_beside_the_text(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(PROSE), Reply("Still prose."))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice=NAMED, stream=stream))

    assert completion.calls == [("get_weather", {})]
    assert (completion.content, completion.finish_reason) == (PROSE, "tool_calls")
    assert _failures(proxy, "tool_choice_fallback") == 1
    correction = upstream.chat_requests[1].json["messages"][-1]["content"]
    assert correction == render_forced_call_correction(
        "no arguments for get_weather could be read from it", named="get_weather"
    )


def test_required_with_one_tool_takes_a_nameless_call_as_that_tool(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply('{"arguments": {"city": "Paris"}}'))

    completion = proxy.chat(chat_body(WEATHER_TOOL, tool_choice="required"))

    assert completion.calls == [PARIS_WEATHER]
    assert len(upstream.chat_requests) == 1


@pytest.mark.parametrize(
    ("tool_choice", "offered"),
    [
        pytest.param("required", [WEATHER_TOOL, TIME_TOOL], id="required"),
        pytest.param(NAMED, [WEATHER_TOOL], id="named"),
    ],
)
def test_an_upstream_with_structured_output_is_asked_for_the_call_by_its_schema(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    stream: bool,
    tool_choice: Any,
    offered: list[dict[str, Any]],
) -> None:
    proxy = start_proxy(upstream_structured_output=True)
    upstream.script(Reply(CALL_OBJECT))
    body = chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice=tool_choice, stream=stream)

    completion = proxy.chat({**body, "response_format": {"type": "json_object"}})

    assert completion.calls == [PARIS_WEATHER]
    [sent] = upstream.chat_requests
    tools = [ToolSpec.from_openai(tool) for tool in offered]
    assert sent.json["response_format"] == forced_call_schema(tools)


def test_a_route_says_its_upstream_takes_a_schema(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[routes.strict]\nstructured_output = true\n")
    proxy = start_proxy(routes_file=str(routes))
    upstream.script(Reply(CALL_OBJECT), Reply(CALL_OBJECT))

    for model in ("strict", "test-model"):
        proxy.chat(chat_body(WEATHER_TOOL, model=model, tool_choice="required"))

    to_route, to_default = upstream.chat_requests
    assert to_route.json["response_format"]["type"] == "json_schema"
    assert "response_format" not in to_default.json


def test_each_retry_starts_from_the_original_messages_with_the_last_reply(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    # Each retry appended its reply to the request before: the body grew with every one.
    proxy = start_proxy(forced_call_retries=3)
    replies = [PROSE, "Still no call.", "Nor now."]
    upstream.script(*(Reply(reply) for reply in replies), Reply(CALL_OBJECT))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required"))

    assert completion.calls == [PARIS_WEATHER]
    first, *again = upstream.chat_requests
    assert [request.json["messages"][:-2] for request in again] == [first.json["messages"]] * 3
    assert [request.json["messages"][-2] for request in again] == [
        {"role": "assistant", "content": reply} for reply in replies
    ]


def test_a_reply_too_long_to_be_a_call_gone_wrong_is_not_asked_for_again(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    # A 30 MB reply made upstream requests of 30 and then 60 MB.
    essay = "A long essay instead of a call. " * (MAX_ECHOED_REPLY_CHARS // 32 + 1)
    upstream.script(Reply(essay))

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required", stream=stream)
    )

    assert (completion.content, completion.finish_reason) == (essay, "stop")
    assert len(upstream.chat_requests) == 1


def test_a_long_reply_answered_to_a_stream_goes_in_deltas_of_bounded_size(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    # Sent as one delta, a 30 MB reply was encoded whole, copied as its chunk was framed and
    # joined with the chunks around it: the stream peaked at +150 MB, 5x the reply.
    essay = "A long essay instead of a call. " * (3 * PIECE_CHARS // 32)
    upstream.script(Reply(essay))

    events = proxy.events(chat_body(WEATHER_TOOL, tool_choice="required", stream=True))

    contents = [
        event["choices"][0]["delta"].get("content")
        for event in events
        if event != "[DONE]" and event["choices"]
    ]
    texts = [content for content in contents if content]
    assert "".join(texts) == essay
    assert len(texts) == 3 and max(map(len, texts)) == PIECE_CHARS


def test_a_retry_that_hangs_ends_at_the_requests_one_deadline(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    # Each retry had a whole deadline of its own: 16.4 s for a 5 s timeout and 3 retries.
    proxy = start_proxy(upstream_total_timeout=1.0, forced_call_retries=3)
    upstream.script(Reply(PROSE), Hang())

    answer = proxy.http.post(
        "/v1/chat/completions", json=chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required")
    )

    assert answer.status_code == 504
    assert len(upstream.chat_requests) == 2


def test_no_retry_when_less_time_is_left_than_the_reply_took(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    deadline = 2.0
    proxy = start_proxy(upstream_total_timeout=deadline, forced_call_retries=3)
    slow = Paused(before=(), after=(PROSE,))
    upstream.script(slow, Reply(CALL_OBJECT))

    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(proxy.chat, chat_body(WEATHER_TOOL, TIME_TOOL, tool_choice="required"))
        assert slow.paused.wait(HUNG_AFTER_SECONDS)
        time.sleep(deadline * 0.6)  # the reply takes more than half the deadline: time passes
        slow.resume.set()
        completion = asked.result(HUNG_AFTER_SECONDS)

    assert (completion.content, completion.finish_reason) == (PROSE, "stop")
    assert len(upstream.chat_requests) == 1
