"""Keep-alive comments go only between whole events: one that comes while an event is half
sent (a long event goes out in pieces) is dropped, as it would break the event's data line."""

from __future__ import annotations

import asyncio

from sse_starlette.sse import ensure_bytes
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from service.wire import KEEPALIVE, PingsBetweenEvents, keepalive_event

PIECES = [b'data: {"text": "a long', b' event, sent in pieces"}\n\n']


class Interleaved(Response):
    """An event stream whose pinging task sends a keep-alive between any two chunks."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.status_code, self.background, self.raw_headers = 200, None, []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for chunk in self.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def sent_bodies(response: Response) -> list[bytes]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    asyncio.run(response({"type": "http"}, receive, send))
    return [message["body"] for message in sent if message["type"] == "http.response.body"]


def test_the_ping_is_the_comment_recognised() -> None:
    assert ensure_bytes(keepalive_event(), "\n") == KEEPALIVE


def test_a_ping_inside_an_event_is_dropped_and_one_between_events_sent() -> None:
    inner = Interleaved(KEEPALIVE, PIECES[0], KEEPALIVE, PIECES[1], KEEPALIVE)

    bodies = sent_bodies(PingsBetweenEvents(inner))

    assert bodies == [KEEPALIVE, PIECES[0], PIECES[1], KEEPALIVE, b""]
    assert b"".join(bodies).count(b"data:") == 1


def test_data_that_merely_looks_like_a_ping_between_pieces_is_data_only_outside_an_event() -> None:
    whole_events = Interleaved(b"data: 1\n\n", KEEPALIVE, b"data: 2\n\n")

    assert sent_bodies(PingsBetweenEvents(whole_events))[:3] == [
        b"data: 1\n\n",
        KEEPALIVE,
        b"data: 2\n\n",
    ]
