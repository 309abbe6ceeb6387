"""The shape an upstream chunk or completion must have before the proxy reads it: checked
where it enters, so a malformed one becomes a clear 502 (`upstream_bad_chunk`), never
invalid JSON in the client's stream and never a traceback."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import NoneType
from typing import Any

from ..wire import UPSTREAM_ERROR, ProxyError, json_bytes

# Upstreams name the reasoning delta either way; clients read `reasoning_content`.
REASONING_KEYS = ("reasoning_content", "reasoning")
TEXT_KEYS = ("content", *REASONING_KEYS)
# Fields the proxy copies into the envelope of every chunk it writes.
ENVELOPE_STRINGS = ("id", "model", "system_fingerprint")
# isinstance with a tuple: `str | None` would build a union object on every check, and these
# run for every streamed chunk.
STRING_OR_NULL = (str, NoneType)
OBJECT_OR_NULL = (dict, NoneType)
CONTENT_TYPES = (str, list, NoneType)  # a whole message's content: text, text parts or null
NUMBER = (int, float)


# Where upstreams say which stop sequence ended a choice: vLLM's `stop_reason` (a string, or
# a token id), SGLang's `matched_stop`. OpenAI's API says only `finish_reason: "stop"`.
MATCHED_STOP_KEYS = ("stop_reason", "matched_stop")


# Not frozen: a frozen dataclass's __init__ costs three object.__setattr__ calls per chunk.
@dataclass(slots=True)
class UpstreamChoice:
    index: int
    delta: dict[str, Any]  # a chunk's `delta`, or a whole completion's `message`
    finish_reason: str | None
    # The upstream's own tool calls in it, read only from an upstream that makes them.
    calls: Sequence[CallFragment] = ()
    matched_stop: str | None = None  # the stop sequence that ended it, if the upstream says


# The kinds of call OpenAI sends, each under its own key: function calls, free-form custom calls.
CALL_KINDS = {"function": "arguments", "custom": "input"}


@dataclass(frozen=True, slots=True)
class CallFragment:
    """One piece of a tool call the upstream made itself: a streamed `delta.tool_calls`
    entry, or a whole message's call. `index` is None where the upstream left it out."""

    index: int | None
    id: str | None
    kind: str  # "function" or "custom"
    name: str | None
    text: str  # more of its arguments (a custom call's input)


def call_fragments(calls: Any, *, whole: bool = False) -> list[CallFragment]:
    """The upstream's own calls in a delta's (or, `whole`, a message's) `tool_calls`: a list
    of objects, each with a string-or-null `id`, and its function (or custom) object holding
    a string-or-null `name` and `arguments` (`input`). Arguments sent as an object, as some
    servers do, are taken as their JSON text."""
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise bad_chunk("'tool_calls' is not a list")
    fragments = []
    for position, call in enumerate(calls):
        if not isinstance(call, dict):
            raise bad_chunk("a tool call is not an object")
        kind = call.get("type") or ("custom" if "custom" in call else "function")
        payload = call.get(kind) if isinstance(kind, str) and kind in CALL_KINDS else None
        if not isinstance(payload, dict):
            raise bad_chunk("a tool call has no function object")
        index, call_id, name = call.get("index"), call.get("id"), payload.get("name")
        text = payload.get(CALL_KINDS[kind])
        if isinstance(text, dict):
            text = json_bytes(text).decode()
        if index is not None and (type(index) is not int or index < 0):
            raise bad_chunk("a tool call's 'index' is not a number")
        if not isinstance(call_id, STRING_OR_NULL) or not isinstance(name, STRING_OR_NULL):
            raise bad_chunk("a tool call's 'id' or 'name' is not a string")
        if not isinstance(text, STRING_OR_NULL):
            raise bad_chunk("a tool call's arguments are not a string")
        if whole and index is None:
            index = position
        fragments.append(CallFragment(index, call_id or None, kind, name or None, text or ""))
    return fragments


def matched_stop(choice: dict[str, Any]) -> str | None:
    """The stop sequence an upstream choice says it stopped at, if it says (a string)."""
    for key in MATCHED_STOP_KEYS:
        if isinstance(value := choice.get(key), str):
            return value
    return None


BAD_CHUNK = "upstream_bad_chunk"


def bad_chunk(what: str) -> ProxyError:
    return ProxyError(
        502, f"upstream sent a malformed chunk: {what}", error_type=UPSTREAM_ERROR, code=BAD_CHUNK
    )


def checked_envelope(chunk: dict[str, Any]) -> dict[str, Any]:
    """`chunk`, once its id, model, fingerprint (strings) and created (a number) are sane."""
    for key in ENVELOPE_STRINGS:
        if not isinstance(chunk.get(key), STRING_OR_NULL):
            raise bad_chunk(f"{key!r} is not a string")
    created = chunk.get("created")
    if created is not None and (isinstance(created, bool) or not isinstance(created, NUMBER)):
        raise bad_chunk("'created' is not a number")
    return chunk


def chunk_choices(chunk: dict[str, Any], n: int, calls: bool = False) -> list[UpstreamChoice]:
    """A streamed chunk's choices: each an object with an `index` of one of the `n` choices
    asked for, an object `delta` (or `message`) whose texts are strings or null, a
    string-or-null `finish_reason`; and `usage` an object or null. With `calls`, the
    upstream's own tool calls in each are read too (`call_fragments`)."""
    if not isinstance(chunk.get("usage"), OBJECT_OR_NULL):
        raise bad_chunk("'usage' is not an object")
    choices = chunk.get("choices")
    if choices is None:
        return []
    if not isinstance(choices, list):
        raise bad_chunk("'choices' is not a list")
    checked = []
    for choice in choices:
        if not isinstance(choice, dict):
            raise bad_chunk("a choice is not an object")
        index = _index(choice, n)
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            raise bad_chunk("a choice's 'delta' is not an object")
        if len(delta) != 1 or type(delta.get("content")) is not str:  # but the common delta
            for key in TEXT_KEYS:
                if not isinstance(delta.get(key), STRING_OR_NULL):
                    raise bad_chunk(f"a delta's {key!r} is not a string")
        reason = choice.get("finish_reason")
        if not isinstance(reason, STRING_OR_NULL):
            raise bad_chunk("a choice's 'finish_reason' is not a string")
        stop = None if reason is None else matched_stop(choice)  # read only at the finish
        # With `calls`, a whole `message` too: an upstream that ignored `stream: true`.
        found = call_fragments(delta.get("tool_calls"), whole="message" in choice) if calls else ()
        checked.append(UpstreamChoice(index, delta, reason, found, stop))
    return checked


def checked_answer(answer: dict[str, Any], n: int, *, calls: bool = False) -> dict[str, Any]:
    """A whole completion, once its `choices` are sane: absent, or a list of no more than the
    `n` asked for, each an object with the `index` of one of them and a `message` that is an
    object or null, whose content is a string, text parts or null (`content_text` reads all
    three) and whose reasoning is a string or null; with `calls`, whose own tool calls are
    well-formed (`call_fragments`)."""
    choices = answer.get("choices")
    if choices is None:
        return answer
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise bad_chunk("'choices' is not a list of objects")
    if len(choices) > n:
        raise bad_chunk(f"{len(choices)} choices where {n} were asked for")
    for choice in choices:
        _index(choice, n)
        message = choice.get("message")
        if not isinstance(message, OBJECT_OR_NULL):
            raise bad_chunk("a choice's 'message' is not an object")
        if message and not isinstance(message.get("content"), CONTENT_TYPES):
            raise bad_chunk("a message's 'content' is not a string or a list of parts")
        for key in REASONING_KEYS:
            if message and not isinstance(message.get(key), STRING_OR_NULL):
                raise bad_chunk(f"a message's {key!r} is not a string")
        if calls and message:
            call_fragments(message.get("tool_calls"), whole=True)
        if not isinstance(choice.get("finish_reason"), STRING_OR_NULL):
            raise bad_chunk("a choice's 'finish_reason' is not a string")
    return answer


def _index(choice: dict[str, Any], n: int) -> int:
    """The choice's `index`, one of the `n` the request asked for: an upstream must not make
    the proxy build a parser for each of 100,000 choices nobody asked for."""
    index = choice.get("index", 0)
    if type(index) is not int or not 0 <= index < n:
        raise bad_chunk(f"a choice's 'index' is not one of the {n} asked for (0 to {n - 1})")
    return index


def model_entries(listed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of a `GET /models` list that name a model (`id`), the rest left out: what
    another API's list is made of."""
    return [
        entry
        for entry in listed.get("data") or ()
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    ]
