"""The engine's answer written as the Gemini API's `GenerateContentResponse`: whole, or
streamed as one whole response per event (server-sent `data:` events with `alt=sse`, else
the items of one JSON array), text and `thought` parts as they come, each `functionCall`
part once its arguments are complete, the finish reason and `usageMetadata` on the last.

Gemini streams no `[DONE]`, no `event:` lines and no comments: the google-genai SDKs take any
line that is not `data:` for JSON, and fail on it."""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..exchange import (
    AnswerEnd,
    CallDelta,
    CallStart,
    ChoiceEnd,
    ContentDelta,
    Event,
    Failure,
    ReasoningDelta,
    tokens_in_text,
)
from ..wire import ProxyError, json_bytes, json_value
from .errors import google_error

Part = dict[str, Any]
# Chat's finish reason -> Gemini's. A call ends a turn as any answer does: STOP.
FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
STOP, OTHER = "STOP", "OTHER"
# The last streamed response holds the finish reason; Gemini gives it an empty text part.
LAST_PARTS: list[Part] = [{"text": ""}]
RAW_ARGUMENTS = "arguments"


@dataclass(frozen=True, slots=True)
class Framing:
    """How streamed responses are laid on the wire: `first` before the first, `between`
    before each later one, `after` after each, `close` after the last (the answer's end or
    its failure)."""

    first: bytes
    between: bytes
    after: bytes
    close: bytes


SSE = Framing(first=b"data: ", between=b"data: ", after=b"\r\n\r\n", close=b"")
JSON_ARRAY = Framing(first=b"[", between=b",\r\n", after=b"", close=b"]")


class GeminiWriter:
    """One answer as `GenerateContentResponse`s. `framing`: how a stream is laid out (None
    for a whole answer); `thoughts`: reasoning is written as `thought` parts (else left
    out); `input_estimate`: the prompt's tokens when the upstream counts none.

    >>> writer = GeminiWriter(model="m", thoughts=False, framing=SSE, input_estimate=12)
    >>> writer.content("Hi")  # b'data: {"candidates":[...{"text":"Hi"}...]}\\r\\n\\r\\n'
    >>> writer.end(usage)  # the last response: finishReason, usageMetadata
    """

    def __init__(
        self, *, model: str, thoughts: bool, framing: Framing | None, input_estimate: int
    ) -> None:
        self.response_id = uuid.uuid4().hex
        self._model = model
        self._thoughts = thoughts
        self._framing = framing
        self._input_estimate = input_estimate
        self._started = False
        self._parts: list[Part] = []  # a whole answer's, text parts merged
        self._call: tuple[str, str, io.StringIO] | None = None  # (id, name, arguments)
        self._finish_reason = STOP
        self._usage: dict[str, Any] = {}
        self._output_chars = 0
        # Every streamed response but the last is this envelope around its parts.
        self._head = b'{"candidates":[{"content":{"role":"model","parts":['
        self._tail = b']},"index":0}],"modelVersion":%s,"responseId":%s}' % (
            json_bytes(model),
            json_bytes(self.response_id),
        )

    def write(self, event: Event) -> bytes:
        """The engine's event written (`exchange.Writer`): one candidate is all a Gemini
        request asks for, so every event is the first choice's."""
        if isinstance(event, ContentDelta):
            return self.content(event.text)
        if isinstance(event, ReasoningDelta):
            return self.reasoning(event.text)
        if isinstance(event, CallDelta):
            return self.call_arguments(event.text)
        if isinstance(event, CallStart):
            return self.call_start(event.call_id, event.name)
        if isinstance(event, ChoiceEnd):
            return self.choice_end(event.finish_reason)
        if isinstance(event, AnswerEnd):
            return self.end(event.usage)
        if isinstance(event, Failure):
            return self.failure(event.error)
        return b""  # the answer's and the choice's start: nothing to say yet

    def content(self, text: str) -> bytes:
        return self._text({"text": text}, text)

    def reasoning(self, text: str) -> bytes:
        return self._text({"text": text, "thought": True}, text) if self._thoughts else b""

    def call_start(self, call_id: str, name: str) -> bytes:
        """A call begins; the one before it, if any, is complete."""
        written = self._call_done()
        self._call = (call_id, name, io.StringIO())
        return written

    def call_arguments(self, text: str) -> bytes:
        assert self._call is not None, "a call's arguments follow its start"
        self._call[2].write(text)
        self._output_chars += len(text)
        return b""

    def choice_end(self, finish_reason: str | None) -> bytes:
        self._finish_reason = FINISH_REASONS.get(finish_reason or "stop", OTHER)
        return b""

    def end(self, usage: Mapping[str, Any] | None) -> bytes:
        """The last response: the last call, if one is still open, the finish reason and
        the usage."""
        self._usage = usage_metadata(usage, self._input_estimate, self._output_chars)
        if self._framing is None:
            self._call_done()
            return b""
        part = self._closed_call()
        parts = LAST_PARTS if part is None else [part]
        return self._last_item(json_bytes(self._response(parts, self._usage)))

    def failure(self, error: ProxyError) -> bytes:
        """A stream that fails ends with Google's error body, which the SDKs raise."""
        return self._last_item(json_bytes(google_error(error.body()["error"], error.status)))

    def whole(self) -> dict[str, Any]:
        """The whole `GenerateContentResponse` (once every event is written)."""
        return self._response(self._parts or [{"text": ""}], self._usage)

    def _text(self, part: Part, text: str) -> bytes:
        self._output_chars += len(text)
        written = self._call_done()
        if self._framing is None:
            last = self._parts[-1] if self._parts else None
            if last is not None and "text" in last and last.get("thought") == part.get("thought"):
                last["text"] += text
            else:
                self._parts.append(part)
            return written
        return written + self._parts_item([part])

    def _call_done(self) -> bytes:
        """The open call's `functionCall` part, now that its arguments are complete."""
        part = self._closed_call()
        if part is None:
            return b""
        if self._framing is None:
            self._parts.append(part)
            return b""
        return self._parts_item([part])

    def _closed_call(self) -> Part | None:
        if self._call is None:
            return None
        call_id, name, arguments = self._call
        self._call = None
        return {"functionCall": {"id": call_id, "name": name, "args": _args(arguments.getvalue())}}

    def _response(self, parts: list[Part], usage: dict[str, Any]) -> dict[str, Any]:
        candidate = {
            "content": {"role": "model", "parts": parts},
            "finishReason": self._finish_reason,
            "index": 0,
        }
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self._model,
            "responseId": self.response_id,
        }

    def _parts_item(self, parts: list[Part]) -> bytes:
        encoded = b",".join(json_bytes(part) for part in parts)
        return self._item(self._head + encoded + self._tail)

    def _last_item(self, response: bytes) -> bytes:
        assert self._framing is not None
        return self._item(response) + self._framing.close

    def _item(self, response: bytes) -> bytes:
        assert self._framing is not None
        framing = self._framing
        lead = framing.between if self._started else framing.first
        self._started = True
        return lead + response + framing.after


def _args(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Gemini sends. Ones that are no JSON object (cut short
    by the token limit, from an upstream that calls tools itself) are kept as their text."""
    try:
        args = json_value(arguments or "{}")
    except ValueError:
        args = None
    return args if isinstance(args, dict) else {RAW_ARGUMENTS: arguments}


def usage_metadata(
    usage: Mapping[str, Any] | None, input_estimate: int, output_chars: int
) -> dict[str, Any]:
    """Chat's usage as `usageMetadata` (the thoughts' tokens apart from the candidates', as
    Gemini counts them); estimates where the upstream counted nothing, for Gemini CLI decides
    when to compress its history by them."""
    usage = usage or {}
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens")
    prompt = prompt if type(prompt) is int else input_estimate
    completion = completion if type(completion) is int else tokens_in_text(output_chars)
    details = usage.get("completion_tokens_details")
    thoughts = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    thoughts = thoughts if type(thoughts) is int and 0 < thoughts <= completion else 0
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion - thoughts,
        "totalTokenCount": prompt + completion,
    }
    if thoughts:
        metadata["thoughtsTokenCount"] = thoughts
    cached = usage.get("prompt_tokens_details")
    cached = cached.get("cached_tokens") if isinstance(cached, Mapping) else None
    if type(cached) is int and cached > 0:
        metadata["cachedContentTokenCount"] = cached
    return metadata
