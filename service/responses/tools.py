"""The Responses API's tool types on the chat machinery. Function and custom tools become chat
tools; a namespace's tools are flattened among them, each keeping its own name unless another
tool has it too (then `namespace.name`); a client-executed `tool_search` is a function like
any other; hosted tools, which a text-only upstream cannot run, are left out (or refused,
with `HOSTED_TOOLS=reject`). Each name the model sees leads back to the client's tool, so a
call is answered as the item that tool's kind calls for, with its namespace."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..exchange import check_hosted_tool, invalid
from ..settings import HostedTools

FUNCTION, CUSTOM, NAMESPACE, TOOL_SEARCH = "function", "custom", "namespace", "tool_search"
# Tools the API's own servers run: nothing a text-only model can do with them.
HOSTED_TOOL_TYPES = frozenset(
    {
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "file_search",
        "code_interpreter",
        "image_generation",
        "computer",
        "computer_use_preview",
        "mcp",
    }
)
Declared = tuple["ClientTool", dict[str, Any]]  # a tool, and its chat declaration but the name


@dataclass(frozen=True, slots=True)
class ClientTool:
    """A tool as the client declared it: its kind (function, custom or tool_search), its own
    name and its namespace."""

    kind: str
    name: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class ResponsesTools:
    """A request's tools as chat declares them, and the way between the names the model
    sees and the client's tools.

    >>> tools = responses_tools([{"type": "function", "name": "f"}], HostedTools.DROP)
    >>> tools.chat_tools, tools.called["f"]
    """

    chat_tools: list[dict[str, Any]] = field(default_factory=list)
    called: dict[str, ClientTool] = field(default_factory=dict)  # model's name -> client's tool
    dropped: tuple[str, ...] = ()  # the types of the hosted tools left out
    _names: dict[tuple[str, str | None], str] = field(default_factory=dict)  # and back

    def model_name(self, name: str, namespace: str | None = None) -> str:
        """The name the model knows a client's tool by (an earlier call's, say)."""
        return self._names.get((name, namespace), name)

    def client_tool(self, model_name: str, *, custom: bool) -> ClientTool:
        """The tool the model called; one it was not offered is a function (or a custom tool,
        when chat parsed a custom call), named as the model wrote it."""
        found = self.called.get(model_name)
        return found or ClientTool(CUSTOM if custom else FUNCTION, model_name)


def responses_tools(
    value: Any, hosted: HostedTools, *, loaded: Sequence[Any] = ()
) -> ResponsesTools:
    """`tools` of a Responses request, checked, then the tools its client's tool searches
    `loaded`; anything it cannot serve is a 400 naming it."""
    if value is None:
        value = []
    if not isinstance(value, list):
        raise invalid("'tools' must be an array", "tools")
    declared: list[Declared] = []
    dropped = []
    params = [f"tools[{index}]" for index in range(len(value))]
    params += [f"tool_search_output.tools[{index}]" for index in range(len(loaded))]
    for param, tool in zip(params, [*value, *loaded], strict=True):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == NAMESPACE:
            declared += _namespace_tools(tool, param)
        elif kind in HOSTED_TOOL_TYPES or (
            kind == TOOL_SEARCH and tool.get("execution") != "client"
        ):
            check_hosted_tool(str(kind), param, hosted, runs_on="OpenAI's servers")
            dropped.append(str(kind))
        else:
            declared.append(_declared(tool, param, None))
    return _named(declared, tuple(dropped))


def _namespace_tools(namespace: dict[str, Any], param: str) -> list[Declared]:
    name, tools = namespace.get("name"), namespace.get("tools")
    if not isinstance(name, str) or not name or not isinstance(tools, list):
        raise invalid("a namespace tool needs a name and an array of tools", param)
    about = str(namespace.get("description") or "")
    declared = []
    for index, tool in enumerate(tools):
        client, declaration = _declared(tool, f"{param}.tools[{index}]", name)
        if about:  # what the group is for, which the model would otherwise not see
            own = declaration.get("description")
            declaration["description"] = f"{about}\n\n{own}" if own else about
        declared.append((client, declaration))
    return declared


def _declared(tool: Any, param: str, namespace: str | None) -> Declared:
    """A function, custom or (outside namespaces) client tool_search tool."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind == TOOL_SEARCH and namespace is None:
        name = TOOL_SEARCH  # the client runs it: a function the model calls by the type's name
    elif kind in (FUNCTION, CUSTOM):
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"a {kind} tool needs a name", f"{param}.name")
    else:
        raise invalid(
            f"tools of type {kind!r} are not supported: the proxy offers function, custom and"
            " namespace tools (and leaves out hosted ones)",
            param,
            "unsupported",
        )
    if not isinstance(tool.get("parameters", {}), dict | None):
        raise invalid("a tool's parameters must be a JSON schema object", f"{param}.parameters")
    declaration = {key: tool[key] for key in ("description", "parameters") if key in tool}
    if tool.get("strict") is True:  # calls that follow the schema exactly
        declaration["strict"] = True
    if kind == CUSTOM:
        declaration = {"description": tool.get("description"), "format": _format(tool)}
    return ClientTool(kind, name, namespace), declaration


def _format(tool: dict[str, Any]) -> dict[str, Any]:
    """A custom tool's `format` as chat declares it: a grammar's fields under `grammar`."""
    fmt = tool.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "grammar":
        return {"type": "grammar", "grammar": {k: fmt.get(k) for k in ("syntax", "definition")}}
    return {"type": "text"}


def _named(declared: list[Declared], dropped: tuple[str, ...]) -> ResponsesTools:
    """Each tool under the name the model sees: its own, or, for a namespace's tool whose
    name another tool has too, `namespace.name`."""
    counts = Counter(client.name for client in {client for client, _ in declared})
    tools = ResponsesTools(dropped=dropped)
    for client, declaration in declared:
        known = tools._names.get((client.name, client.namespace))
        if known is not None and tools.called[known] == client:
            continue  # declared again (a tool search loaded it, say): once is enough
        name = client.name
        if client.namespace is not None and counts[name] > 1:
            name = f"{client.namespace}.{name}"
        if tools.called.setdefault(name, client) != client:
            raise invalid(f"two tools are named {name!r}", "tools")
        tools._names[client.name, client.namespace] = name
        chat_kind = CUSTOM if client.kind == CUSTOM else FUNCTION
        tools.chat_tools.append({"type": chat_kind, chat_kind: {"name": name, **declaration}})
    return tools
