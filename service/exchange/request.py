"""A client's chat-completions request, decoded and checked: anything malformed becomes a 400
in OpenAI's error shape naming the offending `param`, never a 500."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from protocols import ToolSpec, free_form_tool, nested_deeper_than

from ..wire import ProxyError

VALID_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# Each names the key its declaration is under: function tools, and free-form custom tools.
TOOL_TYPES = frozenset({"function", "custom"})
TEXT_PART_TYPES = frozenset({"text", "input_text", "refusal"})
PART_SEPARATOR = "\n"  # between a content's text parts, as chat templates join them
# How deep a request body may nest. Tool schemas and message contents nest a few dozen
# levels at most; rendering tools and history walks the body recursively, a few frames a
# level, so a body nested ~960 deep, which the decoder takes, raised RecursionError (a 500)
# on every door. Well below Python's recursion limit of 1,000.
MAX_REQUEST_NESTING = 128


class ChoiceMode(StrEnum):
    AUTO = "auto"  # the model may call tools: render them, parse the output
    NONE = "none"  # no tools offered, nothing parsed (history is still rendered)
    REQUIRED = "required"  # exactly one call, through the tool-choice path
    NAMED = "named"  # exactly one call of the named tool


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """The decoded body plus the tool facts the proxy acts on."""

    body: dict[str, Any]
    tools: tuple[ToolSpec, ...]
    choice: ChoiceMode
    named_tool: str | None
    single_call: bool  # `parallel_tool_calls: false`, or the route's for a client silent on it
    n: int  # the choices asked for: an upstream answer may hold no others
    strict_tools: frozenset[str] = frozenset()  # declared `strict`: held to all their schema
    parallel_stated: bool = False  # the client said whether it takes parallel calls

    def under_route(self, single_call: bool) -> ChatRequest:
        """This request on a route whose `single_call` holds for clients that say nothing
        of parallel calls (Pi and Continue send no `parallel_tool_calls`)."""
        if not single_call or self.parallel_stated or self.single_call:
            return self
        return replace(self, single_call=True)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body["messages"]
        return messages

    @property
    def tool_results(self) -> list[str]:
        """The text of every tool result in the history, as the model reads it."""
        return [
            text
            for message in self.messages
            if message.get("role") == "tool"
            for text in _texts(message.get("content"))
        ]

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def include_usage(self) -> bool:
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True


def assistant_message(texts: list[str], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant message of a front door's history: its text joined (null for none), and
    its calls, if it made any, as chat tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _texts(content: Any) -> list[str]:
    """A message content's text: a string, or the text of its parts."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
    return []


def invalid(message: str, param: str | None, code: str = "invalid_value") -> ProxyError:
    return ProxyError(400, message, param=param, code=code)


def parse_chat_request(raw: bytes) -> ChatRequest:
    """Decode and check a `POST /v1/chat/completions` body.

    >>> parse_chat_request(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')
    """
    return checked_chat_request(decoded_body(raw))


def decoded_body(raw: bytes) -> dict[str, Any]:
    """A request body that must be a JSON object."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise invalid("request body is not valid JSON", None, "invalid_json") from None
    except RecursionError:  # json's C decoder recurses per level: `[` x 200,000 gets here
        raise invalid("request body nests too deeply", None, "invalid_json") from None
    # Fewer brackets than the limit cannot nest past it: most bodies are not walked at all.
    if raw.count(b"{") + raw.count(b"[") > MAX_REQUEST_NESTING and nested_deeper_than(
        body, MAX_REQUEST_NESTING
    ):
        message = f"request body nests deeper than {MAX_REQUEST_NESTING} levels"
        raise invalid(message, None, "invalid_json")
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object", None)
    return body


def checked_chat_request(body: dict[str, Any]) -> ChatRequest:
    """A decoded chat body checked; the Responses endpoint builds its chat body and comes here."""
    _check_messages(body.get("messages"))
    declared = _declared_tools(body)
    tools = tuple(_tool_spec(tool) for tool in declared)
    choice, named = _tool_choice(body, {tool.name for tool in tools})
    parallel = body.get("parallel_tool_calls")
    stated = parallel is not None
    if parallel is None:  # absent or null: OpenAI's default
        parallel = True
    if not isinstance(parallel, bool):
        raise invalid("'parallel_tool_calls' must be a boolean", "parallel_tool_calls")
    return ChatRequest(
        body,
        tools,
        choice,
        named,
        single_call=not parallel,
        n=_choice_count(body),
        strict_tools=_strict_names(declared),
        parallel_stated=stated,
    )


def _choice_count(body: dict[str, Any]) -> int:
    """`n`, absent or null meaning OpenAI's default of one."""
    n = body.get("n")
    if n is None:
        return 1
    if type(n) is not int or n < 1:
        raise invalid("'n' must be a positive integer", "n")
    return n


def _check_messages(messages: object) -> None:
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty array", "messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise invalid("each message must be an object", f"messages[{index}]")
        if message.get("role") not in VALID_ROLES:
            raise invalid(
                f"role must be one of {', '.join(sorted(VALID_ROLES))}",
                f"messages[{index}].role",
            )
        if not isinstance(message.get("content"), str | list | None):
            raise invalid(
                "content must be a string, an array of parts or null",
                f"messages[{index}].content",
            )
        if not isinstance(message.get("tool_calls"), list | None):
            raise invalid("tool_calls must be an array", f"messages[{index}].tool_calls")


def _declared_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """`tools`, or legacy `functions` seen as tools, each checked to name a function."""
    tools = body.get("tools")
    param = "tools"
    if tools is None and body.get("functions") is not None:
        functions = body["functions"]
        param = "functions"
        if isinstance(functions, list):
            tools = [{"type": "function", "function": function} for function in functions]
        else:
            tools = functions
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise invalid(f"'{param}' must be an array", param)
    for index, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        declared = tool.get(kind) if isinstance(tool, dict) and kind in TOOL_TYPES else None
        if (
            not isinstance(declared, dict)
            or not isinstance(declared.get("name"), str)
            or not declared["name"]
            or not isinstance(declared.get("parameters", {}), dict | None)
            or not isinstance(declared.get("format", {}), dict)
        ):
            raise invalid(
                'each tool must be {"type": "function", "function": {"name": ...}} or'
                ' {"type": "custom", "custom": {"name": ...}}',
                f"{param}[{index}]",
            )
    return tools


def _strict_names(tools: list[dict[str, Any]]) -> frozenset[str]:
    """The checked tools declared `strict` (OpenAI's structured outputs: calls that follow
    the schema exactly)."""
    declarations = (tool[tool["type"]] for tool in tools)
    return frozenset(found["name"] for found in declarations if found.get("strict") is True)


def _tool_spec(tool: dict[str, Any]) -> ToolSpec:
    """A checked tool as the protocols declare it; a custom tool takes free-form text."""
    if tool["type"] != "custom":
        return ToolSpec.from_openai(tool)
    custom = tool["custom"]
    grammar = (custom.get("format") or {}).get("grammar")
    grammar = grammar if isinstance(grammar, dict) else {}
    return free_form_tool(
        custom["name"],
        str(custom.get("description") or ""),
        syntax=str(grammar.get("syntax") or ""),
        grammar=str(grammar.get("definition") or ""),
    )


def _tool_choice(body: dict[str, Any], declared: set[str]) -> tuple[ChoiceMode, str | None]:
    param = "tool_choice" if "tool_choice" in body else "function_call"
    choice = body.get(param)
    if choice is None or choice == "auto":
        return ChoiceMode.AUTO, None
    if choice == "none":
        return ChoiceMode.NONE, None
    if not declared:
        raise invalid(f"'{param}' needs declared tools", param)
    if choice == "required":
        return ChoiceMode.REQUIRED, None
    # {"type": "function", "function": {"name": ...}}, {"type": "custom", "custom": {...}},
    # or legacy function_call {"name": ...}
    function = (
        choice.get("custom", choice.get("function", choice)) if isinstance(choice, dict) else None
    )
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise invalid(f"'{param}' must be auto, none, required or name a function", param)
    if name not in declared:
        raise invalid(f"'{param}' names undeclared tool {name!r}", param)
    return ChoiceMode.NAMED, name


def content_text(content: Any) -> str:
    """A message content's text: a string as is, text parts joined, null as ""."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return PART_SEPARATOR.join(
        str(part.get("text") or part.get("refusal") or "")
        for part in content
        if isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES
    )
