"""The pieces of call formats that write each argument as a tagged value (DSML, Kimi K3,
Step3, Hunyuan, Seed-OSS) or in a value syntax of their own (Gemma 4, FunctionGemma):
attributes, values that are JSON or raw text, a body of such values or one JSON object
instead, and Gemma's `{key:value,...}` objects.
Values come back as written (strings, or JSON values where the format says so); the call is
coerced by its tool's schema afterwards, as every call is."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .call_objects import CallObjectError
from .relaxed_json import RelaxedParseBudget, parse_relaxed_json

_ATTRIBUTE = re.compile(r'([\w:-]+)\s*=\s*"([^"]*)"')
# Nesting past this in a value is no call a model meant.
MAX_VALUE_DEPTH = 32


def attributes(text: str) -> dict[str, str]:
    """`key="value"` pairs, with the two escapes templates write in them undone."""
    return {
        key: value.replace("&quot;", '"').replace("&amp;", "&")
        for key, value in _ATTRIBUTE.findall(text)
    }


def json_or_text(raw: str, budget: RelaxedParseBudget) -> Any:
    """A value a format marked as not a string: its JSON, or the text when it is none."""
    budget.spend_parse()
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def tagged_arguments(
    body: str,
    tags: re.Pattern[str],
    read: Callable[[re.Match[str]], tuple[str, Any]],
    budget: RelaxedParseBudget,
    end: int | None = None,
) -> dict[str, Any]:
    """A call body's arguments: its tagged values (each `tags` match, up to `end`, read into
    a key and a value by `read`), or one JSON object written instead of them (DeepSeek V4
    writes either; a fence around it is layout). Text beside the tags, or a body that is
    neither, would make a call with arguments the model did not write: CallObjectError."""
    arguments: dict[str, Any] = {}
    at = 0
    for tag in tags.finditer(body, 0, len(body) if end is None else end):
        if body[at : tag.start()].strip():
            raise CallObjectError("text between a call's tagged arguments")
        key, value = read(tag)
        arguments[key] = value
        at = tag.end()
    rest = body[at:]
    if not rest.strip():
        return arguments
    if arguments:
        raise CallObjectError("text after a call's tagged arguments")
    value = parse_relaxed_json(rest, complete_only=True, budget=budget)
    if not isinstance(value, dict):
        raise CallObjectError("a call body that is neither tagged arguments nor an object")
    return value


def tagged_object(text: str, quote: str) -> dict[str, Any]:
    """The object `{key:value,...}` that is all of `text`, in Gemma 4's and FunctionGemma's
    value syntax (`call:get_weather{city:<|"|>Paris<|"|>,days:3}`): keys bare, strings between
    `quote` delimiters, objects and lists nested, numbers and `true`/`false`/`null` bare;
    other bare text is a string."""
    if not text.startswith("{"):
        raise CallObjectError("arguments are no {...} object")
    arguments, end = _ValueReader(text, quote).object(0, 0)
    if end != len(text):
        raise CallObjectError("text after the call's arguments")
    return arguments


class _ValueReader:
    def __init__(self, text: str, quote: str) -> None:
        self._text, self._quote = text, quote

    def object(self, position: int, depth: int) -> tuple[dict[str, Any], int]:
        """The object whose `{` is at `position`, and where it ends."""
        text, members = self._text, {}
        position = self._blanks(position + 1)
        while not text.startswith("}", position):
            colon = text.find(":", position)
            if colon == -1:
                raise CallObjectError("a member with no value")
            key = text[position:colon].strip()
            members[key], position = self.value(self._blanks(colon + 1), depth)
            position = self._after_member(position, "}")
        return members, position + 1

    def value(self, position: int, depth: int) -> tuple[Any, int]:
        if depth > MAX_VALUE_DEPTH:
            raise CallObjectError("values nested too deep")
        text = self._text
        if text.startswith(self._quote, position):
            start = position + len(self._quote)
            end = text.find(self._quote, start)
            if end == -1:
                raise CallObjectError("a string never closed")
            return text[start:end], end + len(self._quote)
        if text.startswith("{", position):
            return self.object(position, depth + 1)
        if text.startswith("[", position):
            items: list[Any] = []
            position = self._blanks(position + 1)
            while not text.startswith("]", position):
                item, position = self.value(position, depth + 1)
                items.append(item)
                position = self._after_member(position, "]")
            return items, position + 1
        end = position
        while end < len(text) and text[end] not in ",}]":
            end += 1
        return _bare(text[position:end].strip()), end

    def _after_member(self, position: int, closing: str) -> int:
        position = self._blanks(position)
        if self._text.startswith(",", position):
            return self._blanks(position + 1)
        if not self._text.startswith(closing, position):
            raise CallObjectError(f"expected ',' or {closing!r}")
        return position

    def _blanks(self, position: int) -> int:
        while position < len(self._text) and self._text[position] in " \t\r\n":
            position += 1
        return position


def _bare(token: str) -> Any:
    if token in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[token]
    try:
        return (
            json.loads(token) if re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", token) else token
        )
    except ValueError:
        return token
