"""Server-sent-event framing both ways: `data:` payloads out of the upstream's lines, and
ready-made event bytes for sse-starlette to send to the client."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable

from .errors import UPSTREAM_ERROR, ProxyError

EVENT_STREAM = "text/event-stream"
DONE = "[DONE]"
DONE_EVENT = b"data: [DONE]\n\n"
DATA_FIELD = b"data:"
# SSE event bytes for the client, from an async generator: closed at once if the client goes.
EventStream = AsyncGenerator[bytes, None]


class LineSplitter:
    """Body bytes in, lines out, split where SSE splits them: CR, LF or CRLF, never at the
    U+2028, U+2029 or U+0085 that servers send raw inside JSON strings. A line that grows
    past `max_line_bytes` without ending raises 502: an upstream that never sends a line
    break must not make the proxy buffer without bound.

    >>> splitter = LineSplitter(max_line_bytes=1024)
    >>> splitter.feed(b"data: 1\\r"), splitter.feed(b"\\ndata: 2\\n\\n")
    ([b'data: 1'], [b'data: 2', b''])
    """

    __slots__ = ("_after_cr", "_max_line_bytes", "_pending")

    def __init__(self, max_line_bytes: int) -> None:
        self._max_line_bytes = max_line_bytes
        self._pending = b""
        self._after_cr = False  # the last line ended in CR: an LF opening the next is its end

    def feed(self, data: bytes) -> list[bytes]:
        if self._after_cr and data.startswith(b"\n"):
            data = data[1:]
        if self._pending:
            data = self._pending + data
        # bytes.splitlines breaks at CR, LF and CRLF only (str.splitlines at many more).
        lines = data.splitlines()
        ended = data.endswith((b"\n", b"\r"))
        self._pending = b"" if ended or not lines else lines.pop()
        self._after_cr = data.endswith(b"\r")
        # No line is longer than the data it came in: only a long read needs measuring.
        if len(data) > self._max_line_bytes and max(map(len, [*lines, self._pending])) > (
            self._max_line_bytes
        ):
            raise self._too_long()
        return lines

    def finish(self) -> list[bytes]:
        """The last line, when the body did not end with a line break."""
        pending, self._pending = self._pending, b""
        return [pending] if pending else []

    def _too_long(self) -> ProxyError:
        return ProxyError(
            502,
            f"upstream sent a line longer than {self._max_line_bytes} bytes",
            error_type=UPSTREAM_ERROR,
            code="upstream_line_too_long",
        )


def data_payloads(lines: Iterable[bytes]) -> list[str]:
    """The payload of every `data:` line; comments, `event:`, `id:` and blank lines skipped.

    OpenAI-compatible servers put each JSON chunk on one `data:` line, so each line is
    dispatched on its own: that also copes with servers that omit the blank line between
    events, at the price of not joining multi-line data (which no such server sends).

    >>> data_payloads([b"data: {}", b"", b": ping", b"data:[DONE]"])
    ['{}', '[DONE]']
    """
    field = len(DATA_FIELD)
    return [
        # The SSE spec strips exactly one space after the colon.
        line[field + line.startswith(b" ", field) :].decode("utf-8", "replace")
        for line in lines
        if line.startswith(DATA_FIELD)
    ]


def data_event(payload: bytes) -> bytes:
    """One event carrying `payload` (which must not contain a newline: JSON never does)."""
    return b"data: " + payload + b"\n\n"


def event_payload(event: bytes) -> str:
    """The payload of one event made by `data_event` (or `DONE_EVENT`)."""
    return event[len(b"data: ") : -len(b"\n\n")].decode()
