"""An upstream body's content codings undone a bounded piece at a time.

httpx inflates each network read whole, and each coding of a `Content-Encoding` list whole
again: `gzip, gzip` of 3.8 KB became 300 MB before the body limit saw its first byte (+571
to 602 MB), and one layer reached twice the limit (a 64 KiB read of zeros inflates to
64 MiB). Here every coding gives out at most DECODED_PIECE_BYTES at a time, the next coding
(or the reader, who counts the body) takes each piece before the next is made, so what a
body costs is what its reader keeps, plus a piece per coding."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterable, Iterator

import httpx

# The most one coding gives out at once: the size of a network read.
DECODED_PIECE_BYTES = 64 * 1024
# Real servers apply one coding (a second is allowed for a hop that compresses again); each
# is a zlib stream with its own 32 KiB window, and a header of `gzip,` repeated 10,000
# times would be 10,000 of them.
MAX_CODINGS = 2
_WBITS = {
    "gzip": zlib.MAX_WBITS | 16,
    "x-gzip": zlib.MAX_WBITS | 16,
    "deflate": zlib.MAX_WBITS,  # zlib's wrapper; raw deflate if the first bytes say so
}


class _Inflater:
    """One gzip or deflate coding undone, each input's output given out in pieces."""

    def __init__(self, coding: str) -> None:
        self._deflate = coding == "deflate"
        self._zlib = zlib.decompressobj(_WBITS[coding])
        self._started = False

    def pieces(self, inputs: Iterable[bytes]) -> Iterator[bytes]:
        for data in inputs:
            yield from self._inflate(data)

    def flush(self) -> Iterator[bytes]:
        yield from self._inflate(b"")
        try:
            rest = self._zlib.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(str(exc)) from exc
        if rest:
            yield rest

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                piece = self._zlib.decompress(data, DECODED_PIECE_BYTES)
            except zlib.error as exc:
                if not (self._deflate and not self._started):
                    raise httpx.DecodingError(str(exc)) from exc
                # A "deflate" body without zlib's wrapper, as some servers send (httpx too
                # reads it so).
                self._deflate, self._zlib = False, zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._started = True
            if piece:
                yield piece
            data = self._zlib.unconsumed_tail
            if not data and len(piece) < DECODED_PIECE_BYTES:
                return


class BodyDecoder:
    """The codings a `Content-Encoding` header lists, undone in the reverse order; identity
    and codings the proxy does not know pass the bytes on, as httpx does."""

    def __init__(self, content_encoding: Iterable[str]) -> None:
        codings = [c.strip().lower() for c in content_encoding]
        self._inflaters = [_Inflater(c) for c in reversed(codings) if c in _WBITS]
        if len(self._inflaters) > MAX_CODINGS:
            raise httpx.DecodingError(
                f"{len(self._inflaters)} content codings (at most {MAX_CODINGS} are read)"
            )

    def feed(self, data: bytes) -> Iterator[bytes]:
        pieces: Iterable[bytes] = (data,)
        for inflater in self._inflaters:
            pieces = inflater.pieces(pieces)
        return (piece for piece in pieces if piece)

    def flush(self) -> Iterator[bytes]:
        """The body ended: what each coding still holds, through the codings after it."""
        for index, inflater in enumerate(self._inflaters):
            pieces: Iterable[bytes] = inflater.flush()
            for later in self._inflaters[index + 1 :]:
                pieces = later.pieces(pieces)
            yield from pieces


def decoded_body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of a streamed `response`, decoded a bounded piece at a time; its reads as
    they come when no coding it lists is one to undo (no step more for every chunk)."""
    codings = response.headers.get_list("content-encoding", split_commas=True)
    if not any(coding.strip().lower() in _WBITS for coding in codings):
        return response.aiter_raw()
    return _decoded_body(response, codings)


async def _decoded_body(response: httpx.Response, codings: list[str]) -> AsyncIterator[bytes]:
    decoder = BodyDecoder(codings)  # raises here, as the body is read, for too many codings
    async for raw in response.aiter_raw():
        for piece in decoder.feed(raw):
            yield piece
    for piece in decoder.flush():
        yield piece
