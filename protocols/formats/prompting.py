"""Pieces of prompt text every protocol uses: tool declarations and example arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..lenient.json_text import json_text
from ..parts import ToolSpec

# Example values are illustrative only; deeper schemas add tokens without teaching more.
_EXAMPLE_DEPTH = 3


@dataclass(frozen=True, slots=True)
class SeveralCalls:
    """How a protocol writes several calls, where not one after another: the sentence
    before the example, the rule restating it, and the example's rendering."""

    how_to_call: str
    rule: str
    render: Callable[[Sequence[tuple[str, Any]]], str]


def tools_prompt(
    tools: Sequence[ToolSpec],
    render_call: Callable[[str, Any], str],
    *,
    how_to_call: str,
    rules: Sequence[str],
    results_in: str,
    single_call: bool,
    reminder: str | None = None,
    several_calls: SeveralCalls | None = None,
) -> str:
    """The system-prompt text declaring `tools` and how to call them, with one example.

    `reminder`, the closing line, restates the format where small models read it last,
    right before the conversation: measured with bench/real_model_calls.py, it took a
    1.5B model from 6 to 8 of 9 calls in protocol (morph-xml). `several_calls` adds an
    example of two calls where the protocol writes them otherwise than one after another."""
    example = tools[0] if tools else ToolSpec("tool_name")
    example_call = (example.name, example_arguments(example.parameters))
    several = []
    if single_call:
        how_many = "Call at most one tool per reply."
    elif several_calls is None:
        how_many = "To call several tools at once, write one call after another."
    else:
        second = tools[1] if len(tools) > 1 else example
        calls = [example_call, (second.name, example_arguments(second.parameters))]
        several = ["", f"{several_calls.how_to_call}, for example:", several_calls.render(calls)]
        how_many = several_calls.rule
    return "\n".join(
        [
            "# Tools",
            "",
            "You can call these tools. Each line declares one tool: its name, what it does,"
            " and a JSON schema of its arguments.",
            "",
            tool_declarations(tools),
            "",
            f"{how_to_call}, for example:",
            render_call(*example_call),
            *several,
            "",
            *(f"- {rule}" for rule in rules),
            f"- {how_many} After your calls, stop writing: each result comes back to you in"
            f" {results_in}.",
            "- A call that needs what another call returns waits for it: make the first call,"
            " stop, and write the next one once its result is back.",
            "- When no tool is needed, answer in plain text, without any call.",
            *([f"- {reminder}"] if reminder else []),
        ]
    )


def result_block(start: str, end: str, name: str, call_id: str, content: str) -> str:
    """A tool's result as Qwen's chat template writes it: the content as it is, between the
    result tags. The template gives it no attributes, so the call's name and id go on a
    first line of their own. (A JSON object with the name beside the content reads like a
    call: a 1.5B model copied it to make its next call, a call the parser rightly left in
    the text.)"""
    return f"{start}\nResult of {name} ({call_id}):\n{content}\n{end}"


def tool_declarations(tools: Sequence[ToolSpec]) -> str:
    """One JSON object per line: name, description and the JSON-schema parameters."""
    return "\n".join(
        json_text(
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        )
        for tool in tools
    )


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Plausible arguments for an object schema: its required properties (or the first)."""
    value = _example_value(schema, 0)
    return value if isinstance(value, dict) else {}


def _example_value(schema: Any, depth: int) -> Any:
    # Schemas come from clients: anything malformed just gets a placeholder value.
    if not isinstance(schema, Mapping):
        return "..."
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return _example_value(branches[0], depth)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        if depth >= _EXAMPLE_DEPTH:
            return {}
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            properties = {}
        required = schema.get("required")
        names = required if isinstance(required, list) else list(properties)[:1]
        return {
            name: _example_value(properties.get(name, {}), depth + 1)
            for name in names
            if isinstance(name, str)
        }
    if kind == "array":
        items = schema.get("items")
        if depth >= _EXAMPLE_DEPTH or not isinstance(items, Mapping):
            return []
        return [_example_value(items, depth + 1)]
    if not isinstance(kind, str):
        return "..."
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, "...")
