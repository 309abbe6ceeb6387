"""The engine's answer written as a Messages-API answer: its deltas (content, reasoning, a
call's start and more of its arguments) become content blocks (`text`, `thinking`,
`tool_use`) and the Messages event stream; the same object holds the whole `message` for a
non-streaming answer, so both are built one way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..exchange import (
    TEXT,
    CallStart,
    Counted,
    EventTemplate,
    EventWriter,
    HeldText,
    Written,
    tokens_in_text,
)
from .errors import anthropic_error_of

Block = dict[str, Any]
# The chat finish reason -> Anthropic's stop reason.
STOP_REASONS = {
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "stop": "end_turn",
    "content_filter": "refusal",
}
END_TURN, STOP_SEQUENCE = "end_turn", "stop_sequence"
CALL_ID_PREFIX, TOOL_USE_ID_PREFIX = "call_", "toolu_"
# A delta's type for each kind of block, and the field it grows.
DELTAS = {
    "text": ("text_delta", "text"),
    "thinking": ("thinking_delta", "thinking"),
    "tool_use": ("input_json_delta", "partial_json"),
}


def tool_use_id(call_id: str) -> str:
    """Anthropic's id for the parser's call id: the same random part, as `toolu_...`."""
    return TOOL_USE_ID_PREFIX + call_id.removeprefix(CALL_ID_PREFIX)


class MessageWriter(EventWriter):
    """One message's content blocks, grown delta by delta; each step returns its events.

    >>> writer = MessageWriter(model="m", thinking=False, input_estimate=12, stream=True)
    >>> writer.write(AnswerStart({}))  # message_start, ping
    >>> writer.write(ContentDelta("Hi"))  # content_block_start, content_block_delta
    >>> writer.write(ChoiceEnd("stop")), writer.write(AnswerEnd(usage))  # ..., message_stop
    """

    def __init__(
        self,
        *,
        model: str,
        thinking: bool,
        input_estimate: int,
        stream: bool,
        stop_sequences: tuple[str, ...] = (),
    ) -> None:
        super().__init__(stream=stream)
        self.content: list[Block] = []
        self._stop_sequences = stop_sequences
        self._thinking = thinking  # reasoning becomes thinking blocks; else it is left out
        self._input_estimate = input_estimate
        # Each block's text or input JSON, as it grew; only counted in a stream, whose blocks
        # no one reads whole.
        self._texts: list[HeldText | Counted] = []
        self._open: int | None = None  # the index of the block deltas add to
        self._calls: dict[int, int] = {}  # chat tool-call index -> its block's index
        self._message: dict[str, Any] = {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": self.content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_estimate, "output_tokens": 0},
        }

    def whole(self) -> dict[str, Any]:
        """The message, as it stands (whole once the answer ended)."""
        return self._message

    def start(self) -> list[Written]:
        started = {**self._message, "content": [], "usage": dict(self._message["usage"])}
        return [{"type": "message_start", "message": started}, {"type": "ping"}]

    def reasoning_delta(self, text: str) -> list[Written]:
        return self._text("thinking") if self._thinking else []

    def content_delta(self, text: str) -> list[Written]:
        return self._text("text")

    def finish(
        self, finish_reason: str | None, usage: Mapping[str, Any] | None, matched_stop: str | None
    ) -> list[Written]:
        """Every block stopped, the stop reason and usage said, the message stopped. A text
        the upstream says one of the request's stop sequences ended is `stop_sequence`."""
        events = self._close()
        self._settle()
        stop_reason = STOP_REASONS.get(finish_reason or "", END_TURN)
        stop_sequence = matched_stop if matched_stop in self._stop_sequences else None
        if stop_sequence is not None:
            stop_reason = STOP_SEQUENCE
        self._message.update(
            stop_reason=stop_reason, stop_sequence=stop_sequence, usage=self._usage(usage)
        )
        return [
            *events,
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": self._message["usage"],
            },
            {"type": "message_stop"},
        ]

    def fail(self, error: dict[str, Any]) -> list[Written]:
        """Anthropic ends a stream that fails with one `error` event."""
        self._settle()
        return [anthropic_error_of(error)]

    def _text(self, kind: str) -> list[Written]:
        """A text or thinking block, opened for the text that comes (the base adds it)."""
        return self._open_block({"type": kind, kind: ""})

    def call_start(self, call: CallStart) -> list[Written]:
        block = {"type": "tool_use", "id": tool_use_id(call.call_id), "name": call.name}
        self._calls[call.index] = len(self.content)
        return self._open_block({**block, "input": {}})

    def call_delta(self, index: int, text: str) -> list[Written]:
        """More of a call's arguments while another block is open: still in its own block."""
        block = self._calls[index]
        self._texts[block].write(text)
        delta = {"type": "input_json_delta", "partial_json": text}
        return [{"type": "content_block_delta", "index": block, "delta": delta}]

    def _open_block(self, block: Block) -> list[Written]:
        """`block` started, and open for what continues the event it answers."""
        events = self._close()
        if block["type"] == "thinking":
            block["signature"] = ""  # nothing to verify: a text model signs nothing
        index = self._open = len(self.content)
        self.content.append(block)
        self._texts.append(Counted() if self._stream else HeldText())
        kind, field = DELTAS[block["type"]]
        delta = {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": kind, field: TEXT},
        }
        self.open_text(self._texts[index], EventTemplate(delta))
        start = {"type": "content_block_start", "index": index, "content_block": dict(block)}
        return [*events, start]

    def _close(self) -> list[Written]:
        index, self._open = self._open, None
        self.close_text()
        return [] if index is None else [{"type": "content_block_stop", "index": index}]

    def _settle(self) -> None:
        """Each block's text or input written into it (a whole answer's: a stream's blocks
        went out as they grew)."""
        for block, text in zip(self.content, self._texts, strict=True):
            if isinstance(text, Counted):
                continue
            if block["type"] == "tool_use":
                block["input"] = _input_object(text.value())
            else:
                block[block["type"]] = text.value()

    def _usage(self, usage: Mapping[str, Any] | None) -> dict[str, Any]:
        """The upstream's usage in Anthropic's names (its input excludes cached tokens); an
        estimate when the upstream reported none."""
        if usage is None:
            output = tokens_in_text(sum(text.chars for text in self._texts))
            return {"input_tokens": self._input_estimate, "output_tokens": output}
        prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        return {
            "input_tokens": max(prompt - cached, 0),
            "output_tokens": completion,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
        }


def _input_object(text: str) -> Any:
    """A call's arguments as its input object; {} for none. A whole answer's calls always
    parse (a call cut short stays text); a streamed one's were sent as they came."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
