"""How long a request waited on its upstream, for what the proxy itself added to it.

Each upstream exchange is waited on from its request to the first byte of its body: for a
stream that is its first chunk, and a whole answer has been written by then (a model server
sends it once it is done). The waits are summed on the request's record; the rest of the
time to the proxy's own first byte is the proxy's (`RequestRecord.overhead`).

The proxy's one httpx client is an `ObservedClient`, whose `watches` see every exchange from
its request to the closing of its body; OpenTelemetry's client adds its own watch to this."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any, Protocol

import httpx

from .request_record import RequestRecord

# The request being answered in this task: set by the telemetry middleware for its duration.
current_record: ContextVar[RequestRecord | None] = ContextVar("toolcall_proxy_record", default=None)


class Watch(Protocol):
    """One watcher of one upstream exchange."""

    def responded(self, response: httpx.Response) -> None:
        """The status came; the watcher may wrap `response.stream` to see its body."""

    def failed(self, exc: Exception) -> None:
        """No answer came: the exchange broke."""

    def abandoned(self) -> None:
        """No answer came: the wait for it was cancelled (the client left, a deadline)."""


class ObservedClient(httpx.AsyncClient):
    """httpx's client, each exchange seen by its `watches`."""

    def watches(self, request: httpx.Request) -> list[Watch]:
        record = current_record.get()
        return [] if record is None else [UpstreamWait(record)]

    async def send(self, request: httpx.Request, **options: Any) -> httpx.Response:
        watches = self.watches(request)
        if not watches:
            return await super().send(request, **options)
        try:
            response = await super().send(request, **{**options, "stream": True})
        except Exception as exc:
            for watch in watches:
                watch.failed(exc)
            raise
        except BaseException:
            for watch in watches:
                watch.abandoned()
            raise
        for watch in watches:
            watch.responded(response)
        if not options.get("stream", False):
            await response.aread()  # as `send` does without `stream`
        return response


class UpstreamWait:
    """Adds one exchange's wait to its request's record."""

    def __init__(self, record: RequestRecord) -> None:
        self._record = record
        self._started: float | None = time.perf_counter()  # None once counted
        record.upstream_requests += 1

    def responded(self, response: httpx.Response) -> None:
        assert isinstance(response.stream, httpx.AsyncByteStream)  # an async client's
        response.stream = _FirstByteTimed(response.stream, self)

    def failed(self, exc: Exception) -> None:
        self.waited()

    def abandoned(self) -> None:
        self.waited()

    def waited(self) -> None:
        """The wait is over (the first byte came, or nothing will): counted, once."""
        if self._started is not None:
            self._record.upstream_waited += time.perf_counter() - self._started
            self._started = None


class _FirstByteTimed(httpx.AsyncByteStream):
    def __init__(self, body: httpx.AsyncByteStream, wait: UpstreamWait) -> None:
        self._body = body
        self._wait = wait

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = aiter(self._body)
        try:
            first = await anext(chunks)
        except StopAsyncIteration:
            return
        finally:
            self._wait.waited()
        yield first
        async for chunk in chunks:
            yield chunk

    async def aclose(self) -> None:
        self._wait.waited()  # a body closed unread, or empty
        await self._body.aclose()
