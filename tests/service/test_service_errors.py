"""Failures answer in OpenAI's error shape with a fitting status: bad requests, upstream
errors, timeouts and broken streams, client disconnects, and the inbound key check."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from observability import caught_logs
from servers import MODEL, QUESTION, WEATHER_TOOL, Proxy, StartProxy, chat_body, read_events
from upstream_server import Drop, Fail, Hang, Reply, ScriptedUpstream, Step
from waits import HUNG_AFTER_SECONDS

# Short, so the timeout tests are quick; the scripted upstream never answers in time.
READ_TIMEOUT_SECONDS = 0.5
BAD_REQUESTS = [
    pytest.param(b'{"model": "test-model", "messages": [', id="malformed-json"),
    pytest.param(json.dumps({"model": MODEL}).encode(), id="missing-messages"),
    pytest.param(
        json.dumps(chat_body({"type": "function", "function": {"description": "?"}})).encode(),
        id="tool-without-a-name",
    ),
    pytest.param(json.dumps(chat_body(tools="get_weather")).encode(), id="tools-not-a-list"),
    pytest.param(
        json.dumps(
            chat_body(WEATHER_TOOL, tool_choice={"type": "function", "function": {"name": "nope"}})
        ).encode(),
        id="tool-choice-names-an-undeclared-tool",
    ),
]


def assert_openai_error(body: Any) -> None:
    assert body["error"].keys() == {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def post_chat(
    proxy: Proxy, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    return proxy.http.post("/v1/chat/completions", json=body, headers=headers)


@pytest.mark.parametrize("body", BAD_REQUESTS)
def test_bad_request_is_a_400_that_never_reaches_upstream(
    upstream: ScriptedUpstream, proxy: Proxy, body: bytes
) -> None:
    response = proxy.http.post(
        "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert_openai_error(response.json())
    assert upstream.requests == []


def test_oversized_body_is_a_413(upstream: ScriptedUpstream, start_proxy: StartProxy) -> None:
    proxy = start_proxy(max_request_bytes=1024)
    long_question = {"role": "user", "content": "Paris? " * 200}

    response = post_chat(proxy, chat_body(WEATHER_TOOL, messages=[long_question]))

    assert response.status_code == 413
    assert_openai_error(response.json())
    assert upstream.requests == []


@pytest.mark.parametrize("status", [404, 429, 500])
def test_upstream_error_keeps_its_status_and_body(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, status: int
) -> None:
    upstream.script(Fail(status, "try again later"))

    response = post_chat(proxy, chat_body(WEATHER_TOOL, stream=stream))

    assert response.status_code == status
    assert response.json() == Fail(status, "try again later").body


def test_sdk_sees_an_upstream_429_as_a_rate_limit_error(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Fail(429, "slow down"))

    with pytest.raises(openai.RateLimitError, match="slow down"):
        proxy.client.chat.completions.create(model=MODEL, messages=[QUESTION], tools=[WEATHER_TOOL])


def test_unreachable_upstream_is_a_502(
    start_proxy: StartProxy, unreachable_url: str, stream: bool
) -> None:
    proxy = start_proxy(upstream_base_url=unreachable_url)

    response = post_chat(proxy, chat_body(WEATHER_TOOL, stream=stream))

    assert response.status_code == 502
    assert_openai_error(response.json())


def test_upstream_url_without_v1_is_named_as_the_likely_cause_of_its_404s(
    start_proxy: StartProxy, upstream_url: str, stream: bool
) -> None:
    proxy = start_proxy(upstream_base_url=upstream_url.removesuffix("/v1"))

    with caught_logs("service.upstream.client") as warnings:
        answers = [post_chat(proxy, chat_body(WEATHER_TOOL, stream=stream)) for _ in range(2)]
        ready = proxy.http.get("/readyz")

    assert [answer.status_code for answer in answers] == [404, 404]
    assert_openai_error(answers[0].json())
    assert "base URL does not end in /v1" in answers[0].json()["error"]["message"]
    assert ready.status_code == 503
    [warning] = warnings.messages  # once for the upstream server, not once per request
    assert "/chat/completions" in warning and "11434/v1" in warning


def test_upstream_that_never_answers_is_a_504_and_is_hung_up_on(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(upstream_read_timeout=READ_TIMEOUT_SECONDS)
    upstream.script(Hang())

    response = post_chat(proxy, chat_body(WEATHER_TOOL, stream=stream))

    assert response.status_code == 504
    assert_openai_error(response.json())
    assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


def test_client_leaving_before_the_upstream_answers_closes_the_upstream_request(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Hang())

    with pytest.raises(httpx.ReadTimeout):  # the client gives up and hangs up
        proxy.http.post(
            "/v1/chat/completions",
            json=chat_body(WEATHER_TOOL, stream=stream),
            timeout=READ_TIMEOUT_SECONDS,
        )

    assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


@pytest.mark.parametrize(
    ("failure", "settings"),
    [
        pytest.param(Drop("It is ", "sunny"), {}, id="connection-dropped"),
        pytest.param(
            Hang("It is ", "sunny"),
            {"upstream_read_timeout": READ_TIMEOUT_SECONDS},
            id="read-timeout",
        ),
        pytest.param(
            Hang("It is ", "sunny"),
            {"upstream_total_timeout": READ_TIMEOUT_SECONDS},
            id="total-timeout",
        ),
    ],
)
def test_upstream_failing_mid_stream_ends_the_stream_with_one_error_event(
    upstream: ScriptedUpstream, start_proxy: StartProxy, failure: Step, settings: dict[str, Any]
) -> None:
    proxy = start_proxy(**settings)
    upstream.script(failure)

    *chunks, last = proxy.events(chat_body(WEATHER_TOOL, stream=True))

    assert_openai_error(last)
    assert all("error" not in chunk for chunk in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "It is sunny"


def test_client_leaving_mid_stream_closes_the_upstream_request(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Hang("It is ", "sunny"))
    body = chat_body(WEATHER_TOOL, stream=True)

    with proxy.http.stream("POST", "/v1/chat/completions", json=body) as response:
        for event in read_events(response.iter_lines()):
            if event["choices"][0]["delta"].get("content"):
                break  # upstream is mid-answer; hang up

    assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


@pytest.mark.parametrize(
    "headers", [{}, {"authorization": "Bearer sk-wrong"}], ids=["missing-key", "wrong-key"]
)
def test_request_without_a_valid_proxy_key_is_a_401(
    upstream: ScriptedUpstream, start_proxy: StartProxy, headers: dict[str, str]
) -> None:
    proxy = start_proxy(proxy_api_keys=["sk-right", "sk-other"])

    response = post_chat(proxy, chat_body(WEATHER_TOOL), headers)

    assert response.status_code == 401
    assert_openai_error(response.json())
    assert upstream.requests == []


def test_sdk_with_a_wrong_key_gets_an_authentication_error(start_proxy: StartProxy) -> None:
    proxy = start_proxy(proxy_api_keys=["sk-right"])

    with pytest.raises(openai.AuthenticationError):
        proxy.client.chat.completions.create(model=MODEL, messages=[QUESTION])


def test_valid_proxy_key_is_let_through_and_upstream_gets_its_own_key(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(proxy_api_keys=["sk-right", "sk-other"], upstream_api_key="sk-upstream")
    upstream.script(Reply("Sunny."))

    completion = proxy.client.with_options(api_key="sk-other").chat.completions.create(
        model=MODEL, messages=[QUESTION], tools=[WEATHER_TOOL]
    )

    assert completion.choices[0].message.content == "Sunny."
    [sent] = upstream.chat_requests
    assert sent.headers["authorization"] == "Bearer sk-upstream"
