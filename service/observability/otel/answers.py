"""An upstream exchange read for its client span, beside the code that uses it: the request's
GenAI attributes from its body, and the answer's (id, model, finish reasons, token usage,
time to first chunk) from a copy of the bytes as they pass, whole JSON or event stream; with
content capture, both sides' messages in the GenAI conventions' shape.

The reading never changes, delays or fails the exchange: what it cannot read (an encoding
other than gzip or deflate, a body past its bound, a chunk that is not JSON) is left out; a
compressed body is inflated a bounded piece at a time, as the proxy's own reading is."""

from __future__ import annotations

import time
from typing import Any

import httpx

from ...wire import (
    DONE,
    EVENT_STREAM,
    BodyDecoder,
    LineSplitter,
    ProxyError,
    json_bytes,
    json_value,
)
from ...wire import data_payloads as sse_data_payloads
from . import conventions as sc
from .content import MessageParts, input_messages

# A whole answer is kept this far for reading (the proxy's own bound on it is its setting);
# one event-stream line too.
MAX_WHOLE_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
# Operations by the path their OpenAI-compatible endpoint ends in.
OPERATIONS = (
    ("/chat/completions", "chat"),
    ("/completions", "text_completion"),
    ("/embeddings", "embeddings"),
)
# Request fields -> attributes, for what a chat or completion request may carry.
REQUEST_FIELDS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
}
USAGE_FIELDS = {"prompt_tokens": sc.INPUT_TOKENS, "completion_tokens": sc.OUTPUT_TOKENS}
CHOICE_COUNT = "gen_ai.request.choice.count"
STOP_SEQUENCES = "gen_ai.request.stop_sequences"


def operation_of(path: str) -> str | None:
    """The GenAI operation an upstream path performs; None for any other (a model list)."""
    for ending, operation in OPERATIONS:
        if path.endswith(ending):
            return operation
    return None


def request_body(request: httpx.Request) -> dict[str, Any]:
    """The request's JSON object body; empty when it is streamed, or not a JSON object."""
    try:
        body = json_value(request.content) if request.content else None
    except (httpx.RequestNotRead, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def request_attributes(body: dict[str, Any], *, capture_content: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if isinstance(body.get("model"), str):
        attributes[sc.REQUEST_MODEL] = body["model"]
    attributes[sc.REQUEST_STREAM] = body.get("stream") is True
    for field, name in REQUEST_FIELDS.items():
        value = body.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    if isinstance(body.get("n"), int) and body["n"] != 1:
        attributes[CHOICE_COUNT] = body["n"]
    stop = body.get("stop")
    if isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        attributes[STOP_SEQUENCES] = [stop] if isinstance(stop, str) else stop
    if capture_content and isinstance(body.get("messages"), list):
        attributes[sc.INPUT_MESSAGES] = _json(input_messages(body["messages"]))
    return attributes


class AnswerReader:
    """Fed the answer's raw body bytes as they pass; `attributes()` once it ended."""

    def __init__(self, headers: httpx.Headers, started: float, *, capture_content: bool) -> None:
        self._started = started
        try:
            codings = headers.get_list("content-encoding", split_commas=True)
            self._decoder: BodyDecoder | None = BodyDecoder(codings)
        except httpx.DecodingError:  # more codings than the proxy reads
            self._decoder = None
        self._stream = headers.get("content-type", "").startswith(EVENT_STREAM)
        self._lines = LineSplitter(MAX_LINE_BYTES)
        self._whole = bytearray()
        self._readable = self._decoder is not None
        self._first_chunk: float | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._reasons: dict[int, str] = {}
        self._usage: dict[str, Any] | None = None
        self._messages = MessageParts() if capture_content else None

    def feed(self, raw: bytes) -> None:
        if not self._readable or self._decoder is None:
            return
        try:
            for data in self._decoder.feed(raw):
                self._read(data)
        except (httpx.DecodingError, ProxyError):  # a broken encoding, a line past its bound
            self._readable = False

    def attributes(self) -> dict[str, Any]:
        if self._readable and not self._stream:
            self._read_whole()
        attributes: dict[str, Any] = {}
        if self._id is not None:
            attributes[sc.RESPONSE_ID] = self._id
        if self._model is not None:
            attributes[sc.RESPONSE_MODEL] = self._model
        if self._reasons:
            attributes[sc.FINISH_REASONS] = [self._reasons[i] for i in sorted(self._reasons)]
        if self._first_chunk is not None:
            attributes[sc.TIME_TO_FIRST_CHUNK] = self._first_chunk
        attributes.update(self.tokens())
        if self._messages is not None and self._messages:
            attributes[sc.OUTPUT_MESSAGES] = _json(self._messages.output(self._reasons))
        return attributes

    def tokens(self) -> dict[str, int]:
        """The usage the upstream reported, as the conventions' input and output tokens."""
        usage = self._usage or {}
        return {
            name: usage[field]
            for field, name in USAGE_FIELDS.items()
            if isinstance(usage.get(field), int)
        }

    def _read(self, data: bytes) -> None:
        if not self._stream:
            self._whole += data
            if len(self._whole) > MAX_WHOLE_BYTES:
                self._readable, self._whole = False, bytearray()
            return
        for payload in sse_data_payloads(self._lines.feed(data)):
            if self._first_chunk is None:
                self._first_chunk = time.perf_counter() - self._started
            if payload != DONE:
                self._chunk(payload, "delta")

    def _read_whole(self) -> None:
        self._chunk(bytes(self._whole), "message")

    def _chunk(self, payload: str | bytes, message_key: str) -> None:
        try:
            chunk = json_value(payload)
        except ValueError:
            return
        if not isinstance(chunk, dict):
            return
        if self._id is None and isinstance(chunk.get("id"), str):
            self._id = chunk["id"]
        if self._model is None and isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or not isinstance(choice.get("index", 0), int):
                continue
            index = choice.get("index", 0)
            if isinstance(choice.get("finish_reason"), str):
                self._reasons[index] = choice["finish_reason"]
            if self._messages is not None and isinstance(choice.get(message_key), dict):
                self._messages.add(index, choice[message_key])


def _json(value: Any) -> str:
    return json_bytes(value).decode()
