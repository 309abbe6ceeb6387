"""A client's request body, read or streamed under MAX_REQUEST_BYTES (beyond it: 413)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request

from .errors import ProxyError


def _too_large(limit: int) -> ProxyError:
    return ProxyError(413, f"request body exceeds {limit} bytes", code="request_too_large")


async def limited_stream(request: Request, limit: int) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; raises 413 as soon as it passes `limit`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise _too_large(limit)
        yield chunk


async def read_limited(request: Request, limit: int) -> bytes:
    return b"".join([chunk async for chunk in limited_stream(request, limit)])
