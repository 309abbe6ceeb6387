"""Metrics: after scripted traffic through the served proxy, `/metrics` (read with
prometheus-client's parser) has moved the right counts under the right labels. Each proxy
has its own registry, so a fresh proxy starts every count at zero."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from observability import caught_logs, scrape
from servers import (
    MODEL,
    TIME_TOOL,
    WEATHER_TOOL,
    Proxy,
    StartProxy,
    chat_body,
    http_client,
    read_events,
)
from upstream_server import (
    TIME_CALL,
    USAGE,
    WEATHER_CALL,
    Fail,
    Hang,
    Reply,
    ScriptedUpstream,
)

STREAM_FLAG = {False: "false", True: "true"}


def test_tool_call_is_counted_by_protocol_and_tool_name(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str, stream: bool
) -> None:
    upstream.script(Reply("Let me check.", WEATHER_CALL[protocol]))

    protocol_proxy.chat(chat_body(WEATHER_TOOL, stream=stream))

    metrics = scrape(protocol_proxy.http)
    assert metrics.value("toolcall_proxy_tool_calls_total", protocol=protocol) == 1
    assert metrics.value("toolcall_proxy_tool_calls_total", tool="get_weather") == 1
    chat = {"route": "chat", "model": MODEL, "protocol": protocol, "stream": STREAM_FLAG[stream]}
    assert metrics.value("toolcall_proxy_requests_total", **chat, status_class="2xx") == 1
    assert metrics.value("toolcall_proxy_request_duration_seconds_count", route="chat") == 1
    assert metrics.value("toolcall_proxy_upstream_request_duration_seconds_count") == 1


@pytest.mark.parametrize(
    ("settings", "model_text", "kind"),
    [
        ({}, "<tool_call>this is not json</tool_call>", "malformed_json"),
        (
            {"unknown_tools": "text"},
            '<tool_call>{"name": "launch_rocket", "arguments": {}}</tool_call>',
            "unknown_tool",
        ),
    ],
)
def test_parse_failure_is_counted_by_protocol_and_kind(
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    settings: dict[str, Any],
    model_text: str,
    kind: str,
) -> None:
    proxy = start_proxy(**settings)
    upstream.script(Reply(model_text))

    completion = proxy.chat(chat_body(WEATHER_TOOL, stream=True))

    metrics = scrape(proxy.http)
    assert completion.tool_calls == []
    assert metrics.value("toolcall_proxy_parse_failures_total", protocol="json-mix") == 1
    assert metrics.value("toolcall_proxy_parse_failures_total", kind=kind) == 1
    assert metrics.value("toolcall_proxy_tool_calls_total") == 0


def test_calls_beyond_the_first_are_counted_as_dropped_when_parallel_calls_are_off(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"], TIME_CALL["json-mix"]))

    proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, parallel_tool_calls=False))

    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_dropped_tool_calls_total", protocol="json-mix") == 1
    assert metrics.value("toolcall_proxy_tool_calls_total", tool="get_weather") == 1
    assert metrics.value("toolcall_proxy_tool_calls_total", tool="get_time") == 0


def test_upstream_5xx_is_counted_as_a_status_error_and_a_5xx_answer(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Fail(503, "overloaded"))

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=stream))

    metrics = scrape(proxy.http)
    assert response.status_code == 503
    assert metrics.value("toolcall_proxy_upstream_errors_total", kind="status") == 1
    assert metrics.value("toolcall_proxy_upstream_errors_total") == 1
    assert metrics.value("toolcall_proxy_requests_total", route="chat", status_class="5xx") == 1


def test_unreachable_upstream_is_counted_as_a_connect_error(
    start_proxy: StartProxy, unreachable_url: str
) -> None:
    proxy = start_proxy(upstream_base_url=unreachable_url)

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))

    assert response.status_code == 502
    assert scrape(proxy.http).value("toolcall_proxy_upstream_errors_total", kind="connect") == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_prompt_and_completion_tokens_come_from_upstream_usage(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    options = {"stream_options": {"include_usage": True}} if stream else {}

    proxy.chat(chat_body(WEATHER_TOOL, stream=stream, **options))

    metrics = scrape(proxy.http)
    tokens = "toolcall_proxy_upstream_tokens_total"
    assert metrics.value(tokens, kind="prompt", model=MODEL) == USAGE["prompt_tokens"]
    assert metrics.value(tokens, kind="completion", model=MODEL) == USAGE["completion_tokens"]


def test_finished_stream_leaves_no_stream_in_progress_and_counts_what_it_sent(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Let me check.", WEATHER_CALL["json-mix"]))

    with proxy.http.stream(
        "POST", "/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=True)
    ) as response:
        body = response.read()

    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_streams_in_progress") == 0
    assert metrics.value("toolcall_proxy_sse_sent_bytes_total", route="chat") == len(body)
    assert metrics.value("toolcall_proxy_sse_chunks_sent_total", route="chat") == body.count(
        b"\n\n"
    )
    assert metrics.value("toolcall_proxy_time_to_first_byte_seconds_count", route="chat") == 1


def test_stream_is_in_progress_until_its_client_leaves_and_the_leave_is_counted(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Hang("It is ", "sunny"))
    body = chat_body(WEATHER_TOOL, stream=True)

    with caught_logs("toolcall_proxy.access") as access:
        with proxy.http.stream("POST", "/v1/chat/completions", json=body) as response:
            request_id = response.headers["x-request-id"]
            events = read_events(response.iter_lines())  # kept open until the block ends
            next(event for event in events if event["choices"][0]["delta"].get("content"))
            during = scrape(proxy.http).value("toolcall_proxy_streams_in_progress")
        # The client has hung up mid-answer.
        access.wait_for(lambda line: request_id in line)  # the request has been recorded

    metrics = scrape(proxy.http)
    assert during == 1
    assert metrics.value("toolcall_proxy_client_disconnects_total", route="chat") == 1
    assert metrics.value("toolcall_proxy_streams_in_progress") == 0


def test_model_names_beyond_the_cap_are_counted_as_other(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    from service.observability.metrics import MAX_MODEL_LABELS

    models = [f"model-{n}" for n in range(MAX_MODEL_LABELS + 2)]
    upstream.script(*(Reply("Hi.") for _ in models))

    for model in models:
        proxy.chat(chat_body(model=model))

    requests = scrape(proxy.http).value
    assert requests("toolcall_proxy_requests_total", route="chat", model=models[0]) == 1
    assert requests("toolcall_proxy_requests_total", route="chat", model="other") == 2
    assert requests("toolcall_proxy_requests_total", route="chat", model=models[-1]) == 0


def test_metrics_port_serves_metrics_that_the_api_port_does_not(start_proxy: StartProxy) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = start_proxy(metrics_port=port)
    proxy.http.get("/healthz")

    with http_client(base_url=f"http://127.0.0.1:{port}") as http:
        metrics = scrape(http)

    assert proxy.http.get("/metrics").status_code == 404
    assert metrics.value("toolcall_proxy_requests_total", route="probe", status_class="2xx") == 1
