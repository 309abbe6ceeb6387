"""Server-sent-event framing both ways: `data:` payloads out of the upstream's lines, and
ready-made event bytes for sse-starlette to send to the client."""

from __future__ import annotations

from collections.abc import AsyncIterator

EVENT_STREAM = "text/event-stream"
DONE = "[DONE]"
DONE_EVENT = b"data: [DONE]\n\n"
DATA_FIELD = "data:"


async def data_payloads(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The payload of every `data:` line; comments, `event:`, `id:` and blank lines skipped.

    OpenAI-compatible servers put each JSON chunk on one `data:` line, so each line is
    dispatched on its own: that also copes with servers that omit the blank line between
    events, at the price of not joining multi-line data (which no such server sends).
    """
    async for line in lines:
        if line.startswith(DATA_FIELD):
            payload = line[len(DATA_FIELD) :]
            # The SSE spec strips exactly one space after the colon.
            yield payload[1:] if payload.startswith(" ") else payload


def data_event(payload: str) -> bytes:
    """One event carrying `payload` (which must not contain a newline: JSON never does)."""
    return b"data: " + payload.encode() + b"\n\n"


def event_payload(event: bytes) -> str:
    """The payload of one event made by `data_event` (or `DONE_EVENT`)."""
    return event[len(b"data: ") : -len(b"\n\n")].decode()
