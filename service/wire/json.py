"""JSON as the proxy reads and writes it on the wire: orjson for speed (every streamed chunk
is decoded once and its delta encoded once), the standard library for what orjson refuses.

orjson refuses to read a lone surrogate escape (`"\\ud83d"`), valid JSON that real clients
send (JavaScript slicing a string through an emoji) and a model's output may hold, and NaN
or Infinity, which Python's json reads and some servers write; it refuses to write a lone
surrogate or an integer past 64 bits. The standard library reads and writes those, so
nothing orjson refuses becomes an error. (NaN and Infinity are written as null.)

U+0085, U+2028 and U+2029 are written escaped, as Python's json writes them: raw inside a
JSON string they are valid, but clients that split an event stream into lines the way
`str.splitlines` does (httpx's `aiter_lines` among them) would cut an event there.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

COMPACT = (",", ":")
LINE_BREAKS_ESCAPED = (
    (b"\xc2\x85", b"\\u0085"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)
JSON_MEDIA_TYPE = "application/json"
# A body is handed to the server this much at a time: the server buffers whatever the socket
# has not taken of one write, so a 60 MiB answer given whole was copied once more there.
BODY_SLICE_BYTES = 1024 * 1024


def json_bytes(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON. The fallback writes a lone surrogate (only ever inside
    a string) with `backslashreplace` as `\\udXXX`: exactly JSON's escape for it."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:  # a lone surrogate, an integer past 64 bits, a key that is no string
        encoded = json.dumps(value, ensure_ascii=False, separators=COMPACT).encode(
            "utf-8", "backslashreplace"
        )
    # Two scans rule all three out (E2 80 also begins dashes and curly quotes: then replace).
    if b"\xe2\x80" in encoded or b"\xc2\x85" in encoded:
        for raw, escaped in LINE_BREAKS_ESCAPED:
            encoded = encoded.replace(raw, escaped)
    return encoded


def json_value(text: str | bytes) -> Any:
    """`text` decoded; a `ValueError` if it is not JSON. An integer past 64 bits comes back
    as a float (orjson's reading): no field of the OpenAI API holds one."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # a lone surrogate, NaN: the standard library reads them
        return json.loads(text)


def json_response(value: Any, status_code: int = 200) -> Response:
    """Starlette's `JSONResponse`, without its 500 on a lone surrogate, its body sent in
    slices."""
    return SlicedResponse(json_bytes(value), status_code=status_code, media_type=JSON_MEDIA_TYPE)


class SlicedResponse(Response):
    """A response whose body goes to the server BODY_SLICE_BYTES at a time, each once the
    client has taken most of the one before (the server waits for its socket to drain before
    it takes another message), not whole into the server's write buffer."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self.body) <= BODY_SLICE_BYTES:
            return await super().__call__(scope, receive, send)
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        body = self.body
        for start in range(0, len(body), BODY_SLICE_BYTES):
            piece = body[start : start + BODY_SLICE_BYTES]
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        if self.background is not None:
            await self.background()
