"""Odd but legal input from either side never becomes a 500: requests real clients send
(results without content, explicit nulls, lone surrogates) and upstreams that answer a
stream request with one JSON body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from observability import scrape
from servers import MODEL, QUESTION, TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    USAGE,
    UTC_TIME,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
    completion_body,
)

JSON_CONTENT = {"content-type": "application/json"}
# "\ud83d" is half of an emoji: valid JSON, not encodable as UTF-8 on its own.
LONE_SURROGATE = "\ud83d"
WEATHER_CALL_HISTORY = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_w",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}


@contextmanager
def fixed_upstream(body: bytes, content_type: str = "application/json") -> Iterator[str]:
    """An upstream answering every chat request 200 with `body`, whatever was asked."""

    async def chat(request: Request) -> Response:
        return Response(body, media_type=content_type)

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with serve(app) as url:
        yield url + "/v1"


def post_raw(proxy: Proxy, raw: bytes) -> Any:
    response = proxy.http.post("/v1/chat/completions", content=raw, headers=JSON_CONTENT)
    assert response.status_code == 200, response.text
    return response.json()


def test_tool_result_without_content_is_rendered_as_an_empty_result(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Nothing came back."))
    result = {"role": "tool", "tool_call_id": "call_w"}  # no "content" at all

    completion = proxy.chat(
        chat_body(WEATHER_TOOL, messages=[QUESTION, WEATHER_CALL_HISTORY, result])
    )

    assert completion.content == "Nothing came back."
    [sent] = upstream.chat_requests
    assert "call_w" in sent.json["messages"][-1]["content"]


def test_tool_calls_that_are_not_an_array_are_a_400(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    history = {**WEATHER_CALL_HISTORY, "tool_calls": 5}

    response = proxy.http.post(
        "/v1/chat/completions", json=chat_body(WEATHER_TOOL, messages=[QUESTION, history])
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[1].tool_calls"
    assert upstream.requests == []


def test_parallel_tool_calls_null_means_the_default(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"], TIME_CALL["json-mix"]))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, parallel_tool_calls=None))

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]


def test_lone_surrogate_from_the_client_reaches_upstream_escaped(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Noted."))
    question = {"role": "user", "content": f"cut emoji {LONE_SURROGATE}"}
    raw = json.dumps(chat_body(WEATHER_TOOL, messages=[question])).encode()  # ASCII, escaped

    assert post_raw(proxy, raw)["choices"][0]["message"]["content"] == "Noted."
    [sent] = upstream.chat_requests
    assert sent.json["messages"][-1] == question


def test_lone_surrogate_in_a_model_name_does_not_break_metrics(start_proxy: StartProxy) -> None:
    answer = completion_body(Reply("Sunny."), MODEL)

    with fixed_upstream(json.dumps(answer).encode()) as url:
        proxy = start_proxy(upstream_base_url=url)
        post_raw(proxy, json.dumps(chat_body(WEATHER_TOOL, model=LONE_SURROGATE)).encode())

        assert scrape(proxy.http).value("toolcall_proxy_requests_total", route="chat") == 1


def test_lone_surrogate_from_the_model_reaches_the_client_escaped(
    start_proxy: StartProxy,
) -> None:
    answer = completion_body(Reply(f"Sunny {LONE_SURROGATE}"), MODEL)

    with fixed_upstream(json.dumps(answer).encode()) as url:
        proxy = start_proxy(upstream_base_url=url)
        body = post_raw(proxy, json.dumps(chat_body(WEATHER_TOOL)).encode())

    assert body["choices"][0]["message"]["content"] == f"Sunny {LONE_SURROGATE}"


@pytest.mark.parametrize("include_usage", [False, True])
def test_upstream_answering_a_stream_request_with_one_json_completion_is_streamed(
    start_proxy: StartProxy, include_usage: bool
) -> None:
    answer = completion_body(Reply("Let me check.", WEATHER_CALL["json-mix"]), MODEL)
    options = {"include_usage": include_usage}

    with fixed_upstream(json.dumps(answer).encode()) as url:
        proxy = start_proxy(upstream_base_url=url)
        completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True, stream_options=options))

    assert (completion.content, completion.calls) == ("Let me check.", [PARIS_WEATHER])
    assert completion.usage == (USAGE if include_usage else None)


def test_upstream_200_holding_an_error_ends_the_stream_with_that_error(
    start_proxy: StartProxy,
) -> None:
    error = {"error": {"message": "model overloaded", "type": "x", "param": None, "code": None}}

    with fixed_upstream(json.dumps(error).encode()) as url:
        events = start_proxy(upstream_base_url=url).events(chat_body(WEATHER_TOOL, stream=True))

    assert events[-1]["error"]["message"] == "model overloaded"
    assert "[DONE]" not in events


def test_relayed_answer_is_counted_before_the_client_has_read_it(proxy: Proxy) -> None:
    """A relayed body with a content-length is whole at its last byte, before the relay's
    closing empty message: the request must be counted by then."""
    for _ in range(3):
        assert proxy.http.post("/v1/embeddings", json={"input": "x"}).status_code == 200

    assert scrape(proxy.http).value("toolcall_proxy_requests_total", route="passthrough") == 3
