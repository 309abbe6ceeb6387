"""The server's own limits, enforced before a request reaches the app and its auth: a head
too large is refused, connections that stall (idle, half a head, half a body, idle between
requests) are closed at their deadline, and requests in flight beyond the cap are refused
while probes pass. Each deadline test waits for the server to close the socket; a server
without the limit leaves it open and the read times out."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from raw_http import connect, parse_reply, read_until_closed
from servers import chat_body, http_client
from upstream_server import Paused, Reply, ScriptedUpstream
from waits import HUNG_AFTER_SECONDS

from service.app import create_app
from service.server_limits import GuardedHttpToolsProtocol, ServerLimits, server_options
from service.settings import Settings

# Small enough that no test waits long for a deadline, large enough for a loaded machine to
# send a whole request well within it.
DEADLINE_SECONDS = 0.5
HEADER_LIMIT = 16 * 1024
# What an attacker sends: far more than any buffer between client and server.
HEADER_FLOOD_BYTES = 60 * 1024 * 1024
FLOOD_LINE = b"X-Flood: " + b"a" * 8183 + b"\r\n"  # 8 KiB per header line
# More idle connections than the cap allows requests, as a client pool or a scanner leaves them.
IDLE_CONNECTIONS = 8
PROBES = ("/healthz", "/readyz", "/metrics")

ServeProxy = Callable[..., str]


@pytest.fixture
def serve_proxy(upstream_url: str) -> Iterator[ServeProxy]:
    """`serve_proxy(**settings)`: the proxy served as the CLI serves it, with short deadlines
    unless `settings` name others."""
    from servers import serve

    with ExitStack() as stack:

        def start(**fields: Any) -> str:
            settings = Settings(
                **{
                    "upstream_base_url": upstream_url,
                    "server_max_header_bytes": HEADER_LIMIT,
                    "server_header_timeout": DEADLINE_SECONDS,
                    "server_body_timeout": DEADLINE_SECONDS,
                    "server_keep_alive_timeout": DEADLINE_SECONDS,
                    **fields,
                }
            )
            options = server_options(settings)
            options["http"] = GuardedHttpToolsProtocol.with_limits(ServerLimits.of(settings))
            return stack.enter_context(serve(create_app(settings), **options))

        yield start


def flood_headers(sock: socket.socket) -> int:
    """Send header lines until the server stops taking them; how many bytes it took."""
    sent = 0
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n")
        while sent < HEADER_FLOOD_BYTES:
            sock.sendall(FLOOD_LINE)
            sent += len(FLOOD_LINE)
    except OSError:  # reset or broken pipe: the server closed the connection
        pass
    return sent


def refused_or_closed(sock: socket.socket, status: int) -> None:
    """The server answered `status` and closed, or closed (a reset can overtake the answer
    while unread request bytes are still in flight)."""
    received = read_until_closed(sock)
    assert not received or parse_reply(received).status == status


def test_header_flood_is_refused_long_before_it_ends(serve_proxy: ServeProxy) -> None:
    url = serve_proxy()

    with connect(url) as sock:
        sent = flood_headers(sock)
        refused_or_closed(sock, 431)

    assert sent < HEADER_FLOOD_BYTES


def test_head_over_the_limit_gets_431(serve_proxy: ServeProxy) -> None:
    url = serve_proxy()
    long_url = b"/healthz?" + b"q" * (2 * HEADER_LIMIT)

    with connect(url) as sock:
        sock.sendall(b"GET " + long_url)
        refused_or_closed(sock, 431)


def test_head_within_the_limit_is_served(serve_proxy: ServeProxy) -> None:
    url = serve_proxy()

    with connect(url) as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n" + FLOOD_LINE + b"Connection: close\r\n\r\n"
        )
        assert parse_reply(read_until_closed(sock)).status == 200


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n"],
    ids=["idle-connection", "half-sent-head"],
)
def test_head_not_sent_in_time_gets_408_and_a_close(serve_proxy: ServeProxy, sent: bytes) -> None:
    url = serve_proxy()

    with connect(url) as sock:
        sock.sendall(sent)
        reply = parse_reply(read_until_closed(sock))

    assert reply.status == 408
    assert reply.json["error"]["code"] == "request_timeout"


def test_body_not_sent_in_time_closes_the_connection(serve_proxy: ServeProxy) -> None:
    url = serve_proxy()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )

    with connect(url) as sock:
        sock.sendall(head + b'{"model": "m", ')
        received = read_until_closed(sock)

    assert not received or parse_reply(received).status >= 400


def test_idle_keep_alive_connection_is_closed(serve_proxy: ServeProxy) -> None:
    url = serve_proxy()

    with connect(url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
        reply = parse_reply(read_until_closed(sock))

    assert reply.status == 200
    assert reply.json == {"status": "ok"}


def serve_capped_proxy(serve_proxy: ServeProxy, cap: int) -> str:
    """A proxy with at most `cap` requests in flight, whose idle connections stay open for
    the whole test (the usual head deadline)."""
    return serve_proxy(
        server_max_concurrency=cap,
        server_header_timeout=Settings().server_header_timeout,
        server_keep_alive_timeout=Settings().server_keep_alive_timeout,
    )


def test_idle_connections_do_not_take_the_concurrency_cap(
    serve_proxy: ServeProxy, upstream: ScriptedUpstream
) -> None:
    url = serve_capped_proxy(serve_proxy, cap=1)
    upstream.script(Reply("Hello."), Reply("Again."))

    with ExitStack() as idle, http_client(base_url=url) as http:
        for _ in range(IDLE_CONNECTIONS):
            idle.enter_context(connect(url))
        health = http.get("/healthz")
        # One after the other: the second is served only if the first gave its place back.
        answers = [http.post("/v1/chat/completions", json=chat_body()) for _ in range(2)]

    assert health.status_code == 200
    assert [answer.status_code for answer in answers] == [200, 200]


def test_probes_pass_while_requests_in_flight_fill_the_cap_and_others_get_503(
    serve_proxy: ServeProxy, upstream: ScriptedUpstream
) -> None:
    url = serve_capped_proxy(serve_proxy, cap=1)
    held = Paused(before=("Working on it. ",), after=("Done.",))
    upstream.script(held)

    with (
        http_client(base_url=url) as http,
        http.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as first,
    ):
        assert first.status_code == 200, first.read()
        assert held.paused.wait(HUNG_AFTER_SECONDS), "the upstream never got the request"
        probes = {path: http.get(path).status_code for path in PROBES}
        refused = http.post("/v1/chat/completions", json=chat_body())
        refused_messages = http.post("/v1/messages", json={"model": "m", "max_tokens": 5})
        held.resume.set()
        first.read()

    assert probes == dict.fromkeys(PROBES, 200)
    assert b"Done." in first.content
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    error = refused.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("server_error", "server_busy")
    assert refused_messages.status_code == 503  # in the shape Anthropic's clients read
    assert refused_messages.json()["error"]["type"] == "overloaded_error"
    assert len(upstream.chat_requests) == 1
