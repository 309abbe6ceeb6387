"""Abandoning work for a client that has gone: the ASGI server does not cancel a handler
when its client disconnects, so whatever waits on the upstream must watch for it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import anyio
from starlette.requests import ClientDisconnect
from starlette.types import Receive

Result = TypeVar("Result")


async def while_connected(receive: Receive, work: Awaitable[Result]) -> Result:
    """`work`'s result; if the client disconnects first, `work` is cancelled (closing its
    upstream request) and `ClientDisconnect` raised. Only once the request body has been
    read: the watch consumes the client's ASGI messages.

    `work` runs in the caller's task, inside a cancel scope the watch cancels: a task group
    would spawn `work` too and wait for the cancelled watch to end, costing every request a
    task and a loop turn more than this. The scope is anyio's, never `handler.cancel()`:
    `work` talks to httpx, whose pool gives connections back in code shielded by anyio
    scopes only; a native cancellation landing there (the client leaving just as a
    connection is opened or a body closed) leaves the connection checked out for good.

    >>> answer = await while_connected(request.receive, upstream.request_json("POST", ...))
    """
    with anyio.CancelScope() as scope:
        watch = asyncio.create_task(_cancel_when_gone(receive, scope))
        try:
            return await work
        finally:
            watch.cancel()
    # Only our own cancellation ends up here (the scope swallows no one else's).
    raise ClientDisconnect()


async def _cancel_when_gone(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
