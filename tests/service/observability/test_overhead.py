"""What the proxy itself adds to a request, apart from waiting on its upstream: the
`x-toolcall-proxy-overhead-ms` header of a whole answer, and the
`toolcall_proxy_overhead_seconds` histogram by route, streams included."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from observability import scrape
from servers import WEATHER_TOOL, StartProxy, chat_body, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from upstream_server import (
    UPSTREAM_ID,
    WEATHER_CALL,
    Reply,
    ScriptedUpstream,
    completion_body,
    raw_completion,
)

OVERHEAD_HEADER = "x-toolcall-proxy-overhead-ms"
# How long the slow upstream thinks before it answers: a model's time, not the proxy's.
THINKING_SECONDS = 0.3


@pytest.fixture
def slow_upstream_url() -> Iterator[str]:
    """An upstream that answers a whole completion after THINKING_SECONDS."""

    async def completions(request: Request) -> JSONResponse:
        asked = await request.json()
        await anyio.sleep(THINKING_SECONDS)
        return JSONResponse(completion_body(Reply(WEATHER_CALL["json-mix"]), asked["model"]))

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with serve(app) as url:
        yield url + "/v1"


def test_a_whole_answer_says_what_the_proxy_added_without_the_upstreams_time(
    start_proxy: StartProxy, slow_upstream_url: str
) -> None:
    proxy = start_proxy(upstream_base_url=slow_upstream_url)

    started = time.perf_counter()
    answer = proxy.http.post("/v1/chat/completions", json=chat_body(WEATHER_TOOL))
    elapsed = time.perf_counter() - started

    assert answer.status_code == 200 and answer.json()["id"] == UPSTREAM_ID
    overhead = float(answer.headers[OVERHEAD_HEADER]) / 1000
    # Whatever the machine's pace: the upstream's thinking is in the client's time, and
    # not in what the proxy says it added.
    assert 0 <= overhead <= elapsed - THINKING_SECONDS
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_overhead_seconds_count", route="chat") == 1
    assert metrics.value("toolcall_proxy_overhead_seconds_sum") == pytest.approx(
        overhead, abs=0.00001
    )


@pytest.mark.parametrize(
    ("path", "body", "route"),
    [
        ("/v1/chat/completions", chat_body(WEATHER_TOOL, stream=True), "chat"),
        ("/v1/responses", {"model": "m", "input": "Weather?", "stream": True}, "responses"),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]},
            "messages",
        ),
    ],
)
def test_every_front_door_counts_its_overhead_by_route(
    upstream: ScriptedUpstream, start_proxy: StartProxy, path: str, body: dict, route: str
) -> None:
    proxy = start_proxy()
    upstream.script(Reply("Sunny."))

    with proxy.http.stream("POST", path, json=body) as answer:
        answer.read()

    streamed = answer.headers["content-type"].startswith("text/event-stream")
    # A stream's overhead is known at its first byte, after its headers: in the metrics only.
    assert (OVERHEAD_HEADER in answer.headers) is not streamed
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_overhead_seconds_count", route=route) == 1


def test_no_overhead_is_told_for_what_asks_no_upstream_and_an_upstreams_own_is_replaced(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    proxy = start_proxy()
    relayed = raw_completion({"index": 0, "message": {"role": "assistant", "content": "Hi"}})
    relayed.headers[OVERHEAD_HEADER] = "999.00"
    upstream.script(relayed)

    probe = proxy.http.get("/healthz")
    answer = proxy.http.post("/v1/chat/completions", json=chat_body())  # no tools: relayed

    assert OVERHEAD_HEADER not in probe.headers
    assert answer.headers.get_list(OVERHEAD_HEADER) != ["999.00"]
    assert len(answer.headers.get_list(OVERHEAD_HEADER)) == 1
    assert scrape(proxy.http).value("toolcall_proxy_overhead_seconds_count") == 1
