"""The Messages API's tools on the chat machinery. Custom tools (a name, a description and an
`input_schema`) become chat function tools; the Anthropic-defined tools that the client runs
(`bash_*`, `text_editor_*`, `memory_*`) are offered with the input schemas Anthropic
documents for them, since their declarations carry none; server tools, which Anthropic's
servers run and a text-only upstream cannot, are left out and counted (or refused, with
HOSTED_TOOLS=reject); a tool with `defer_loading` is offered once a `tool_reference` in an
earlier tool result has loaded it, as Anthropic's tool search makes it callable."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..exchange import check_hosted_tool, invalid
from ..settings import HostedTools

CUSTOM = "custom"
# An Anthropic-defined tool's type is its family and a date: `web_search_20250305`.
DATED_TYPE = re.compile(r"(?P<family>[a-z_]+?)_(?P<date>\d{8})")
# Server tools by family: run by Anthropic, never by the client. The family is the metric
# label of a dropped one, so the label's values are these few.
SERVER_TOOL_FAMILIES = frozenset(
    {"web_search", "web_fetch", "code_execution", "tool_search_tool_regex", "tool_search_tool_bm25"}
)
# Client tools that need a screen a text model cannot see.
SCREEN_TOOL_FAMILIES = frozenset({"computer", "computer_toolset", "browser_toolset"})

_PATH = {"type": "string", "description": "Absolute path to the file or directory."}
_VIEW_RANGE = {
    "type": "array",
    "items": {"type": "integer"},
    "description": "For `view` of a file: [start_line, end_line], 1-indexed; -1 as end_line"
    " reads to the end.",
}


def _editor_schema(commands: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": commands, "description": "What to do."},
            "path": _PATH,
            "file_text": {"type": "string", "description": "For `create`: the file's content."},
            "old_str": {
                "type": "string",
                "description": "For `str_replace`: the exact text to replace; it must occur"
                " once in the file.",
            },
            "new_str": {
                "type": "string",
                "description": "For `str_replace`: the replacement. For `insert`: the text to"
                " insert.",
            },
            "insert_line": {
                "type": "integer",
                "description": "For `insert`: the line after which the text goes (0: the top).",
            },
            "view_range": _VIEW_RANGE,
        },
        "required": ["command", "path"],
    }


EDITOR = (
    "View, create and edit text files: `view` shows a file with line numbers (or lists a"
    " directory), `create` writes a new file, `str_replace` replaces one exact occurrence of a"
    " text, `insert` adds text after a line."
)
# The Anthropic-defined client tools by family (and, where versions differ, by type): their
# documented inputs as a JSON schema, and what the model is told they do.
CLIENT_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "bash": (
        "Run a command in a persistent bash shell and see its output.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to run."},
                "restart": {
                    "type": "boolean",
                    "description": "Restart the shell instead of running a command.",
                },
            },
        },
    ),
    "text_editor_20250124": (
        EDITOR + " `undo_edit` reverts the last edit of a file.",
        _editor_schema(["view", "create", "str_replace", "insert", "undo_edit"]),
    ),
    "text_editor": (EDITOR, _editor_schema(["view", "create", "str_replace", "insert"])),
    "memory": (
        "Keep notes across conversations in files under /memories: view, create, str_replace,"
        " insert, delete, rename.",
        {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
                },
                "path": {"type": "string", "description": "A path under /memories."},
                "file_text": {"type": "string"},
                "old_str": {"type": "string"},
                "new_str": {"type": "string"},
                "insert_line": {"type": "integer"},
                "insert_text": {"type": "string"},
                "view_range": _VIEW_RANGE,
                "old_path": {"type": "string"},
                "new_path": {"type": "string"},
            },
            "required": ["command"],
        },
    ),
}


@dataclass(frozen=True, slots=True)
class MessagesTools:
    """A request's tools as chat declares them, and the families of the server tools left
    out (one per tool)."""

    chat_tools: list[dict[str, Any]] = field(default_factory=list)
    dropped: tuple[str, ...] = ()


def messages_tools(value: Any, hosted: HostedTools, *, loaded: Collection[str]) -> MessagesTools:
    """`tools` of a Messages request, checked; `loaded`: the names earlier tool results'
    `tool_reference` blocks loaded. Anything it cannot serve is a 400 naming it."""
    if value is None:
        return MessagesTools()
    if not isinstance(value, list):
        raise invalid("'tools' must be an array", "tools")
    chat_tools: list[dict[str, Any]] = []
    dropped = []
    names: set[str] = set()
    for index, tool in enumerate(value):
        param = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise invalid("each tool must be an object", param)
        kind = tool.get("type")
        dated = DATED_TYPE.fullmatch(kind) if isinstance(kind, str) else None
        family = dated["family"] if dated else None
        if family in SERVER_TOOL_FAMILIES:
            check_hosted_tool(str(kind), param, hosted, runs_on="Anthropic's servers")
            dropped.append(str(family))
            continue
        declaration = _declaration(tool, kind, family, param)
        if tool.get("defer_loading") is True and declaration["name"] not in loaded:
            continue  # not loaded yet: Anthropic does not show it to the model either
        if declaration["name"] in names:
            raise invalid(f"two tools are named {declaration['name']!r}", param)
        names.add(declaration["name"])
        chat_tools.append({"type": "function", "function": declaration})
    return MessagesTools(chat_tools, tuple(dropped))


def _declaration(tool: dict[str, Any], kind: Any, family: str | None, param: str) -> dict[str, Any]:
    """A client tool as a chat function: a custom tool as declared, an Anthropic-defined one
    with its documented schema."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise invalid("a tool needs a name", f"{param}.name")
    if kind in (None, CUSTOM) or (family not in CLIENT_TOOLS and "input_schema" in tool):
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise invalid("a tool's input_schema must be a JSON schema object", param)
        declaration: dict[str, Any] = {"name": name, "parameters": schema}
        if isinstance(tool.get("description"), str):
            declaration["description"] = tool["description"]
        if tool.get("strict") is True:  # Anthropic's strict tool use: the schema exactly
            declaration["strict"] = True
        return declaration
    known = CLIENT_TOOLS.get(str(kind)) or CLIENT_TOOLS.get(str(family))
    if known is None:
        why = (
            "it needs a screen" if family in SCREEN_TOOL_FAMILIES else "the proxy does not know it"
        )
        raise invalid(
            f"tools of type {kind!r} are not supported ({why}): the proxy offers custom tools,"
            " the bash, text editor and memory tools, and leaves out server tools",
            param,
            "unsupported",
        )
    description, schema = known
    return {"name": name, "description": description, "parameters": schema}


def chat_tool_choice(choice: Any) -> tuple[Any, bool]:
    """`tool_choice` as chat's, and whether parallel calls are allowed
    (`disable_parallel_tool_use`)."""
    if choice is None:
        return None, True
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise invalid(
            '\'tool_choice\' must be {"type": "auto", "any", "tool" or "none"}',
            "tool_choice",
        )
    parallel = choice.get("disable_parallel_tool_use") is not True
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str):
            raise invalid("a tool_choice of type 'tool' needs the tool's name", "tool_choice")
        return {"type": "function", "function": {"name": name}}, parallel
    return {"auto": None, "any": "required", "none": "none"}[kind], parallel
