"""Keep-alive comments in an event stream, only between whole events.

sse-starlette sends its ping from a task of its own, between any two chunks the body gives.
A long event goes out in pieces (each made once the one before it was taken), so a slow
client took a ping in the middle of a `data:` line, and the event's JSON broke: seen on a
50 MB `response.completed`. A ping that comes while an event is half sent is dropped: bytes
are flowing then, which is all a keep-alive is for."""

from __future__ import annotations

from sse_starlette import ServerSentEvent
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

KEEPALIVE_COMMENT = "keepalive"
KEEPALIVE = b": keepalive\n\n"  # what `keepalive_event` frames to, with "\n" separators


def keepalive_event() -> ServerSentEvent:
    """sse-starlette's ping, as a comment these responses recognise."""
    return ServerSentEvent(comment=KEEPALIVE_COMMENT, sep="\n")


class PingsBetweenEvents(Response):
    """Sends `inner`, an event stream pinging with `keepalive_event`, dropping each ping
    that would land inside an event.

    >>> pinging = EventSourceResponse(events, ping=15, ping_message_factory=keepalive_event)
    >>> return PingsBetweenEvents(pinging)
    """

    def __init__(self, inner: Response) -> None:
        self._inner = inner
        self.status_code = inner.status_code
        self.background = None
        self.raw_headers = inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        between_events = True

        async def pinging_between_events(message: Message) -> None:
            nonlocal between_events
            if message["type"] == "http.response.body":
                body = message.get("body", b"")
                if body == KEEPALIVE and not between_events:
                    return
                if body:
                    between_events = body.endswith(b"\n\n")
            await send(message)

        await self._inner(scope, receive, pinging_between_events)
