"""Abandoning work for a client that has gone: the ASGI server does not cancel a handler
when its client disconnects, so whatever waits on the upstream must watch for it."""

from __future__ import annotations

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

    >>> answer = await while_connected(request.receive, upstream.request_json("POST", ...))
    """
    outcome: list[Result] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_cancel_when_gone, receive, tasks.cancel_scope)
        try:
            outcome.append(await work)
        except Exception as error:  # raised below as itself, not wrapped in an ExceptionGroup
            failure.append(error)
        tasks.cancel_scope.cancel()
    if failure:
        raise failure[0]
    if not outcome:
        raise ClientDisconnect()
    return outcome[0]


async def _cancel_when_gone(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
