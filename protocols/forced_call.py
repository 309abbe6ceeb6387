"""Forced calls (an explicit `tool_choice`): ask for exactly one JSON object {name, arguments}
and parse it back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .base import Protocol
from .call_objects import ARGUMENT_KEYS, NAME_KEYS, CallObjectError, call_from_object
from .coerce import coerce_by_schema
from .commit_policy import dump_arguments, new_call_id
from .json_text import json_text
from .parts import ErrorKind, OnError, ParseError, ToolCall, ToolSpec
from .prompting import example_arguments, tool_declarations
from .relaxed_json import (
    RelaxedJSONError,
    RelaxedParseBudget,
    parse_relaxed_json,
    strip_code_fence,
)

# Prose around the object can hold many `{`; trying each one is quadratic, so stop early.
MAX_OBJECT_STARTS = 64


def render_forced_call_prompt(tools: Sequence[ToolSpec], *, named: str | None) -> str:
    """System text demanding one JSON object `{"name": ..., "arguments": {...}}`."""
    offered = [tool for tool in tools if tool.name == named] if named else list(tools)
    example = offered[0] if offered else ToolSpec(named or "tool_name")
    example_call = {"name": example.name, "arguments": example_arguments(example.parameters)}
    which = f"the tool {named}" if named else "exactly one of these tools"
    return "\n".join(
        [
            "# Tool call required",
            "",
            f"You must now call {which}. Tool declarations (name, description, JSON schema"
            " of the arguments):",
            "",
            tool_declarations(offered),
            "",
            'Reply with one JSON object with the keys "name" and "arguments", and nothing'
            " else: no prose, no code fence. For example:",
            json_text(example_call),
        ]
    )


def parse_forced_call(
    text: str,
    protocol: Protocol,
    tools: Sequence[ToolSpec],
    *,
    default_name: str | None,
    on_error: OnError | None = None,
) -> ToolCall:
    """One call from `text`; never raises. A missing name becomes `default_name` (or
    "unknown"); unparseable arguments become {} and an error record.

    Accepted: a bare object, one in a code fence or amid prose, or a call written in
    the protocol's own format."""
    fallback = default_name or "unknown"
    budget = RelaxedParseBudget()  # the answer's own, as a streamed answer has one
    name, arguments = _read_call(text, protocol, tools, budget)
    if default_name and name not in (None, default_name):
        _report(on_error, f"the model called {name!r}, not {default_name!r}", text)
        name = None
    if arguments is None:
        _report(on_error, "no call arguments found in the reply", text)
        arguments = {}
    name = name or fallback
    tool = next((tool for tool in tools if tool.name == name), None)
    if tool is not None:
        arguments = coerce_by_schema(arguments, tool.parameters, budget)
    return ToolCall(new_call_id(), name, dump_arguments(arguments), arguments, text)


def _read_call(
    text: str, protocol: Protocol, tools: Sequence[ToolSpec], budget: RelaxedParseBudget
) -> tuple[str | None, dict[str, Any] | None]:
    for part in protocol.parse(text, tools):
        if isinstance(part, ToolCall):
            return part.name, part.input
    for value in _objects_in(text, budget):
        if any(key in value for key in NAME_KEYS):
            try:
                return call_from_object(value, budget)
            except CallObjectError:
                name = next((value[key] for key in NAME_KEYS if key in value), None)
                return (name if isinstance(name, str) and name else None), None
        if any(key in value for key in ARGUMENT_KEYS):
            arguments = next(value[key] for key in ARGUMENT_KEYS if key in value)
            if isinstance(arguments, dict):
                return None, arguments
        # A bare object without either key is the arguments themselves.
        return None, value
    return None, None


def _objects_in(text: str, budget: RelaxedParseBudget) -> list[dict[str, Any]]:
    """The first JSON object in `text`: the whole (fence-stripped) text, or the span from
    its first `{` to its last `}` read relaxed, else the first `{` from which a strict
    object decodes. Every attempt is charged to `budget`."""
    first, last = text.find("{"), text.rfind("}")
    for candidate in (strip_code_fence(text.strip()), text[first : last + 1]):
        try:
            value = parse_relaxed_json(candidate, budget=budget)
        except RelaxedJSONError:
            continue
        if isinstance(value, dict):
            return [value]
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(MAX_OBJECT_STARTS):
        if start == -1:
            break
        try:
            budget.spend_strict(len(text) - start)
        except RelaxedJSONError:
            break
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return [value]
    return []


def _report(on_error: OnError | None, message: str, original: str) -> None:
    if on_error is not None:
        on_error(ParseError(ErrorKind.TOOL_CHOICE_FALLBACK, message, original))
