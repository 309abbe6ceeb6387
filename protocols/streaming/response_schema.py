"""A model's `response_schema` (Hugging Face's, as a checkpoint's `tokenizer_config.json` may
carry it, Gemma 4's among them) read as a call format: a JSON schema of the assistant's
message whose `tool_calls` node says, with regular expressions, where a call lies and how its
name and arguments are written (`x-regex`, `x-regex-iterator`, `x-regex-key-value`,
`x-parser`).

The schema was made to read a whole answer; the proxy streams it. So the regex that finds a
call must open and close with literal text (`<\\|tool_call>(.*?)<tool_call\\|>`): text flows
until the opening, and the call is held from there to its closing and read whole by the
schema's own regexes, as `described_format` reads a call. What cannot be streamed so is
refused at start, saying why."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .call_reading import Arguments, CallReading, Value
from .described_format import FormatError, compile_forms, delimited_form
from .dialect_forms import Dialect, OpenForm

_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r"}
_SPECIAL = set(".^$*+?{}[]|()")
# What may hold a call's text between its open and close: anything, as little as needed.
_LAZY_ANYTHING = (".*?", ".+?", r"[\s\S]*?", r"[\s\S]+?")
BLANK_PATTERNS = (r"\s*", r"\s+", r"\n?", r"\n*")
# Gemma 4's value syntax (`{key:<|"|>text<|"|>,n:3}`), as its schema names it.
_TAGGED_PARSERS = {"gemma4-tool-call": '<|"|>'}


def literal_prefix(regex: str, at: int) -> tuple[str, int]:
    """The literal text a regex spells from `at`, and where that ends."""
    text = []
    while at < len(regex):
        char = regex[at]
        if char == "\\" and at + 1 < len(regex):
            escaped = regex[at + 1]
            if escaped.isalnum() and escaped not in _UNESCAPED:
                break  # a class (\s, \w) or a back-reference: no literal
            text.append(_UNESCAPED.get(escaped, escaped))
            at += 2
        elif char in _SPECIAL:
            break
        else:
            text.append(char)
            at += 1
    return "".join(text), at


def _skip(regex: str, at: int, options: tuple[str, ...]) -> int:
    for option in options:
        if regex.startswith(option, at):
            return at + len(option)
    return at


def delimiters(regex: str, key: str) -> tuple[str, str, bool]:
    """The literal open and close of a regex that finds one call, `OPEN(.*?)CLOSE`, and
    whether the output's end may stand for the close (`(?:CLOSE|$)`); FormatError (naming
    `key`) where the regex is not of that shape."""
    opening, at = literal_prefix(regex, 0)
    if not opening:
        raise FormatError(key, "a call must open with literal text, for a stream to find it")
    at = _skip(regex, at, BLANK_PATTERNS)
    group = re.match(r"\((?:\?P<\w+>)?", regex[at:])
    body = next(
        (lazy for lazy in _LAZY_ANYTHING if group and regex.startswith(lazy, at + group.end())),
        None,
    )
    if group is None or body is None or not regex.startswith(")", at + group.end() + len(body)):
        raise FormatError(
            key,
            f"after {opening!r} the call must be one group of anything, as little as needed (.*?)",
        )
    at = _skip(regex, at + group.end() + len(body) + 1, BLANK_PATTERNS)
    closing, at = literal_prefix(regex, at)
    optional = False
    if not closing and regex.startswith("(?:", at):
        closing, at = literal_prefix(regex, at + 3)
        optional = regex.startswith("|$)", at)
        at += 3 if optional else 0
    if not closing or at != len(regex):
        raise FormatError(
            key, "a call must close with literal text (or with it or the output's end)"
        )
    return opening, closing, optional


def _node(parent: Mapping[str, Any], name: str, path: str) -> Mapping[str, Any]:
    node = parent.get(name)
    if not isinstance(node, Mapping):
        raise FormatError(
            f"{path}.{name}", "is missing: the schema does not say how calls are written"
        )
    return node


def _pattern(node: Mapping[str, Any], key: str, path: str) -> re.Pattern[str] | None:
    regex = node.get(key)
    if regex is None:
        return None
    try:
        return re.compile(regex, re.DOTALL)
    except (re.error, TypeError) as error:
        raise FormatError(f"{path}.{key}", f"is no regular expression: {error}") from None


def _refuse_substitutions(node: Any, path: str) -> None:
    if isinstance(node, Mapping):
        if "x-regex-substitutions" in node:
            raise FormatError(
                f"{path}.x-regex-substitutions", "rewrites the text before reading it: not read"
            )
        for name, child in node.items():
            _refuse_substitutions(child, f"{path}.{name}")


def _arguments(node: Mapping[str, Any], path: str) -> dict[str, Any]:
    """How a call's arguments are read: CallReading's fields."""
    parser = node.get("x-parser")
    fields: dict[str, Any] = {"arguments_at": _pattern(node, "x-regex", path)}
    if "x-regex-key-value" in node:
        pair = _pattern(node, "x-regex-key-value", path)
        assert pair is not None
        if not {"key", "value"} <= pair.groupindex.keys():
            raise FormatError(f"{path}.x-regex-key-value", "must have the groups key and value")
        values = node.get("additionalProperties")
        parsed = isinstance(values, Mapping) and values.get("x-parser") == "json"
        return {
            **fields,
            "arguments": Arguments.KEY_VALUE,
            "pair": pair,
            "value": Value.JSON if parsed else Value.TEXT,
        }
    if parser == "json":
        return {**fields, "arguments": Arguments.JSON}
    if parser in _TAGGED_PARSERS:
        return {**fields, "arguments": Arguments.TAGGED_VALUES, "quote": _TAGGED_PARSERS[parser]}
    raise FormatError(
        path,
        f"says no x-parser the proxy reads (json, {', '.join(_TAGGED_PARSERS)})"
        " nor x-regex-key-value",
    )


def _reading(items: Mapping[str, Any], path: str) -> CallReading:
    """How one call's text is read, from the schema of one item of `tool_calls`."""
    properties = items.get("properties", {})
    function, at = (
        (properties["function"], f"{path}.properties.function")
        if "function" in properties
        else (items, path)
    )
    if not isinstance(function, Mapping):
        raise FormatError(at, "must be an object schema")
    calls = _pattern(function, "x-regex", at)
    fields = function.get("properties", {})
    if calls is not None and {"name", "arguments"} <= calls.groupindex.keys():
        arguments = _arguments(
            _node(fields, "arguments", f"{at}.properties"), f"{at}.properties.arguments"
        )
        return CallReading(calls=calls, **arguments)
    name = _pattern(_node(fields, "name", f"{at}.properties"), "x-regex", f"{at}.properties.name")
    if name is None:
        raise FormatError(
            f"{at}.properties.name", "has no x-regex: where a call names its tool is not said"
        )
    arguments = _arguments(
        _node(fields, "arguments", f"{at}.properties"), f"{at}.properties.arguments"
    )
    return CallReading(name=name, **arguments)


def schema_forms(document: Mapping[str, Any]) -> tuple[OpenForm, ...]:
    """The open forms of the calls a `response_schema` describes (given alone, or in the
    `tokenizer_config.json` that carries it); raises FormatError naming the key."""
    schema = document.get("response_schema", document)
    path = "response_schema"
    if not isinstance(schema, Mapping):
        raise FormatError(path, "must be a JSON schema object")
    tool_calls = _node(_node(schema, "properties", path), "tool_calls", f"{path}.properties")
    path += ".properties.tool_calls"
    _refuse_substitutions(tool_calls, path)
    key = "x-regex-iterator" if "x-regex-iterator" in tool_calls else "x-regex"
    regex = tool_calls.get(key)
    if not isinstance(regex, str):
        raise FormatError(
            path, "has no x-regex-iterator or x-regex: where a call opens is not said"
        )
    opening, closing, optional = delimiters(regex, f"{path}.{key}")
    whole = tool_calls if key == "x-regex" else _node(tool_calls, "items", path)
    if whole.get("x-parser") == "json":  # call objects, which end themselves
        return compile_forms({"open": opening, "arguments": "json", "close": closing})
    where = path if key == "x-regex" else f"{path}.items"
    return (delimited_form(opening, (closing,), _reading(whole, where), end_optional=optional),)


def schema_dialect(name: str, document: Mapping[str, Any]) -> type[Dialect]:
    """A dialect class for the calls `document` (a response_schema) describes, not registered."""
    return type(f"Schema[{name}]", (Dialect,), {"name": name, "forms": schema_forms(document)})
