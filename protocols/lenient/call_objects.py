"""Calls written as JSON objects, `{"name": ..., "arguments": {...}}`, and the variants models
write: read by every protocol that meets one (a JSON-mix call body, a forced call's answer)."""

from __future__ import annotations

from typing import Any

from .json_values import parse_json_values
from .relaxed_json import (
    RelaxedJSONError,
    RelaxedParseBudget,
    parse_relaxed_json,
    strip_code_fence,
)

# The keys models use for a call's tool name and its arguments, most common first.
NAME_KEYS = ("name", "function", "tool", "tool_name")
ARGUMENT_KEYS = ("arguments", "parameters", "params", "input", "args")


class CallObjectError(ValueError):
    """JSON text that holds no well-formed call object."""


def calls_in_json(
    text: str,
    *,
    complete_only: bool,
    budget: RelaxedParseBudget,
    required_keys: frozenset[str] | None = None,
    keyed: bool = False,
) -> list[tuple[str, dict[str, Any]]]:
    """The calls `text` holds: one object, an array of them, or several objects in a row,
    maybe in a code fence. With `complete_only`, text that needs closing is rejected (the
    output was cut off, and a half-written call must not pass as a finished one). With
    `required_keys`, an object holding none of them is no call; `keyed`, each object names its
    tool by its one key (`keyed_call`). Every parse is charged to `budget`."""
    try:
        values = parse_json_values(
            strip_code_fence(text), complete_only=complete_only, budget=budget
        )
    except RelaxedJSONError as error:
        raise CallObjectError(f"malformed call JSON: {error}") from None
    calls = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if required_keys is not None and not (
                isinstance(item, dict) and required_keys & _openai_function(item).keys()
            ):
                raise CallObjectError(f"a call object holds none of {sorted(required_keys)}")
            calls.append(keyed_call(item) if keyed else call_from_object(item, budget))
    if not calls:
        raise CallObjectError("no call in the body")
    return calls


def call_from_object(item: Any, budget: RelaxedParseBudget) -> tuple[str, dict[str, Any]]:
    """(name, arguments) from `{"name": ..., "arguments": {...}}` and the variants models
    write: other key names, arguments as a JSON string, OpenAI's `{"function": {...}}`. A
    tool's declaration echoed back (a description beside a parameters schema, as the prompt
    declares tools) is no call."""
    if not isinstance(item, dict):
        raise CallObjectError("a call must be a JSON object")
    item = _openai_function(item)
    name = next((item[key] for key in NAME_KEYS if key in item), None)
    if not isinstance(name, str) or not name:
        raise CallObjectError("the call has no tool name")
    arguments = next((item[key] for key in ARGUMENT_KEYS if key in item), None)
    if "description" in item and _is_object_schema(arguments):
        raise CallObjectError(f"a declaration of the tool {name!r} written back, not a call")
    if isinstance(arguments, str):
        try:
            arguments = parse_relaxed_json(arguments, budget=budget) if arguments.strip() else {}
        except RelaxedJSONError as error:
            raise CallObjectError(f"arguments string is not JSON: {error}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise CallObjectError("arguments must be a JSON object")
    return name, arguments


def _openai_function(item: dict[str, Any]) -> dict[str, Any]:
    """The call inside OpenAI's shape, `{"type": "function", "function": {name, arguments}}`
    (what a model that has seen API traffic writes back), else the object itself."""
    function = item.get("function")
    return function if isinstance(function, dict) else item


def _is_object_schema(value: Any) -> bool:
    """Whether `value` reads as a tool's parameters schema, as a declaration holds it."""
    return (
        isinstance(value, dict)
        and value.get("type") == "object"
        and isinstance(value.get("properties"), dict)
    )


def keyed_call(item: Any) -> tuple[str, dict[str, Any]]:
    """(name, arguments) from an object that names its tool by its one key, the value its
    arguments (`{"get_weather": {"city": "Paris"}}`, as Apertus writes them)."""
    if not isinstance(item, dict) or len(item) != 1:
        raise CallObjectError("a call must be an object of one key, the tool's name")
    [(name, arguments)] = item.items()
    if not isinstance(arguments, dict):
        raise CallObjectError("arguments must be a JSON object")
    return name, arguments
