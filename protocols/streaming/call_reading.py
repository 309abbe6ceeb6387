"""How the body of a call format described as data is read once its close is found: where
each call lies in it, where the call names its tool, and how its arguments are encoded (JSON,
key and value tags, Gemma's tagged values, Python calls). A format written in a routes file,
one read from a model's `response_schema`, and the built-in formats of the dialect table
(`dialects/table.py`) all come down to one `CallReading`, read by `delimited_call`.

Values come back as written (strings, or JSON where the format says so); a call is coerced
by its tool's schema afterwards, as every call is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..lenient.call_objects import CallObjectError, calls_in_json
from ..lenient.python_calls import pythonic_calls
from ..lenient.relaxed_json import RelaxedJSONError, RelaxedParseBudget, parse_relaxed_json
from ..lenient.tagged_values import json_or_text, tagged_object
from ..lenient.xml_values import string_value
from .dialect_forms import NAMESPACE_SEPARATOR


class Arguments(StrEnum):
    """How a call's arguments are written."""

    JSON = "json"  # an object; where no tag names the tool, call objects naming theirs
    KEY_VALUE = "key-value"  # one tagged pair per argument (`key_value`)
    TAGGED_VALUES = "tagged-values"  # Gemma 4's `{key:<|"|>text<|"|>,n:3}` (`quote`)
    PYTHON = "python"  # Python calls, one a line (`get_weather(city="Paris")`)
    PYTHON_LIST = "python-list"  # one Python list of calls, or a JSON array of call objects


class CallObjects(StrEnum):
    """How JSON call objects name their tool."""

    NAMED = "named"  # `{"name": ..., "arguments": ...}`, and the key names models use
    KEYED = "keyed"  # by their one key, the value the arguments (`{"get_weather": {...}}`)


class Value(StrEnum):
    """How a key-value pair's value is written."""

    TEXT = "text"  # as written
    STRIPPED = "stripped"  # blanks around it dropped
    LINES = "lines"  # one line break after the open tag and one before the close dropped
    JSON = "json"  # JSON, or the text when it is none
    XML = "xml"  # an element's text: CDATA that wraps it unwrapped, line breaks around it dropped


# The types a key-value pair's `{type}` names that keep its value as text (DSML and GigaChat
# write `string="true"`); any other reads it as JSON, or as text where it is none.
TEXT_TYPES = frozenset({"string", "str", "text", "true"})


def _value(raw: str, kind: Value, budget: RelaxedParseBudget) -> Any:
    if kind is Value.XML:
        return string_value(raw)
    if kind is Value.STRIPPED:
        return raw.strip()
    if kind is Value.LINES:
        return raw.removeprefix("\n").removesuffix("\n")
    if kind is Value.JSON:
        return json_or_text(raw.strip(), budget)
    return raw


def _group(found: re.Match[str], name: str) -> str | None:
    """A match's group `name`, or its only group, or the whole match."""
    if name in found.re.groupindex:
        return found.group(name)
    return found.group(1) if found.re.groups == 1 else found.group()


@dataclass(frozen=True, slots=True)
class CallReading:
    """How one body (the text between a call's open tag and its close) is read."""

    arguments: Arguments
    # Each call of a section: its groups `name` and `arguments` (one call when None).
    calls: re.Pattern[str] | None = None
    # Where a call's text names its tool (group `name` or its one group), when `calls`
    # gives no name; None: the open tag names it.
    name: re.Pattern[str] | None = None
    # Where a call's arguments are in its text (group `arguments` or its one group);
    # None: all of it.
    arguments_at: re.Pattern[str] | None = None
    # One argument (groups `key` and `value`), for KEY_VALUE.
    pair: re.Pattern[str] | None = None
    value: Value = Value.TEXT
    # The string delimiter of TAGGED_VALUES.
    quote: str = '"'
    # JSON call objects are read in the body too: an array (or an object) for the whole body,
    # or an object where a call would name its tool.
    json_calls: bool = False
    # Call objects name their tool by their one key (`{"get_weather": {"city": "Paris"}}`).
    keyed: bool = False
    # The calls (and pairs) found are all the body (the call) holds, blanks aside: a format's
    # templates say all it writes, where a schema's regexes only find what they look for.
    exact: bool = False

    def read(self, body: str, tag_name: str, budget: RelaxedParseBudget) -> list[tuple[str, Any]]:
        """The calls `body` holds, given the tool its open tag names ("" when none does);
        raises CallObjectError (or a reader's error) when it holds something else."""
        if self.arguments is Arguments.PYTHON:
            return pythonic_calls(body, budget, one_list=False)
        if self.arguments is Arguments.PYTHON_LIST and not body.lstrip("[ \t\r\n").startswith("{"):
            return pythonic_calls(body, budget, one_list=True)
        if self.arguments is Arguments.PYTHON_LIST or (
            self.json_calls and body.lstrip()[:1] in ("[", "{")
        ):
            return calls_in_json(body, complete_only=True, budget=budget)
        if self.calls is None:
            if not tag_name and self.name is None and self.arguments is Arguments.JSON:
                return calls_in_json(body, complete_only=True, budget=budget, keyed=self.keyed)
            return [self._call(body, None, tag_name, budget)]
        found = list(self.calls.finditer(body))
        if self.exact:
            _only_blanks_between(body, found, "the calls")
        return [self._call(call.group(), call, tag_name, budget) for call in found]

    def _call(
        self, text: str, found: re.Match[str] | None, tag_name: str, budget: RelaxedParseBudget
    ) -> tuple[str, Any]:
        name = tag_name
        if found is not None and "name" in found.re.groupindex:
            name = found.group("name") or ""
            if "server" in found.re.groupindex and found.group("server"):
                name = f"{found.group('server').strip()}{NAMESPACE_SEPARATOR}{name.strip()}"
        elif self.name is not None:
            named = self.name.search(text)
            if named is None:
                raise CallObjectError("a call that names no tool")
            name = _group(named, "name") or ""
        if found is not None and "arguments" in found.re.groupindex:
            text = found.group("arguments")
        elif self.arguments_at is not None:
            placed = self.arguments_at.search(text)
            text = "" if placed is None else _group(placed, "arguments") or ""
        if not name and (self.arguments is Arguments.JSON or self.json_calls):
            return _one_call(calls_in_json(text, complete_only=True, budget=budget))
        return name.strip(), self._arguments(text, budget)

    def _arguments(self, text: str, budget: RelaxedParseBudget) -> dict[str, Any]:
        if self.arguments is Arguments.KEY_VALUE:
            assert self.pair is not None
            pairs = list(self.pair.finditer(text))
            if self.exact:
                _only_blanks_between(text, pairs, "the arguments")
            return {pair.group("key").strip(): self._pair_value(pair, budget) for pair in pairs}
        if self.arguments is Arguments.TAGGED_VALUES:
            return tagged_object(text.strip(), self.quote)
        if not text.strip():
            return {}
        try:
            value = parse_relaxed_json(text, complete_only=True, budget=budget)
        except RelaxedJSONError as error:
            raise CallObjectError(f"arguments are not JSON: {error}") from None
        if not isinstance(value, dict):
            raise CallObjectError("arguments must be a JSON object")
        return value

    def _pair_value(self, pair: re.Match[str], budget: RelaxedParseBudget) -> Any:
        typed = pair.group("type") if "type" in pair.re.groupindex else None
        if typed is not None and typed.strip().lower() not in TEXT_TYPES:
            return json_or_text(pair.group("value").strip(), budget)
        return _value(pair.group("value"), self.value, budget)


def _only_blanks_between(text: str, found: list[re.Match[str]], what: str) -> None:
    """Raises CallObjectError where `text` holds more than blanks around the matches `found`:
    a model that writes text among its calls or arguments wrote no call the format reads."""
    at = 0
    for match in [*found, None]:
        end = len(text) if match is None else match.start()
        if text[at:end].strip():
            raise CallObjectError(f"text among {what}: {text[at:end].strip()[:40]!r}")
        at = at if match is None else match.end()


def _one_call(calls: list[tuple[str, dict[str, Any]]]) -> tuple[str, Any]:
    if len(calls) != 1:
        raise CallObjectError("one call object a call")
    return calls[0]
