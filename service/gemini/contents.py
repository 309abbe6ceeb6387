"""Gemini's `contents` and `systemInstruction` as chat messages: a `model` turn's text and
`functionCall` parts an assistant message with `tool_calls`, a `user` turn's
`functionResponse` parts `tool` messages and its other parts a user message, images as
chat's image parts, the model's earlier thoughts left out.

Calls keep the ids the client echoes; a call without one gets an id from its place in the
history, and a result without one answers the earliest unanswered call of its name (Pi's
Google provider sends no ids at all)."""

from __future__ import annotations

import base64
import binascii
from collections import deque
from typing import Any

from ..exchange import assistant_message, content_text, invalid
from ..wire import json_bytes
from .fields import field

USER, MODEL = "user", "model"
# Earlier versions of the API sent function results in turns of this role.
FUNCTION_ROLE = "function"
ROLES = frozenset({USER, MODEL, FUNCTION_ROLE})
# What the model reads before a result that is only an error.
ERROR_RESULT_PREFIX = "Error: "
# Parts that Google's built-in tools wrote: the proxy never offers those tools.
BUILT_IN_TOOL_PARTS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
TEXT_MEDIA_PREFIX, IMAGE_MEDIA_PREFIX = "text/", "image/"
URL_SCHEMES = ("http://", "https://")


def system_messages(instruction: Any) -> list[dict[str, Any]]:
    """`systemInstruction` (a content, or plain text) as the system message."""
    if instruction is None:
        return []
    if isinstance(instruction, str):
        text = instruction
    else:
        parts = _parts(instruction, "systemInstruction")
        text = "\n".join(_text(part, f"systemInstruction.parts[{at}]") for at, part in parts)
    return [{"role": "system", "content": text}] if text else []


def chat_messages(contents: Any) -> list[dict[str, Any]]:
    """`contents` as chat messages, calls and results paired."""
    if not isinstance(contents, list) or not contents:
        raise invalid("'contents' must be a non-empty array", "contents")
    ledger = CallLedger()
    messages: list[dict[str, Any]] = []
    for index, content in enumerate(contents):
        param = f"contents[{index}]"
        role = content.get("role") if isinstance(content, dict) else None
        role = USER if role is None else role  # a single turn may leave it out
        if not isinstance(role, str) or role not in ROLES:
            raise invalid("role must be 'user' or 'model'", f"{param}.role")
        parts = _parts(content, param)
        if role == MODEL:
            messages.extend(_model_messages(parts, ledger, index))
        else:
            messages.extend(_user_messages(parts, ledger, index))
    return messages


class CallLedger:
    """The history's calls not yet answered, oldest first, to pair results with; found by
    id and by name, so pairing a result costs the same however many calls are unanswered
    (a scan of them all per result cost 4.3 s for 10,000 results that paired with none)."""

    def __init__(self) -> None:
        self._ids: list[str] = []  # every call's id, in the history's order
        self._answered: set[int] = set()  # their places, once answered
        # The places of the calls of each id and of each name, oldest first; an answered
        # one is dropped when it is next met.
        self._by_id: dict[str, deque[int]] = {}
        self._by_name: dict[str, deque[int]] = {}

    def called(self, name: str, call_id: str) -> None:
        at = len(self._ids)
        self._ids.append(call_id)
        self._by_id.setdefault(call_id, deque()).append(at)
        self._by_name.setdefault(name, deque()).append(at)

    def answered(self, name: str, given_id: Any) -> str:
        """The id of the call a result answers: its own id, else the earliest unanswered
        call of its name's; "" when it has no id and answers no call in the history."""
        call_id = given_id if isinstance(given_id, str) else ""
        places = self._by_id.get(call_id) if call_id else self._by_name.get(name)
        while places:
            at = places.popleft()
            if at not in self._answered:
                self._answered.add(at)
                return self._ids[at]
        return call_id


def _parts(content: Any, param: str) -> list[tuple[int, dict[str, Any]]]:
    """A content's parts with their index, the model's thoughts left out."""
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        raise invalid("a content needs an array of parts", f"{param}.parts")
    for at, part in enumerate(parts):
        if not isinstance(part, dict):
            raise invalid("each part must be an object", f"{param}.parts[{at}]")
    return [(at, part) for at, part in enumerate(parts) if part.get("thought") is not True]


def _text(part: dict[str, Any], param: str) -> str:
    text = part.get("text")
    if text is None:
        raise invalid("must hold text only", param, "unsupported")
    return str(text)


def _model_messages(
    parts: list[tuple[int, dict[str, Any]]], ledger: CallLedger, turn: int
) -> list[dict[str, Any]]:
    """The model's turn as assistant messages: text after a call begins another message of
    the turn, so that the history keeps the model's order (`continues_turn` in the
    engine's rewrite); none for a turn that held only thoughts."""
    messages: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for at, part in parts:
        param = f"contents[{turn}].parts[{at}]"
        call = field(part, "functionCall")
        if call is None:
            if _kind(part, param) == "text":
                if calls:
                    messages.append(assistant_message(texts, calls))
                    texts, calls = [], []
                texts.append(str(part["text"]))
            elif _kind(part, param) is not None:
                raise invalid("a model turn holds text and function calls only", param)
            continue
        name, arguments = _call_fields(call, f"{param}.functionCall")
        given_id = call.get("id")
        call_id = given_id if isinstance(given_id, str) and given_id else f"call_{turn}_{at}"
        ledger.called(name, call_id)
        function = {"name": name, "arguments": json_bytes(arguments).decode()}
        calls.append({"id": call_id, "type": "function", "function": function})
    if texts or calls:
        messages.append(assistant_message(texts, calls))
    return messages


def _call_fields(call: Any, param: str) -> tuple[str, dict[str, Any]]:
    name = call.get("name") if isinstance(call, dict) else None
    if not isinstance(name, str) or not name:
        raise invalid("needs a name", param)
    arguments = call.get("args")
    if not isinstance(arguments, dict | None):
        raise invalid("args must be an object", f"{param}.args")
    return name, arguments or {}


def _user_messages(
    parts: list[tuple[int, dict[str, Any]]], ledger: CallLedger, turn: int
) -> list[dict[str, Any]]:
    """A user turn: each function response a `tool` message, the other parts user messages,
    in the order they came."""
    param = f"contents[{turn}]"
    messages: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for at, part in parts:
        response = field(part, "functionResponse")
        if response is None:
            if (chat_part := _chat_part(part, f"{param}.parts[{at}]")) is not None:
                pending.append(chat_part)
            continue
        if pending:
            messages.append(_user_message(pending))
            pending = []
        where = f"{param}.parts[{at}].functionResponse"
        messages.append(_tool_message(response, ledger, where, f"result_{turn}_{at}"))
    if pending:
        messages.append(_user_message(pending))
    return messages


def _user_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Text parts as one string (what every chat template takes), parts when there is more."""
    if all(part["type"] == "text" for part in parts):
        return {"role": "user", "content": content_text(parts)}
    return {"role": "user", "content": parts}


def _tool_message(
    response: Any, ledger: CallLedger, param: str, unpaired_id: str
) -> dict[str, Any]:
    name = response.get("name") if isinstance(response, dict) else None
    if not isinstance(name, str) or not name:
        raise invalid("a function response needs a name", param)
    content: Any = _result_text(response.get("response"), param)
    parts = response.get("parts") or []
    if not isinstance(parts, list):
        raise invalid("a function response's parts must be an array", f"{param}.parts")
    media = [
        chat_part
        for at, part in enumerate(parts)
        if (chat_part := _chat_part(part, f"{param}.parts[{at}]")) is not None
    ]
    if media:
        content = [{"type": "text", "text": content}, *media]
    call_id = ledger.answered(name, response.get("id")) or unpaired_id
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def _result_text(response: Any, param: str) -> str:
    """A function's result as the model reads it: its `output`, else its `error` (as the API
    documents the two keys), else the whole response object."""
    if response is None:
        return ""
    if not isinstance(response, dict):
        raise invalid("a function response's response must be an object", param)
    if "output" in response:
        return _as_text(response["output"])
    if "error" in response:
        return ERROR_RESULT_PREFIX + _as_text(response["error"])
    return _as_text(response)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json_bytes(value).decode()


def _kind(part: dict[str, Any], param: str) -> str | None:
    """What a part holds: text, inline data, file data, or nothing the model reads (a part
    with only metadata). A built-in tool's part is a 400."""
    for kind in BUILT_IN_TOOL_PARTS:
        if field(part, kind) is not None:
            raise invalid(
                f"'{kind}' parts come from Google's built-in tools, which the proxy does not offer",
                param,
                "unsupported",
            )
    if part.get("text") is not None:
        return "text"
    if field(part, "inlineData") is not None:
        return "inlineData"
    if field(part, "fileData") is not None:
        return "fileData"
    return None


def _chat_part(part: Any, param: str) -> dict[str, Any] | None:
    """A user part as a chat content part: text, an image (inline or by URL), inline text;
    None for a part with nothing the model reads."""
    if not isinstance(part, dict):
        raise invalid("each part must be an object", param)
    kind = _kind(part, param)
    if kind == "text":
        return {"type": "text", "text": str(part["text"])}
    if kind is None:
        return None
    blob = field(part, kind)
    if not isinstance(blob, dict):
        raise invalid(f"{kind} must be an object", f"{param}.{kind}")
    mime = field(blob, "mimeType")
    mime = mime if isinstance(mime, str) else ""
    if kind == "inlineData" and isinstance(data := blob.get("data"), str):
        if mime.startswith(IMAGE_MEDIA_PREFIX):
            return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
        if mime.startswith(TEXT_MEDIA_PREFIX):
            return {"type": "text", "text": _decoded_text(data, f"{param}.inlineData.data")}
    uri = field(blob, "fileUri")
    if (
        kind == "fileData"
        and mime.startswith(IMAGE_MEDIA_PREFIX)
        and isinstance(uri, str)
        and uri.startswith(URL_SCHEMES)
    ):
        return {"type": "image_url", "image_url": {"url": uri}}
    raise invalid(
        f"{kind} of type {mime or 'unknown'!r} is not supported (images inline or by http(s)"
        " URL, and inline text, are)",
        f"{param}.{kind}",
        "unsupported",
    )


def _decoded_text(data: str, param: str) -> str:
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise invalid("must be base64 of UTF-8 text", param) from None
