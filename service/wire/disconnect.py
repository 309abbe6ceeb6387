"""Abandoning work for a client that has gone: the ASGI server does not cancel a handler
when its client disconnects, so whatever waits on the upstream must watch for it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import ClientDisconnect
from starlette.types import Receive

Result = TypeVar("Result")


async def while_connected(receive: Receive, work: Awaitable[Result]) -> Result:
    """`work`'s result; if the client disconnects first, `work` is cancelled (closing its
    upstream request) and `ClientDisconnect` raised. Only once the request body has been
    read: the watch consumes the client's ASGI messages.

    `work` runs in the caller's task and the watch cancels that task: a task group would
    spawn `work` too and wait for the cancelled watch to end, costing every request a task
    and a loop turn more than this.

    >>> answer = await while_connected(request.receive, upstream.request_json("POST", ...))
    """
    handler = asyncio.current_task()
    assert handler is not None  # always inside a task under an ASGI server
    watch = asyncio.create_task(_cancel_when_gone(receive, handler))
    try:
        return await work
    except asyncio.CancelledError:
        # Our own cancellation (the watch ended by cancelling us) becomes the disconnect;
        # `uncancel` tells whether anyone else cancelled the handler too.
        if watch.done() and not watch.cancelled() and handler.uncancel() == 0:
            raise ClientDisconnect() from None
        raise
    finally:
        watch.cancel()


async def _cancel_when_gone(receive: Receive, handler: asyncio.Task[object]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    handler.cancel()
