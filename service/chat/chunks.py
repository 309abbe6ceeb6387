"""Parser parts as OpenAI deltas, and deltas as `chat.completion.chunk` JSON or as a whole
`message`: the one mapping that streaming and non-streaming answers both go through."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from protocols import (
    Part,
    TextDelta,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
)

from ..wire import json_bytes

Delta = dict[str, Any]
ROLE_DELTA: Delta = {"role": "assistant", "content": ""}
CONTENT = "content"
REASONING = "reasoning_content"


class DeltaMapper:
    """One choice's parts as deltas; call indexes dense from 0 in the order calls start.

    >>> mapper = DeltaMapper(think_as_reasoning=False, single_call=False)
    >>> mapper.deltas([TextDelta("t1", "Hi"), ToolCall("call_1", "f", "{}", {}, "...")])
    [{'content': 'Hi'}, {'tool_calls': [{... 'arguments': ''}}]}, {'tool_calls': [...'{}'...]}]
    """

    def __init__(
        self,
        *,
        think_as_reasoning: bool,
        single_call: bool,
        on_call: Callable[[str], None] | None = None,
        on_dropped_call: Callable[[str], None] | None = None,
    ) -> None:
        self._think_as_reasoning = think_as_reasoning
        self._single_call = single_call
        self._on_call = on_call  # told each completed call's name
        self._on_dropped_call = on_dropped_call
        self._in_think = False
        self._indexes: dict[str, int] = {}  # call id -> index, for every call whose start went out
        self._dropped: set[str] = set()
        self.completed_calls = 0
        self.unfinished_call = False

    def deltas(self, parts: Iterable[Part]) -> list[Delta]:
        out: list[Delta] = []
        for part in parts:
            if isinstance(part, TextDelta):
                _append_text(out, REASONING if self._in_think else CONTENT, part.text)
            elif isinstance(part, ThinkStart | ThinkEnd):
                if self._think_as_reasoning:
                    self._in_think = isinstance(part, ThinkStart)
                else:
                    _append_text(out, CONTENT, part.tag)  # clients such as Roo Code read them here
            elif isinstance(part, ToolCallStart):
                if self._admit(part.id, part.name):
                    out.append(_call_start(self._indexes[part.id], part.id, part.name))
            elif isinstance(part, ToolCallDelta):
                index = self._indexes.get(part.id)
                if index is not None and part.arguments:
                    out.append(_call_arguments(index, part.arguments))
            elif isinstance(part, ToolCall):
                out.extend(self._complete(part))
            elif isinstance(part, ToolCallUnfinished) and part.id in self._indexes:
                self.unfinished_call = True
        return out

    def _complete(self, call: ToolCall) -> list[Delta]:
        if call.id in self._indexes:  # incremental: its start and fragments already went out
            self._completed(call.name)
            return []
        if call.id in self._dropped or not self._admit(call.id, call.name):
            return []
        self._completed(call.name)
        index = self._indexes[call.id]
        return [_call_start(index, call.id, call.name), _call_arguments(index, call.arguments)]

    def _completed(self, name: str) -> None:
        self.completed_calls += 1
        if self._on_call is not None:
            self._on_call(name)

    def _admit(self, call_id: str, name: str) -> bool:
        """Give the call the next index, or drop it when only one call is allowed."""
        if self._single_call and self._indexes:
            self._dropped.add(call_id)
            if self._on_dropped_call is not None:
                self._on_dropped_call(name)
            return False
        self._indexes[call_id] = len(self._indexes)
        return True


def finish_reason(upstream_reason: str | None, mapper: DeltaMapper) -> str:
    """ "length" for a call cut off by the token limit, "tool_calls" when calls were made,
    else the upstream's own reason."""
    if mapper.unfinished_call and upstream_reason == "length":
        return "length"
    if mapper.completed_calls:
        return "tool_calls"
    return upstream_reason or "stop"


def _append_text(out: list[Delta], key: str, text: str) -> None:
    """Add text, merged into the previous delta when that one is the same kind of text."""
    if not text:
        return
    if out and len(out[-1]) == 1 and key in out[-1]:
        out[-1][key] += text
    else:
        out.append({key: text})


def _call_start(index: int, call_id: str, name: str) -> Delta:
    function = {"name": name, "arguments": ""}
    return {
        "tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]
    }


def _call_arguments(index: int, fragment: str) -> Delta:
    return {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


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
    def matching(cls, upstream: dict[str, Any], fallback_model: str) -> ChunkEncoder:
        """An encoder that copies an upstream chunk's (or completion's) envelope, generating
        whatever the upstream left out."""
        return cls(
            response_id=str(upstream.get("id") or f"chatcmpl-{uuid.uuid4().hex}"),
            created=int(upstream.get("created") or time.time()),
            model=str(upstream.get("model") or fallback_model),
            system_fingerprint=upstream.get("system_fingerprint"),
        )

    def chunk(self, index: int, delta: Delta, finish_reason: str | None = None) -> bytes:
        reason = b"null" if finish_reason is None else json_bytes(finish_reason)
        return b'%s{"index":%d,"delta":%s,"finish_reason":%s}]}' % (
            self._head,
            index,
            json_bytes(delta),
            reason,
        )

    def usage(self, usage: Any) -> bytes:
        return b'%s],"usage":%s}' % (self._head, json_bytes(usage))


class MessageBuilder:
    """Deltas added up into one non-streaming `message`, the way a client would add them."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[dict[str, Any]] = []

    def add(self, deltas: Iterable[Delta]) -> None:
        for delta in deltas:
            if CONTENT in delta:
                self._content.append(delta[CONTENT])
            if REASONING in delta:
                self._reasoning.append(delta[REASONING])
            for call in delta.get("tool_calls", ()):
                if "id" in call:
                    self._calls.append({key: call[key] for key in ("id", "type")})
                    self._calls[-1]["function"] = dict(call["function"])
                else:
                    self._calls[call["index"]]["function"]["arguments"] += call["function"][
                        "arguments"
                    ]

    def message(self, upstream_message: dict[str, Any]) -> dict[str, Any]:
        """The upstream's message with content and tool calls replaced by the parsed ones."""
        message = {
            key: value
            for key, value in upstream_message.items()
            if key not in {"content", "tool_calls", "function_call"}
        }
        message["role"] = "assistant"
        message["content"] = "".join(self._content) or None
        if self._calls:
            message["tool_calls"] = self._calls
        if self._reasoning:
            message[REASONING] = (message.get(REASONING) or "") + "".join(self._reasoning)
        return message
