"""A client that stops reading holds its upstream connection no longer than the send
deadline (SERVER_SEND_TIMEOUT) allows, nor past the upstream's total deadline: its answer is
abandoned and the upstream request closed, so a pool's worth of such clients cannot starve
everyone else. The client here asks for a stream and never reads a byte of it, while the
upstream has far more to say than the sockets between them can buffer."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
from servers import MODEL, QUESTION, WEATHER_TOOL, StartProxy
from upstream_server import Hang, ScriptedUpstream
from waits import HUNG_AFTER_SECONDS

# More than loopback sockets buffer (a few MiB each way): the proxy's writes must block.
CHUNK = "All work and no play makes a dull answer. " * 1000  # ~42 KB
CHUNKS = 400  # ~17 MB
SMALL_RECEIVE_BUFFER = 4096


def silent_stream(url: str, body: dict[str, Any]) -> socket.socket:
    """A connection that sends one streamed request and then reads nothing."""
    parts = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RECEIVE_BUFFER)
    sock.connect((parts.hostname, parts.port))
    payload = json.dumps(body).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    sock.sendall(head.encode() + payload)
    return sock


@pytest.mark.parametrize(
    "tools", [pytest.param([WEATHER_TOOL], id="parsed"), pytest.param([], id="relayed")]
)
def test_a_client_that_stops_reading_loses_its_answer_and_its_upstream_connection(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tools: list[dict[str, Any]]
) -> None:
    upstream.script(Hang(*[CHUNK] * CHUNKS))
    proxy = start_proxy(server_send_timeout=0.5)
    body = {"model": MODEL, "messages": [QUESTION], "stream": True}
    if tools:
        body["tools"] = tools

    with silent_stream(proxy.url, body):
        assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


def test_a_client_too_slow_for_the_total_deadline_is_cut_there(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    upstream.script(Hang(*[CHUNK] * CHUNKS))
    # The send deadline alone would wait ten minutes: the total deadline ends it first.
    proxy = start_proxy(server_send_timeout=600, upstream_total_timeout=0.5)
    body = {"model": MODEL, "messages": [QUESTION], "stream": True, "tools": [WEATHER_TOOL]}

    with silent_stream(proxy.url, body):
        assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)
