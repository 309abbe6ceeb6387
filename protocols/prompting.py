"""Pieces of prompt text both protocols use: tool declarations and example arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .parts import ToolSpec

# Example values are illustrative only; deeper schemas add tokens without teaching more.
_EXAMPLE_DEPTH = 3


def tool_declarations(tools: Sequence[ToolSpec]) -> str:
    """One JSON object per line: name, description and the JSON-schema parameters."""
    return "\n".join(
        json.dumps(
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
            ensure_ascii=False,
        )
        for tool in tools
    )


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Plausible arguments for an object schema: its required properties (or the first)."""
    value = _example_value(schema, 0)
    return value if isinstance(value, dict) else {}


def _example_value(schema: Mapping[str, Any], depth: int) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _example_value(schema[key][0], depth)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        if depth >= _EXAMPLE_DEPTH:
            return {}
        properties: Mapping[str, Any] = schema.get("properties") or {}
        names = list(schema.get("required") or list(properties)[:1])
        return {
            name: _example_value(properties.get(name, {}), depth + 1)
            for name in names
            if isinstance(properties.get(name, {}), Mapping)
        }
    if kind == "array":
        items = schema.get("items")
        if depth >= _EXAMPLE_DEPTH or not isinstance(items, Mapping):
            return []
        return [_example_value(items, depth + 1)]
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, "...")
