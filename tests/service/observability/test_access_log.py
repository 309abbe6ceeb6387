"""The access log: one line per request, human-readable or JSON, carrying the request id the
response echoes in X-Request-ID; and no key reaches the logs, debug output or metrics."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from observability import caught_logs, scrape
from servers import MODEL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

from service.observability.log_config import JsonFormatter

ACCESS_LOGGER = "toolcall_proxy.access"
GENERATED_ID = re.compile(r"[0-9a-f]{32}")
PROXY_KEY = "sk-proxy-secret-1234"
UPSTREAM_KEY = "sk-upstream-secret-5678"
QUERY_KEY = "query-secret-9012"


def test_text_line_names_request_status_model_protocol_stream_calls_and_id(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sure.", WEATHER_CALL["json-mix"]))

    with caught_logs(ACCESS_LOGGER) as access:
        response = proxy.http.post(
            "/v1/chat/completions",
            json=chat_body(WEATHER_TOOL, stream=True),
            headers={"x-request-id": "agent-42"},
        )

    assert response.headers["x-request-id"] == "agent-42"
    [line] = access.messages
    assert re.fullmatch(
        r'"POST /v1/chat/completions" 200 \d+\.\dms model="test-model" protocol=json-mix'
        r" stream=true tool_calls=1 request_id=agent-42",
        line,
    )


def test_json_line_has_every_field(upstream: ScriptedUpstream, proxy: Proxy, stream: bool) -> None:
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    with caught_logs(ACCESS_LOGGER) as access:
        response = proxy.http.post(
            "/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=stream)
        )

    [record] = access.records
    fields = json.loads(JsonFormatter().format(record))
    assert fields.pop("duration_ms") >= 0
    assert datetime.fromisoformat(fields.pop("time")).tzinfo is not None
    assert fields.pop("message") == record.getMessage()
    assert fields == {
        "level": "info",
        "logger": ACCESS_LOGGER,
        "request_id": response.headers["x-request-id"],
        "method": "POST",
        "path": "/v1/chat/completions",
        "status": 200,
        "model": MODEL,
        "protocol": "json-mix",
        "stream": stream,
        "tool_calls": 1,
        "client_disconnected": False,
        "session": None,
    }


def test_json_line_shows_what_the_client_sent_escaped(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Sure."))

    with caught_logs(ACCESS_LOGGER) as access:
        proxy.http.post("/v1/chat/completions", json=chat_body(model="m\u2028\x85\x1b[2J"))

    [record] = access.records
    line = JsonFormatter().format(record)
    assert line.splitlines() == [line]
    assert json.loads(line)["model"] == "m\\u2028\\x85\\x1b[2J"


@pytest.mark.parametrize(
    "sent", [None, "has spaces", "x" * 200], ids=["missing", "spaces", "too-long"]
)
def test_missing_or_unsafe_request_id_is_replaced_by_a_generated_one(
    proxy: Proxy, sent: str | None
) -> None:
    headers = {} if sent is None else {"x-request-id": sent}

    with caught_logs(ACCESS_LOGGER) as access:
        response = proxy.http.get("/healthz", headers=headers)

    request_id = response.headers["x-request-id"]
    assert GENERATED_ID.fullmatch(request_id)
    [line] = access.messages
    assert line.endswith(f"request_id={request_id}")


def test_access_log_can_be_turned_off(start_proxy: StartProxy) -> None:
    proxy = start_proxy(access_log=False)

    with caught_logs(ACCESS_LOGGER) as access:
        response = proxy.http.get("/healthz")

    assert response.status_code == 200
    assert access.messages == []


def test_keys_never_reach_logs_debug_output_or_metrics(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy(
        proxy_api_keys=[PROXY_KEY], upstream_api_key=UPSTREAM_KEY, debug_parser_mw="parse"
    )
    upstream.script(Reply(WEATHER_CALL["json-mix"]))
    authorization = {"authorization": f"Bearer {PROXY_KEY}"}

    with caught_logs("toolcall_proxy") as logs:
        proxy.http.post(
            f"/v1/chat/completions?api-key={QUERY_KEY}",
            json=chat_body(WEATHER_TOOL, stream=True),
            headers=authorization,
        )
        proxy.http.post(
            f"/v1/embeddings?key={QUERY_KEY}", json={"input": "x"}, headers=authorization
        )
    metrics = scrape(proxy.http)

    assert upstream.requests[0].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert "parse summary" in logs.text and "/v1/embeddings" in logs.text
    for secret in (PROXY_KEY, UPSTREAM_KEY, QUERY_KEY):
        assert secret not in logs.text
        assert secret not in metrics.text
