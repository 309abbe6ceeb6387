"""An open upstream response relayed to the client byte for byte, for everything the proxy
does not need to read (tools-free chats and every other `/v1/*` endpoint); and the one owner
that closes an upstream stream once a handler holds it, whichever way it is answered."""

from __future__ import annotations

import logging

import anyio
from sse_starlette.sse import SendTimeoutError
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ..wire import (
    EVENT_STREAM,
    ProxyError,
    data_event,
    downstream_headers,
    json_bytes,
    while_connected,
)
from .client import UpstreamStream

logger = logging.getLogger(__name__)

# Past the upstream's total deadline, the client's last write (the deadline's error event) is
# given this long before its answer is cut: a reading client takes it in milliseconds.
FINAL_WRITE_SECONDS = 1.0


class ClosingResponse(Response):
    """Sends `inner`, then closes `stream` in one `finally`, however sending ended: body
    done, client gone (even before the first byte), upstream broken, or a client too slow.
    A handler that opened a stream returns it wrapped so; nothing else closes it.

    The upstream connection is held no longer than the upstream's total deadline, whatever
    the client does: each write must be taken within `send_timeout`, and the whole answer
    ends by the deadline plus `FINAL_WRITE_SECONDS` (time for the error event that a read
    past the deadline gives). A client that reads a byte a second would otherwise hold its
    pool slot for as long as the model keeps writing.

    >>> stream = await upstream.open_stream("POST", url, headers=h, content=body)
    >>> return ClosingResponse(EventSourceResponse(events_from(stream)), stream, send_timeout=30)
    """

    def __init__(self, inner: Response, stream: UpstreamStream, *, send_timeout: float) -> None:
        self._inner = inner
        self._stream = stream
        self._send_timeout = send_timeout
        self.status_code = inner.status_code
        self.background = None
        self.raw_headers = inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            with anyio.move_on_after(self._send_timeout) as write:
                await send(message)
            if write.cancelled_caught:
                raise SendTimeoutError

        try:
            with anyio.move_on_after(self._stream.seconds_left() + FINAL_WRITE_SECONDS) as answer:
                await self._inner(scope, receive, send_in_time)
            if answer.cancelled_caught:
                logger.warning(
                    "answer cut at the upstream's total deadline: the client reads too slowly"
                )
        except SendTimeoutError:
            logger.warning(
                "answer abandoned: the client took no write for %s s", self._send_timeout
            )
        finally:
            await self._stream.aclose()


def relayed(stream: UpstreamStream, *, send_timeout: float) -> ClosingResponse:
    """`stream`'s status, headers and body relayed to the client.

    >>> return relayed(await upstream.open_stream("POST", ...), send_timeout=30)
    """
    return ClosingResponse(RelayResponse(stream), stream, send_timeout=send_timeout)


class RelayResponse(Response):
    """Streams `stream`'s body to the client until it ends, the upstream breaks or the
    client goes (noticed even while the upstream is silent). Use it through `relayed`."""

    def __init__(self, stream: UpstreamStream) -> None:
        self._stream = stream
        self.status_code = stream.status_code
        self.background = None
        self.raw_headers = [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in downstream_headers(stream.headers.items())
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await while_connected(receive, self._relay(send))
        except SendTimeoutError:
            raise  # a client too slow, not gone: the owner of the stream says so
        except (ClientDisconnect, OSError):
            logger.debug("client went away during the relay")  # nobody is left to tell

    async def _relay(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        try:
            async for chunk in self._stream.raw_chunks():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except ProxyError as error:
            if not self._stream.headers.get("content-type", "").startswith(EVENT_STREAM):
                raise  # the server drops the connection: a cut body must not look whole
            logger.warning("upstream failed mid-stream: %s", error.message)
            event = data_event(json_bytes(error.body()))
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
