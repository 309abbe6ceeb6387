"""What the model writes, and what the client gets back: text as content, calls as
`tool_calls`, streamed or not. `Proxy.chat` checks OpenAI's wire format on every reply."""

from __future__ import annotations

import json

import pytest
from servers import MODEL, QUESTION, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import (
    CREATED,
    PARIS_WEATHER,
    TIME_CALL,
    UPSTREAM_ID,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
)


def test_text_only_reply_comes_back_as_content(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply("Paris is ", "sunny today."))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert completion.content == "Paris is sunny today."
    assert (completion.tool_calls, completion.finish_reason) == ([], "stop")


def test_an_answer_of_only_whitespace_keeps_its_text(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, stream: bool
) -> None:
    """Whitespace is layout only beside a call; with no call anywhere it is the answer."""
    upstream.script(Reply("\n", " \n\t"))

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.content, completion.finish_reason) == ("\n \n\t", "stop")


def test_finish_reason_tool_calls_with_no_call_sent_is_stop(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    """A client reads "tool_calls" as "run the calls": with none, the answer just stopped."""
    upstream.script(Reply("Sunny.", finish_reason="tool_calls"))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.content, completion.finish_reason) == ("Sunny.", "stop")


def test_one_call_comes_back_as_a_tool_call(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol]))

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert completion.calls == [PARIS_WEATHER]
    assert completion.content == ""
    assert completion.finish_reason == "tool_calls"


def test_parallel_calls_come_back_in_order_with_distinct_ids(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL[protocol], "\n", TIME_CALL[protocol]))

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert completion.tool_calls[0].id != completion.tool_calls[1].id


def test_text_before_between_and_after_calls_stays_content_without_markup(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(
        Reply(
            "Let me check. ",
            WEATHER_CALL[protocol],
            " And the time: ",
            TIME_CALL[protocol],
            " Done.",
        )
    )

    completion = protocol_proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.content == "Let me check.  And the time:  Done."
    assert completion.calls == [PARIS_WEATHER, UTC_TIME]


def test_malformed_call_comes_back_as_text_unchanged(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    malformed = "Trying <tool_call>the weather in Paris, please</tool_call> now."
    upstream.script(Reply(malformed))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.content, completion.tool_calls) == (malformed, [])
    assert completion.finish_reason == "stop"


@pytest.mark.parametrize(
    ("unknown_tools", "calls", "content"),
    [("call", [UTC_TIME], ""), ("text", [], TIME_CALL["json-mix"])],
)
def test_call_to_an_undeclared_tool_follows_the_unknown_tools_setting(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    stream: bool,
    unknown_tools: str,
    calls: list[tuple[str, object]],
    content: str,
) -> None:
    proxy = start_proxy(unknown_tools=unknown_tools)
    upstream.script(Reply(TIME_CALL["json-mix"]))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.calls, completion.content) == (calls, content)


@pytest.mark.parametrize(("off_protocol_calls", "calls"), [(True, [PARIS_WEATHER]), (False, [])])
def test_an_answer_that_is_only_a_call_object_follows_the_off_protocol_calls_setting(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    stream: bool,
    off_protocol_calls: bool,
    calls: list[tuple[str, object]],
) -> None:
    """A small model's bare call object, off the protocol's format: a call, or (turned off)
    the text it is."""
    answer = json.dumps({"name": PARIS_WEATHER[0], "arguments": PARIS_WEATHER[1]})
    proxy = start_proxy(off_protocol_calls=off_protocol_calls)
    upstream.script(Reply(answer))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    assert (completion.calls, completion.content) == (calls, "" if calls else answer)


def test_call_cut_off_by_the_length_limit_finishes_with_length(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    call = WEATHER_CALL["json-mix"]
    cut = call[: call.index("Paris")]  # the output stops inside the arguments
    upstream.script(Reply("Let me check.", cut, finish_reason="length"))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    assert completion.finish_reason == "length"
    assert completion.content.startswith("Let me check.")


def test_non_streamed_reply_keeps_upstream_id_created_model_and_usage(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    completion = proxy.chat(chat_body(WEATHER_TOOL))

    assert (completion.id, completion.created, completion.model) == (UPSTREAM_ID, CREATED, MODEL)
    assert completion.usage == USAGE


def test_sdk_reads_non_streamed_calls(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    upstream.script(Reply("Checking.", WEATHER_CALL["json-mix"]))

    completion = proxy.client.chat.completions.create(
        model=MODEL, messages=[QUESTION], tools=[WEATHER_TOOL]
    )

    [choice] = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking."
    [call] = choice.message.tool_calls or []
    assert (call.function.name, json.loads(call.function.arguments)) == PARIS_WEATHER


def test_streams_read_to_done_leave_their_upstream_connection_for_the_next_request(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy()  # its own connection pool, empty
    upstream.script(Reply("Paris is ", "sunny."), Reply("Still ", "sunny."))

    answers = [proxy.chat(chat_body(WEATHER_TOOL, stream=True)).content for _ in range(2)]

    assert answers == ["Paris is sunny.", "Still sunny."]
    first, second = upstream.chat_requests
    assert first.peer_port == second.peer_port
