"""Chat messages in the GenAI conventions' shape (`{"role", "parts": [...]}`), for the spans
of a deployment that asked for content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT):
what the upstream was sent (OpenAI chat messages) and what it answered (whole messages, or
the deltas of a stream gathered per choice). Only text and calls are carried; any other part
(an image, a file) is named by its type, its data left out. Each side carries at most
MAX_CAPTURED_CHARS of text and arguments."""

from __future__ import annotations

from typing import Any

from ...wire import json_value

Parts = list[dict[str, Any]]

# The most characters of text and call arguments one side of a span carries; the rest is
# left out. A span is held until it is exported, and with a collector that is down the
# exporter queues up to 2,048 of them: a 100 MB stream's content, every delta kept, left
# +444 MB a second after it ended.
MAX_CAPTURED_CHARS = 64 * 1024


class Allowance:
    """What is left of one side's MAX_CAPTURED_CHARS."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_CAPTURED_CHARS

    def take(self, text: str) -> str:
        """The part of `text` the allowance still carries."""
        kept = text[: self.left] if len(text) > self.left else text
        self.left -= len(kept)
        return kept


def input_messages(messages: list[Any]) -> list[dict[str, Any]]:
    allowance = Allowance()
    return [_input_message(message, allowance) for message in messages if isinstance(message, dict)]


def _input_message(message: dict[str, Any], allowance: Allowance) -> dict[str, Any]:
    role = message.get("role")
    if role == "tool":
        result = {"type": "tool_call_response", "id": message.get("tool_call_id")}
        text = _text(message.get("content"), allowance)
        return {"role": role, "parts": [{**result, "result": text}]}
    parts = _content_parts(message.get("content"), allowance)
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            function = call["function"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                arguments = allowance.take(arguments)
            parts.append(_call_part(call.get("id"), function.get("name"), arguments))
    return {"role": role, "parts": parts}


def _content_parts(content: Any, allowance: Allowance) -> Parts:
    if isinstance(content, str):
        return [{"type": "text", "content": allowance.take(content)}] if content else []
    parts: Parts = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text", "")
            parts.append({"type": "text", "content": allowance.take(str(text))})
        elif isinstance(part, dict):
            parts.append({"type": str(part.get("type"))})
    return parts


def _text(content: Any, allowance: Allowance) -> str:
    return "".join(part.get("content", "") for part in _content_parts(content, allowance))


def _call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A call's arguments as their JSON object when they are one, else as written."""
    try:
        parsed = json_value(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = arguments
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": parsed}


class MessageParts:
    """The answer's messages per choice, from whole messages or gathered from deltas."""

    def __init__(self) -> None:
        self._allowance = Allowance()  # every choice's text and arguments together
        self._text: dict[int, list[str]] = {}
        # Per choice, per call index: id, name and the arguments' fragments.
        self._calls: dict[int, dict[int, dict[str, Any]]] = {}

    def __bool__(self) -> bool:
        return bool(self._text or self._calls)

    def add(self, choice: int, message: dict[str, Any]) -> None:
        """A whole message, or one delta of it."""
        if isinstance(message.get("content"), str):
            _append(self._text.setdefault(choice, []), self._allowance.take(message["content"]))
        calls = self._calls.setdefault(choice, {})
        for position, call in enumerate(message.get("tool_calls") or ()):
            if not isinstance(call, dict):
                continue
            index = call.get("index", position)
            gathered = calls.setdefault(index, {"id": None, "name": None, "arguments": []})
            gathered["id"] = call.get("id") or gathered["id"]
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            gathered["name"] = function.get("name") or gathered["name"]
            if isinstance(function.get("arguments"), str):
                _append(gathered["arguments"], self._allowance.take(function["arguments"]))

    def output(self, reasons: dict[int, str]) -> list[dict[str, Any]]:
        messages = []
        for choice in sorted(self._text.keys() | self._calls.keys()):
            text = "".join(self._text.get(choice, ()))
            parts: Parts = [{"type": "text", "content": text}] if text else []
            for call in self._calls.get(choice, {}).values():
                arguments = "".join(call["arguments"])
                parts.append(_call_part(call["id"], call["name"], arguments))
            message = {"role": "assistant", "parts": parts}
            if choice in reasons:
                message["finish_reason"] = reasons[choice]
            messages.append(message)
        return messages


def _append(pieces: list[str], piece: str) -> None:
    """Past the allowance, the deltas of a long stream leave nothing, not one "" each."""
    if piece:
        pieces.append(piece)
