"""What the proxy has nothing to rewrite in goes through untouched: tools-free chats, other
`/v1` endpoints and the model list; and the proxy's own health endpoints."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers import MODEL, Proxy, StartProxy, read_events
from upstream_server import (
    EMBEDDING,
    MODELS,
    Hang,
    Reply,
    ScriptedUpstream,
    Step,
    completion_body,
    event_stream,
)
from waits import HUNG_AFTER_SECONDS

JSON_CONTENT = {"content-type": "application/json"}
# Unusual spacing, key order and number spelling: re-serialising would change the bytes.
TOOLS_FREE_CHAT = (
    b'{"messages":[{"role":"user","content":"Hi"}],  "model":"test-model","temperature":0.50}'
)
TOOLS_FREE_STREAMED_CHAT = (
    b'{"stream":true,"model":"test-model","messages":[{"role":"user","content":"Hi"}],'
    b' "stream_options":{"include_usage":true},"x_vendor":{"keep":[1, 2.0]}}'
)


def decode_events(raw: bytes) -> list[Any]:
    return list(read_events(raw.decode().splitlines()))


def upstream_events(step: Step, raw_request: bytes) -> list[Any]:
    """The events the scripted upstream streams for `step`, decoded."""
    return decode_events(b"".join(event_stream(step, json.loads(raw_request))))


@pytest.mark.parametrize("raw", [TOOLS_FREE_CHAT, TOOLS_FREE_STREAMED_CHAT], ids=["json", "sse"])
def test_tools_free_chat_reaches_upstream_byte_for_byte(
    upstream: ScriptedUpstream, proxy: Proxy, raw: bytes
) -> None:
    upstream.script(Reply("Hello there."))

    response = proxy.http.post("/v1/chat/completions", content=raw, headers=JSON_CONTENT)

    assert response.status_code == 200
    [sent] = upstream.chat_requests
    assert sent.body == raw


def test_tools_free_chat_reply_comes_back_unchanged(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    reply = Reply("Hello", " there.")
    upstream.script(reply)

    response = proxy.http.post(
        "/v1/chat/completions", content=TOOLS_FREE_CHAT, headers=JSON_CONTENT
    )

    assert response.json() == completion_body(reply, MODEL)


def test_tools_free_streamed_chat_comes_back_event_for_event(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    reply = Reply("Hello", " <tool_call>not parsed</tool_call>", " there.")
    upstream.script(reply)

    response = proxy.http.post(
        "/v1/chat/completions", content=TOOLS_FREE_STREAMED_CHAT, headers=JSON_CONTENT
    )

    assert decode_events(response.content) == upstream_events(reply, TOOLS_FREE_STREAMED_CHAT)


def test_other_endpoint_is_forwarded_unchanged(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    raw = b'{"model": "embedder", "input": ["hello"], "encoding_format": "float"}'

    response = proxy.http.post("/v1/embeddings", content=raw, headers=JSON_CONTENT)

    assert (response.status_code, response.json()) == (200, EMBEDDING)
    [sent] = upstream.requests
    assert (sent.method, sent.path, sent.body) == ("POST", "/v1/embeddings", raw)


def test_other_endpoint_streams_while_upstream_is_still_answering(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """The first event arrives while the upstream holds its response open: nothing buffers."""
    hang = Hang("Hello")
    raw = b'{"model": "test-model", "prompt": "Hi", "stream": true}'
    upstream.script(hang)

    with proxy.http.stream(
        "POST", "/v1/completions", content=raw, headers=JSON_CONTENT
    ) as response:
        first = next(read_events(response.iter_lines()))

    assert first == upstream_events(hang, raw)[0]
    assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


def test_model_list_comes_from_upstream(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    assert [model.id for model in proxy.client.models.list()] == ["upstream-model"]
    assert proxy.http.get("/v1/models").json() == MODELS


def test_healthz_answers_without_asking_upstream(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    assert proxy.http.get("/healthz").status_code == 200
    assert upstream.requests == []


def test_readyz_is_200_while_upstream_answers(proxy: Proxy) -> None:
    assert proxy.http.get("/readyz").status_code == 200


def test_readyz_is_503_while_upstream_is_down(
    start_proxy: StartProxy, unreachable_url: str
) -> None:
    proxy = start_proxy(upstream_base_url=unreachable_url)

    assert proxy.http.get("/readyz").status_code == 503


def test_upstream_requests_go_through_the_http_proxy_the_environment_names(
    upstream: ScriptedUpstream,
    upstream_url: str,
    start_proxy: StartProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The scripted upstream stands in for the forward proxy: it receives the absolute URL.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", upstream_url.removesuffix("/v1"))
    proxy = start_proxy(upstream_base_url="http://model-server.invalid/v1")
    upstream.script(Reply("Hello."))

    completion = proxy.chat({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]})

    assert completion.content == "Hello."
    # `.invalid` never resolves: the answer can only have come through HTTP_PROXY.
    assert [request.path for request in upstream.chat_requests] == ["/v1/chat/completions"]
