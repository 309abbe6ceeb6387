"""`POST /v1/responses` in front of an upstream that calls tools itself: the chat tools the
request becomes go to it as they are, its own calls are `function_call` items, and a call it
left in its text is rescued into an item after them, streamed or not."""

from __future__ import annotations

from observability import scrape
from responses_client import TIME_FUNCTION, WEATHER_FUNCTION, calls, respond, text
from servers import TIME_TOOL, WEATHER_TOOL, StartProxy
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    UTC_TIME,
    Reply,
    ScriptedUpstream,
    native_call,
)

QUESTION = "What is the weather and the time in Paris?"
NATIVE_ID = "call_upstream_paris"


def test_native_and_rescued_calls_are_function_call_items_in_that_order(
    upstream: ScriptedUpstream, start_proxy: StartProxy, protocol: str, stream: bool
) -> None:
    proxy = start_proxy(tool_protocol=protocol, upstream_native_tools=True)
    upstream.script(
        Reply(
            "Let me check. ",
            TIME_CALL[protocol],
            *native_call(0, NATIVE_ID, *PARIS_WEATHER),
            finish_reason="tool_calls",
        )
    )

    response = respond(
        proxy, stream, input=QUESTION, tools=[WEATHER_FUNCTION, TIME_FUNCTION], tool_choice="auto"
    )

    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == [
        "message",
        "function_call",
        "function_call",
    ]
    assert text(response) == "Let me check. "
    assert calls(response) == [PARIS_WEATHER, UTC_TIME]
    assert response["output"][1]["call_id"] == NATIVE_ID
    [sent] = upstream.chat_requests
    assert sent.json["tools"] == [WEATHER_TOOL, TIME_TOOL]
    assert sent.json["tool_choice"] == "auto"
    assert sent.json["messages"] == [{"role": "user", "content": QUESTION}]
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_rescued_tool_calls_total", protocol=protocol) == 1
