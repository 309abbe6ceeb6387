"""An upstream body's content codings are undone a bounded piece at a time, each coding of
a nested `Content-Encoding` too: a small compressed body inflating to 64 MiB costs the
proxy what its reader keeps (the body limit, a 64 KiB error body), not what it inflates to.

Memory is counted with tracemalloc over the whole exchange (the proxy, the upstream and the
client share this process): httpx inflated each network read whole, so one read of these
bodies held 64 MiB at once."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from servers import WEATHER_TOOL, StartProxy, chat_body
from upstream_server import ScriptedUpstream, Verbatim, raw_chunk_event

INFLATED_BYTES = 64 * 1024 * 1024
SMALL_LIMIT = 4096
# What a request may hold beside its body: the proxy's own objects, a decoded piece for each
# coding, the bytes on the wire. Inflated a read at a time, one read held 64 MiB.
MAX_PEAK_BYTES = 8 * 1024 * 1024
CODINGS = ["gzip", "gzip, gzip"]


def compressed(body: bytes, codings: str) -> bytes:
    for _ in codings.split(","):
        body = gzip.compress(body, compresslevel=9)
    return body


def bomb(codings: str) -> bytes:
    """A JSON answer whose padding inflates it to INFLATED_BYTES, in `codings`."""
    head = b'{"id": "x", "choices": [], "padding": "'
    return compressed(head + b"0" * (INFLATED_BYTES - len(head) - 2) + b'"}', codings)


def peak_bytes(exchange: Callable[[], httpx.Response]) -> tuple[httpx.Response, int]:
    tracemalloc.start()
    try:
        response = exchange()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return response, peak


@pytest.mark.parametrize("codings", CODINGS)
def test_a_whole_answer_inflating_far_past_the_limit_costs_the_limit(
    upstream: ScriptedUpstream, start_proxy: StartProxy, codings: str
) -> None:
    headers = {"content-type": "application/json", "content-encoding": codings}
    upstream.script(Verbatim(bomb(codings), headers=headers))
    proxy = start_proxy(upstream_max_body_bytes=SMALL_LIMIT)

    response, peak = peak_bytes(
        lambda: proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))
    )

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_body_too_large"
    assert peak < MAX_PEAK_BYTES


@pytest.mark.parametrize("codings", CODINGS)
def test_an_error_body_inflating_far_past_what_is_read_costs_what_is_read(
    upstream: ScriptedUpstream, start_proxy: StartProxy, codings: str
) -> None:
    headers = {"content-type": "application/json", "content-encoding": codings}
    upstream.script(Verbatim(bomb(codings), headers=headers, status=500))
    proxy = start_proxy()

    response, peak = peak_bytes(
        lambda: proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))
    )

    assert response.status_code == 500
    assert peak < MAX_PEAK_BYTES


def test_a_stream_in_two_codings_is_read_as_it_was_written(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    delta: dict[str, Any] = {"role": "assistant", "content": "Hello"}
    finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
    body = (
        raw_chunk_event({"index": 0, "delta": delta, "finish_reason": None})
        + raw_chunk_event(finish)
        + b"data: [DONE]\n\n"
    )
    upstream.script(
        Verbatim(compressed(body, "gzip, gzip"), headers={"content-encoding": "gzip, gzip"})
    )
    proxy = start_proxy()

    events = proxy.events(chat_body(WEATHER_TOOL, stream=True))

    assert events[-1] == "[DONE]"
    text = "".join(
        event["choices"][0]["delta"].get("content") or ""
        for event in events[:-1]
        if event["choices"]
    )
    assert text == "Hello"


def test_more_codings_than_a_hop_applies_are_an_upstream_error(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    codings = "gzip, gzip, gzip"
    body = json.dumps({"id": "x", "choices": []}).encode()
    headers = {"content-type": "application/json", "content-encoding": codings}
    upstream.script(Verbatim(compressed(body, codings), headers=headers))
    proxy = start_proxy()

    response = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))

    assert response.status_code == 502
    assert "content codings" in response.json()["error"]["message"]
