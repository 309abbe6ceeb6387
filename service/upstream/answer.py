"""The shape an upstream chunk or completion must have before the proxy reads it: checked
where it enters, so a malformed one becomes a clear 502 (`upstream_bad_chunk`), never
invalid JSON in the client's stream and never a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from types import NoneType
from typing import Any

from ..wire import UPSTREAM_ERROR, ProxyError

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


# Not frozen: a frozen dataclass's __init__ costs three object.__setattr__ calls per chunk.
@dataclass(slots=True)
class UpstreamChoice:
    index: int
    delta: dict[str, Any]  # a chunk's `delta`, or a whole completion's `message`
    finish_reason: str | None


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


def chunk_choices(chunk: dict[str, Any], n: int) -> list[UpstreamChoice]:
    """A streamed chunk's choices: each an object with an `index` of one of the `n` choices
    asked for, an object `delta` (or `message`) whose texts are strings or null, a
    string-or-null `finish_reason`; and `usage` an object or null."""
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
        for key in TEXT_KEYS:
            if not isinstance(delta.get(key), STRING_OR_NULL):
                raise bad_chunk(f"a delta's {key!r} is not a string")
        reason = choice.get("finish_reason")
        if not isinstance(reason, STRING_OR_NULL):
            raise bad_chunk("a choice's 'finish_reason' is not a string")
        checked.append(UpstreamChoice(index, delta, reason))
    return checked


def checked_answer(answer: dict[str, Any], n: int) -> dict[str, Any]:
    """A whole completion, once its `choices` are sane: absent, or a list of no more than the
    `n` asked for, each an object with the `index` of one of them and a `message` that is an
    object or null, whose content is a string, text parts or null (`content_text` reads all
    three) and whose reasoning is a string or null."""
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
