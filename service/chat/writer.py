"""The engine's events as chat completions writes them: `chat.completion.chunk` events with the
envelope serialised once (streamed), or one `chat.completion` that keeps every field of the
upstream's own but the message it replaces (whole)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..exchange import (
    AnswerEnd,
    AnswerStart,
    CallDelta,
    CallStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Event,
    ReasoningDelta,
)
from ..upstream import REASONING_KEYS
from ..wire import DONE_EVENT, data_event, json_bytes

Delta = dict[str, Any]  # a chat delta, as `choices[].delta` holds it
ROLE_DELTA: Delta = {"role": "assistant", "content": ""}
CONTENT = "content"
REASONING = "reasoning_content"
# A call's type -> the field of its payload that grows fragment by fragment.
CALL_TEXT = {"function": "arguments", "custom": "input"}
# Message fields the parsed answer replaces.
REPLACED_FIELDS = frozenset({"content", "tool_calls", "function_call"})


class ChunkEncoder:
    """`chat.completion.chunk` JSON for one response. The envelope (id, created, model,
    system_fingerprint) is serialised once; each chunk costs one encoding of its delta.

    >>> encoder = ChunkEncoder(response_id="chatcmpl-1", created=1700000000, model="m")
    >>> encoder.chunk(0, {"content": "Hi"})
    b'{"id":"chatcmpl-1",...,"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}'
    """

    def __init__(
        self, *, response_id: str, created: int, model: str, system_fingerprint: str | None = None
    ) -> None:
        envelope: dict[str, Any] = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        if system_fingerprint is not None:
            envelope["system_fingerprint"] = system_fingerprint
        self._head = json_bytes(envelope)[:-1] + b',"choices":['

    @classmethod
    def matching(cls, upstream: Mapping[str, Any], fallback_model: str) -> ChunkEncoder:
        """An encoder that copies an upstream chunk's (or completion's) envelope, generating
        whatever the upstream left out."""
        return cls(
            response_id=str(upstream.get("id") or f"chatcmpl-{uuid.uuid4().hex}"),
            created=int(upstream.get("created") or time.time()),
            model=str(upstream.get("model") or fallback_model),
            system_fingerprint=upstream.get("system_fingerprint"),
        )

    def chunk(
        self,
        index: int,
        delta: Delta | bytes,
        finish_reason: str | None = None,
        stop_reason: str | None = None,
    ) -> bytes:
        """`delta`: a delta, or its JSON already; `stop_reason`: the stop sequence the
        upstream said it stopped at, passed on as vLLM writes it."""
        encoded = delta if isinstance(delta, bytes) else json_bytes(delta)
        reason = b"null" if finish_reason is None else json_bytes(finish_reason)
        stop = b"" if stop_reason is None else b',"stop_reason":' + json_bytes(stop_reason)
        return b'%s{"index":%d,"delta":%s,"finish_reason":%s%s}]}' % (
            self._head,
            index,
            encoded,
            reason,
            stop,
        )

    def content_event(self, index: int, text: str) -> bytes:
        """The whole event of a chunk whose delta is `text` of the content: `chunk`'s bytes,
        framed, made in one step (the commonest event of a stream)."""
        return b'data: %s{"index":%d,"delta":{"content":%s},"finish_reason":null}]}\n\n' % (
            self._head,
            index,
            json_bytes(text),
        )

    def usage(self, usage: Any) -> bytes:
        return b'%s],"usage":%s}' % (self._head, json_bytes(usage))


def _chat_delta(
    delta: ReasoningDelta | ContentDelta | CallStart | CallDelta,
    kind: str,
    reasoning_fields: tuple[str, ...],
) -> Delta:
    """An engine delta as chat's; `kind`: the type of the call a `CallStart` or `CallDelta`
    belongs to; `reasoning_fields`: the fields reasoning is written in (CHAT_REASONING_FIELD)."""
    if isinstance(delta, ContentDelta):
        return {CONTENT: delta.text}
    if isinstance(delta, ReasoningDelta):
        return dict.fromkeys(reasoning_fields, delta.text)
    if isinstance(delta, CallStart):
        payload = {"name": delta.name, CALL_TEXT[kind]: ""}
        return {
            "tool_calls": [{"index": delta.index, "id": delta.call_id, "type": kind, kind: payload}]
        }
    return {"tool_calls": [{"index": delta.index, kind: {CALL_TEXT[kind]: delta.text}}]}


class ChatWriter:
    """One chat completion, written from the engine's events: streamed, as chunks and
    `[DONE]` (a usage chunk before it with `include_usage`); whole, as the upstream's
    completion with each choice's message made of its deltas.

    >>> writer = ChatWriter(stream=True, fallback_model="m", include_usage=False)
    >>> writer.write(AnswerStart({"id": "chatcmpl-1"})), writer.write(ChoiceStart())
    (b'', b'data: {"id":"chatcmpl-1",...,"delta":{"role":"assistant","content":""},...}\\n\\n')
    """

    def __init__(
        self,
        *,
        stream: bool,
        fallback_model: str,
        include_usage: bool,
        reasoning_fields: tuple[str, ...] = (REASONING,),
    ) -> None:
        self._stream = stream
        self._reasoning_fields = reasoning_fields
        self._fallback_model = fallback_model
        self._include_usage = include_usage
        self._encoder: ChunkEncoder | None = None
        self._kinds: dict[tuple[int, int], str] = {}  # (choice, call index) -> the call's type
        self._upstream: Mapping[str, Any] = {}
        self._messages: dict[int, _MessageBuilder] = {}  # choice -> its message so far
        self._choices: list[dict[str, Any]] = []
        self._usage: Mapping[str, Any] | None = None

    def write(self, event: Event) -> bytes:
        if self._stream:
            return self._chunk(event)
        self._add(event)
        return b""

    def whole(self) -> dict[str, Any]:
        answer = {**self._upstream, "choices": self._choices}
        if self._usage is not None:
            answer["usage"] = self._usage
        return answer

    def _chunk(self, event: Event) -> bytes:
        encoder = self._encoder
        if isinstance(event, ContentDelta):  # the commonest first
            assert encoder is not None
            return encoder.content_event(event.choice, event.text)
        if isinstance(event, CallStart | CallDelta | ReasoningDelta):
            assert encoder is not None
            delta = _chat_delta(event, self._kind(event), self._reasoning_fields)
            return data_event(encoder.chunk(event.choice, delta))
        if isinstance(event, AnswerStart):
            self._encoder = ChunkEncoder.matching(event.upstream, self._fallback_model)
            return b""
        assert encoder is not None
        if isinstance(event, ChoiceStart):
            return data_event(encoder.chunk(event.choice, ROLE_DELTA))
        if isinstance(event, ChoiceEnd):
            chunk = encoder.chunk(event.choice, {}, event.finish_reason, event.matched_stop)
            return data_event(chunk)
        if isinstance(event, AnswerEnd):
            if self._include_usage and event.usage is not None:
                return data_event(encoder.usage(event.usage)) + DONE_EVENT
            return DONE_EVENT
        return data_event(json_bytes(event.error.body()))  # a failure ends without [DONE]

    def _kind(self, event: ReasoningDelta | CallStart | CallDelta) -> str:
        if isinstance(event, CallStart):
            self._kinds[event.choice, event.index] = event.kind
            return event.kind
        if isinstance(event, CallDelta):
            return self._kinds[event.choice, event.index]
        return ""

    def _add(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta | ContentDelta | CallStart | CallDelta):
            self._messages.setdefault(event.choice, _MessageBuilder()).add(event)
        elif isinstance(event, AnswerStart):
            self._upstream = event.upstream
        elif isinstance(event, ChoiceEnd):
            upstream = event.upstream or {"index": event.choice}
            message = self._messages.pop(event.choice, _MessageBuilder())
            built = message.message(upstream.get("message") or {}, self._reasoning_fields)
            self._choices.append(
                {**upstream, "message": built, "finish_reason": event.finish_reason}
            )
        elif isinstance(event, AnswerEnd):
            self._usage = event.usage


class _MessageBuilder:
    """A whole choice's deltas added up into its `message`, the way a client would add them."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[dict[str, Any]] = []

    def add(self, delta: ReasoningDelta | ContentDelta | CallStart | CallDelta) -> None:
        if isinstance(delta, ContentDelta):
            self._content.append(delta.text)
        elif isinstance(delta, ReasoningDelta):
            self._reasoning.append(delta.text)
        elif isinstance(delta, CallStart):
            payload = {"name": delta.name, CALL_TEXT[delta.kind]: ""}
            self._calls.append({"id": delta.call_id, "type": delta.kind, delta.kind: payload})
        else:
            call = self._calls[delta.index]
            kind = call["type"]
            call[kind][CALL_TEXT[kind]] += delta.text

    def message(
        self, upstream_message: Mapping[str, Any], reasoning_fields: tuple[str, ...]
    ) -> dict[str, Any]:
        """The upstream's message with its content and tool calls replaced by the parsed ones;
        its reasoning is the deltas' (which begin with the upstream's own), under each of
        `reasoning_fields`, as a stream sends it, and under the name the upstream gave it."""
        message = {
            key: value for key, value in upstream_message.items() if key not in REPLACED_FIELDS
        }
        message["role"] = "assistant"
        message["content"] = "".join(self._content) or None
        if self._calls:
            message["tool_calls"] = self._calls
        if reasoning := "".join(self._reasoning):
            own = [key for key in REASONING_KEYS if upstream_message.get(key)]
            message.update(dict.fromkeys([*own, *reasoning_fields], reasoning))
        return message
