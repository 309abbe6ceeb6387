"""Forced calls (an explicit `tool_choice`): ask for exactly one JSON object {name, arguments}
(by prompt, and by JSON schema where the upstream takes one), read it back, and say what is
wrong with a reply that is not one, for the model to be asked again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..base import Protocol
from ..lenient.call_objects import ARGUMENT_KEYS, NAME_KEYS, CallObjectError, call_from_object
from ..lenient.coerce import coerce_by_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_json import (
    RelaxedJSONError,
    RelaxedParseBudget,
    parse_relaxed_json,
    strip_code_fence,
)
from ..parts import ToolCall, ToolSpec
from ..streaming.commit_policy import dump_arguments, new_call_id
from .prompting import example_arguments, tool_declarations

# Prose around the object can hold many `{`; trying each one is quadratic, so stop early.
MAX_OBJECT_STARTS = 64
# The name of the schema a structured-output forced call is asked for by.
FORCED_CALL_SCHEMA = "tool_call"
# Where a JSON schema keeps the definitions its references name (2019-09 on, and draft 7).
DEFINITION_KEYWORDS = ("$defs", "definitions")


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


def render_forced_call_correction(problem: str, *, named: str | None) -> str:
    """What the model is told after a reply that was not the call it had to make: why, and
    the demand again (the tools are in the system prompt it still has)."""
    which = f"the tool {named}" if named else "exactly one of the declared tools"
    return (
        f"Your reply was not the tool call required: {problem}. Reply again, calling {which}:"
        ' one JSON object with the keys "name" and "arguments", and nothing else.'
    )


def forced_call_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A `response_format` whose JSON schema admits exactly the calls to `tools`: each an
    object `{name, arguments}` whose name is one tool's and whose arguments follow that
    tool's schema. Upstreams that constrain their output by it (vLLM, llama.cpp's server,
    Ollama, LM Studio) can only write a valid call. `enum` rather than `const`: every
    grammar backend reads it.

    A tool's schema moves from the root to `arguments`, so its local references are moved
    with it: its definitions (`$defs`, `definitions`, as pydantic writes nested models) go
    to the root's `$defs` under the tool's name (grammar backends resolve only root
    definitions), and any other `#...` reference gets the path to its new place."""
    definitions: dict[str, Any] = {}
    calls = []
    for position, tool in enumerate(tools):
        at = (
            "/properties/arguments"
            if len(tools) == 1
            else f"/anyOf/{position}/properties/arguments"
        )
        arguments, own = _moved_schema(tool.parameters or {"type": "object"}, tool.name, at)
        definitions.update(own)
        calls.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "arguments": arguments,
                },
                "required": ["name", "arguments"],
            }
        )
    schema: dict[str, Any] = calls[0] if len(calls) == 1 else {"anyOf": calls}
    if definitions:
        schema = {**schema, "$defs": definitions}
    return {"type": "json_schema", "json_schema": {"name": FORCED_CALL_SCHEMA, "schema": schema}}


def _moved_schema(
    schema: dict[str, Any], tool: str, at: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool's schema as it sits at the JSON pointer `at` of the call schema, and its
    definitions as they sit in the root's `$defs`."""
    body = dict(schema)
    renames: dict[str, str] = {}  # old reference prefix -> new one
    definitions: dict[str, Any] = {}
    for keyword in DEFINITION_KEYWORDS:
        found = body.get(keyword)
        if not isinstance(found, dict):
            continue
        del body[keyword]
        for name, definition in found.items():
            renames[f"#/{keyword}/{_pointer_token(name)}"] = (
                f"#/$defs/{_pointer_token(f'{tool}.{name}')}"
            )
            definitions[f"{tool}.{name}"] = definition
    moved = _with_references_moved({"": body, **definitions}, renames, at)
    return moved.pop(""), moved


def _with_references_moved(
    value: dict[str, Any], renames: dict[str, str], at: str
) -> dict[str, Any]:
    """A copy of `value` with each local `$ref` renamed (`renames`) or, pointing elsewhere in
    the tool's schema, prefixed with `at`. Iterative: a schema nested as deep as a request
    may hold cannot exhaust the stack."""
    root = dict(value)
    stack: list[Any] = [root]  # containers already copied, whose children are not yet
    while stack:
        node = stack.pop()
        for key, child in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(child, dict | list):
                node[key] = dict(child) if isinstance(child, dict) else list(child)
                stack.append(node[key])
            elif key == "$ref" and isinstance(child, str) and child.startswith("#"):
                node[key] = _moved_reference(child, renames, at)
    return root


def _moved_reference(reference: str, renames: dict[str, str], at: str) -> str:
    # A definition's reference is `#/<keyword>/<name>`, then maybe a path inside it: one
    # look-up, not a try of every rename (10,000 `$defs` referenced took 9 s).
    head = "/".join(reference.split("/", 3)[:3])
    new = renames.get(head)
    if new is not None:
        return new + reference[len(head) :]
    return f"#{at}{reference[1:]}"


def _pointer_token(name: str) -> str:
    """A name as one JSON-pointer token (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, slots=True)
class ForcedReply:
    """What a reply to the forced-call prompt holds. `name` is a tool the call may be to
    (the named one, or one of those offered; never another), `arguments` what was read for
    it, coerced by its schema (None: nothing readable), `problem` why this is not a whole
    call (None when it is)."""

    text: str
    name: str | None
    arguments: Any
    problem: str | None

    def call(self) -> ToolCall:
        """The call to `name`, with {} for arguments that could not be read."""
        assert self.name is not None, "a reply that names no tool makes no call"
        arguments = {} if self.arguments is None else self.arguments
        return ToolCall(new_call_id(), self.name, dump_arguments(arguments), arguments, self.text)


def read_forced_call(
    text: str,
    protocol: Protocol,
    tools: Sequence[ToolSpec],
    *,
    default_name: str | None = None,
) -> ForcedReply:
    """The call in a forced-call reply to one of `tools`; never raises. A missing name
    becomes `default_name` (the named tool, or the only one offered); a name that is not one
    of `tools` (or, with a default, not the default) is a problem, never a call.

    Accepted: a bare object, one in a code fence or amid prose, or a call written in
    the protocol's own format."""
    budget = RelaxedParseBudget()  # the answer's own, as a streamed answer has one
    offered = {tool.name: tool for tool in tools}
    name, arguments = _read_call(text, protocol, tools, budget)
    problem = None
    if name is None:
        name = default_name
    elif name not in offered or default_name not in (None, name):
        allowed = repr(default_name) if default_name else "one of the declared tools"
        problem = f"it called {name!r}, which is not {allowed}"
        name, arguments = default_name, None
    if problem is None and name is None:
        problem = "it named no tool" if arguments is not None else "it held no tool call"
    elif problem is None and arguments is None:
        problem = f"no arguments for {name} could be read from it"
    tool = offered.get(name) if name is not None else None
    if tool is not None and arguments is not None:
        arguments = coerce_by_schema(arguments, tool.parameters, budget)
    return ForcedReply(text, name, arguments, problem)


def _read_call(
    text: str, protocol: Protocol, tools: Sequence[ToolSpec], budget: RelaxedParseBudget
) -> tuple[str | None, dict[str, Any] | None]:
    calls = [part for part in protocol.parse(text, tools) if isinstance(part, ToolCall)]
    if calls:
        offered = {tool.name for tool in tools}
        call = next((call for call in calls if call.name in offered), calls[0])
        return call.name, call.input
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
    whole, span = strip_code_fence(text.strip()), text[first : last + 1]
    for candidate, read_before in ((whole, False), (span, True)):
        try:
            if read_before:
                budget.spend_reread(len(candidate))
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
            budget.spend_reread(len(text) - start)
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
