"""The Gemini API's tools on the chat machinery. Function declarations become chat function
tools (`parametersJsonSchema` as it is, OpenAPI-style `parameters` converted: `schema.py`);
Google's built-in tools, which its servers run and a text-only upstream cannot, are left out
and counted (or refused, with HOSTED_TOOLS=reject); `toolConfig.functionCallingConfig` is
chat's `tool_choice`, `allowedFunctionNames` the tools offered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..exchange import check_hosted_tool, invalid
from ..settings import HostedTools
from .fields import field as named_field
from .schema import json_schema

DECLARATIONS = "functionDeclarations"
# Built-in tools by their field in a `Tool`: run by Google, never by the client. The field
# is the metric label of a dropped one, so the label's values are these few.
BUILT_IN_TOOLS = (
    "googleSearch",
    "googleSearchRetrieval",
    "enterpriseWebSearch",
    "googleMaps",
    "codeExecution",
    "urlContext",
    "fileSearch",
    "retrieval",
    "mcpServers",
    "parallelAiSearch",
    "exaAiSearch",
)
# The client runs it, on screenshots a text model cannot read.
SCREEN_TOOLS = ("computerUse",)
AUTO, ANY, NONE, VALIDATED = "AUTO", "ANY", "NONE", "VALIDATED"
MODES = frozenset({AUTO, ANY, NONE, VALIDATED, "MODE_UNSPECIFIED"})


@dataclass(frozen=True, slots=True)
class GeminiTools:
    """A request's tools as chat declares them, chat's `tool_choice` for its
    `functionCallingConfig` (None: auto), and the built-in tools left out (one per tool)."""

    chat_tools: list[dict[str, Any]] = field(default_factory=list)
    choice: Any = None
    dropped: tuple[str, ...] = ()


def gemini_tools(tools: Any, tool_config: Any, hosted: HostedTools) -> GeminiTools:
    """`tools` and `toolConfig` of a request, checked; anything the proxy cannot serve is a
    400 naming it."""
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise invalid("'tools' must be an array", "tools")
    declared: list[dict[str, Any]] = []
    dropped: list[str] = []
    for index, tool in enumerate(tools):
        param = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise invalid("each tool must be an object", param)
        for kind in BUILT_IN_TOOLS:
            if named_field(tool, kind) is not None:
                check_hosted_tool(kind, f"{param}.{kind}", hosted, runs_on="Google's servers")
                dropped.append(kind)
        for kind in SCREEN_TOOLS:
            if named_field(tool, kind) is not None:
                raise invalid(
                    f"'{kind}' tools need a screen, which a text model cannot see",
                    f"{param}.{kind}",
                    "unsupported",
                )
        declarations = named_field(tool, DECLARATIONS)
        if declarations is None:
            continue
        if not isinstance(declarations, list):
            raise invalid("must be an array", f"{param}.{DECLARATIONS}")
        for at, declaration in enumerate(declarations):
            declared.append(_function(declaration, f"{param}.{DECLARATIONS}[{at}]"))
    names = [function["name"] for function in declared]
    seen: set[str] = set()  # a set: counting each name in the list cost 3.8 s for 20,000
    for name in names:
        if name in seen:
            raise invalid(f"two functions are named {name!r}", "tools")
        seen.add(name)
    offered, choice = _calling_config(tool_config, names)
    offered_names = set(offered)
    chat_tools = [
        {"type": "function", "function": function}
        for function in declared
        if function["name"] in offered_names
    ]
    return GeminiTools(chat_tools, choice, tuple(dropped))


def _function(declaration: Any, param: str) -> dict[str, Any]:
    """A function declaration as chat's `function`: its JSON schema as given, or its OpenAPI
    schema converted."""
    if not isinstance(declaration, dict):
        raise invalid("each function declaration must be an object", param)
    name = declaration.get("name")
    if not isinstance(name, str) or not name:
        raise invalid("a function declaration needs a name", f"{param}.name")
    function: dict[str, Any] = {"name": name}
    if isinstance(description := declaration.get("description"), str):
        function["description"] = description
    schema = named_field(declaration, "parametersJsonSchema")
    if schema is not None:
        if not isinstance(schema, dict):
            raise invalid("must be a JSON schema object", f"{param}.parametersJsonSchema")
        function["parameters"] = schema
    elif (parameters := declaration.get("parameters")) is not None:
        function["parameters"] = json_schema(parameters, f"{param}.parameters")
    return function


def _calling_config(tool_config: Any, names: list[str]) -> tuple[list[str], Any]:
    """The functions offered and chat's `tool_choice`: ANY is a forced call (of the one
    function allowed, when one is), NONE offers none, AUTO and VALIDATED let the model
    choose; `allowedFunctionNames` narrows what is offered."""
    if tool_config is not None and not isinstance(tool_config, dict):
        raise invalid("must be an object", "toolConfig")
    config = named_field(tool_config, "functionCallingConfig") if tool_config else None
    if config is None:
        return names, None
    param = "toolConfig.functionCallingConfig"
    if not isinstance(config, dict):
        raise invalid("must be an object", param)
    mode = named_field(config, "mode") or AUTO
    if not isinstance(mode, str) or mode.upper() not in MODES:
        raise invalid("mode must be AUTO, ANY, NONE or VALIDATED", f"{param}.mode")
    mode = mode.upper()
    allowed = named_field(config, "allowedFunctionNames")
    if allowed is None or mode == NONE:
        offered = names
    elif not isinstance(allowed, list) or not all(isinstance(name, str) for name in allowed):
        raise invalid("must be an array of function names", f"{param}.allowedFunctionNames")
    else:
        declared = set(names)  # sets: 20,000 names looked up in lists cost 5.5 s
        if unknown := [name for name in allowed if name not in declared]:
            raise invalid(
                f"names undeclared function {unknown[0]!r}", f"{param}.allowedFunctionNames"
            )
        allowed_names = set(allowed)
        offered = [name for name in names if name in allowed_names]
    if mode == NONE:
        return offered, "none"
    if mode != ANY:
        return offered, None
    if not offered:
        raise invalid("mode ANY needs declared functions", f"{param}.mode")
    if len(offered) == 1:
        return offered, {"type": "function", "function": {"name": offered[0]}}
    return offered, "required"
