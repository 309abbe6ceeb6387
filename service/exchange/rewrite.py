"""A client's chat request turned into the tools-free request the upstream can take: tools
written into the system prompt, earlier calls and results written into the history as text."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from protocols import (
    FREE_FORM_INPUT,
    Protocol,
    RelaxedParseBudget,
    ToolSpec,
    forced_call_schema,
    parse_relaxed_json,
    render_forced_call_prompt,
)

from ..wire import json_bytes
from .request import PART_SEPARATOR, TEXT_PART_TYPES, ChatRequest, ChoiceMode, content_text

# Request fields that describe tools: the upstream cannot take them, the proxy answers them.
TOOL_FIELDS = frozenset(
    {"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"}
)
SYSTEM_ROLES = frozenset({"system", "developer"})
TOOL_RESULT_ROLES = frozenset({"tool", "function"})
FORCED_CHOICES = frozenset({ChoiceMode.REQUIRED, ChoiceMode.NAMED})
# A result whose call is not in the history (a client that trimmed it) still needs a name.
UNKNOWN_TOOL_NAME = "unknown"
SECTION_SEPARATOR = "\n\n"  # between the client's system text and the tool instructions
# Tool prompts kept, the most recently used: a few agents' tool sets, some 15 KB of text each.
RENDERED_TOOLS_KEPT = 32


def needs_rewrite(request: ChatRequest) -> bool:
    """False for a request with no tools and no tool history: it goes upstream as it came."""
    return not TOOL_FIELDS.isdisjoint(request.body) or any(
        _is_tool_history(message) for message in request.messages
    )


def rewrite_request(
    request: ChatRequest,
    protocol: Protocol,
    upstream_model: str | None,
    *,
    structured_output: bool = False,
) -> dict[str, Any]:
    """The upstream body: tool fields removed, every other field passed through untouched,
    but for a forced call to an upstream that takes a JSON schema (`structured_output`):
    its `response_format` is the schema of the call.

    >>> rewrite_request(request, get_protocol("json-mix"), "qwen2.5-7b")["messages"][0]
    {'role': 'system', 'content': 'You are terse.\\n\\n# Tools...'}
    """
    body = {key: value for key, value in request.body.items() if key not in TOOL_FIELDS}
    messages = render_history(request.messages, protocol)
    instructions = tool_instructions(request, protocol)
    if instructions:
        messages = _with_system_text(messages, instructions)
    body["messages"] = messages
    if upstream_model is not None:
        body["model"] = upstream_model
    if request.choice in FORCED_CHOICES:
        # The single {name, arguments} object is parsed whole, so it is asked for whole.
        body["stream"] = False
        body.pop("stream_options", None)
        if structured_output:
            body["response_format"] = forced_call_schema(offered_tools(request))
    return body


def tool_instructions(request: ChatRequest, protocol: Protocol) -> str | None:
    """The system-prompt text offering the tools, or None when none are offered."""
    if not request.tools or request.choice is ChoiceMode.NONE:
        return None
    if request.choice is ChoiceMode.AUTO:
        return _rendered_tools(protocol, request.tools, single_call=request.single_call)
    return render_forced_call_prompt(offered_tools(request), named=request.named_tool)


_rendered: OrderedDict[tuple[Protocol, bytes], str] = OrderedDict()


def _rendered_tools(protocol: Protocol, tools: Sequence[ToolSpec], *, single_call: bool) -> str:
    """`protocol.render_tools`, kept by what it is rendered from: the protocol itself (an
    instance may carry its own tags), the one-call rule and every field of every tool. An
    agent sends the same tools with every request, and rendering twenty tools' schemas took
    0.15 to 0.3 ms of each request's CPU; their key, a tenth of that."""
    key = (
        protocol,
        json_bytes(
            [
                single_call,
                [[tool.name, tool.description, tool.parameters, tool.free_form] for tool in tools],
            ]
        ),
    )
    text = _rendered.get(key)
    if text is None:
        text = _rendered[key] = protocol.render_tools(tools, single_call=single_call)
        if len(_rendered) > RENDERED_TOOLS_KEPT:
            _rendered.popitem(last=False)
    else:
        _rendered.move_to_end(key)
    return text


def offered_tools(request: ChatRequest) -> list[ToolSpec]:
    """The tools a forced choice may pick from: only the named one when one is named."""
    return [tool for tool in request.tools if request.named_tool in (None, tool.name)]


def render_history(messages: Sequence[dict[str, Any]], protocol: Protocol) -> list[dict[str, Any]]:
    """Messages with assistant tool calls as assistant text and each run of consecutive tool
    results as one user message, both written in `protocol`; others untouched. An assistant
    message after one that made calls is the same turn (`continues_turn`): its text follows
    their calls in one message, as the model wrote them."""
    # Reading the calls' arguments is charged to one budget per request, as a response's
    # parsing is: 1 MB of JSON5 arguments took seconds, again on every continuation.
    budget = RelaxedParseBudget()
    rendered: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for message in messages:
        if message["role"] in TOOL_RESULT_ROLES:
            results.append(message)
            previous = message
            continue
        if results:
            rendered.append(_results_message(results, call_names, protocol))
            results = []
        said = message
        if _is_tool_history(message):
            said = _assistant_message(message, call_names, protocol, budget)
        if continues_turn(previous, message) and isinstance(rendered[-1]["content"], str):
            more = [rendered[-1]["content"], content_text(said.get("content"))]
            rendered[-1] = {**rendered[-1], "content": PART_SEPARATOR.join(filter(None, more))}
        else:
            rendered.append(said)
        previous = message
    if results:
        rendered.append(_results_message(results, call_names, protocol))
    return rendered


def continues_turn(previous: dict[str, Any] | None, message: dict[str, Any]) -> bool:
    """Whether `message` is the rest of the assistant turn `previous` began: an assistant
    message right after one that made calls, what the model wrote after them. A front door
    whose turns interleave text and calls (Messages, Responses, Gemini) splits a turn there,
    so that its order is kept (it was joined, and text written after a call went back to
    the model before it)."""
    return (
        previous is not None
        and message["role"] == "assistant"
        and previous["role"] == "assistant"
        and bool(previous.get("tool_calls"))
    )


def joined_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with each turn split after its calls (`continues_turn`) joined again
    for an upstream that calls tools itself: chat's shape has one message a turn, its text
    then its calls (an assistant message with calls must be followed by their results)."""
    if not any(continues_turn(a, b) for a, b in itertools.pairwise(messages)):
        return messages
    joined: list[dict[str, Any]] = []
    for message in messages:
        if joined and continues_turn(joined[-1], message):
            turn = joined[-1]
            text = content_text(turn.get("content")) + content_text(message.get("content"))
            calls = [*turn["tool_calls"], *(message.get("tool_calls") or ())]
            joined[-1] = {**turn, "content": text or None, "tool_calls": calls}
        else:
            joined.append(message)
    return joined


def _is_tool_history(message: dict[str, Any]) -> bool:
    if message["role"] in TOOL_RESULT_ROLES:
        return True
    return message["role"] == "assistant" and bool(
        message.get("tool_calls") or message.get("function_call")
    )


def _assistant_message(
    message: dict[str, Any],
    call_names: dict[str, str],
    protocol: Protocol,
    budget: RelaxedParseBudget,
) -> dict[str, Any]:
    """The assistant's own text followed by each of its calls as the model would write it."""
    calls = message.get("tool_calls") or []
    if message.get("function_call"):
        calls = [*calls, {"function": message["function_call"]}]  # legacy single call
    sections = [content_text(message.get("content"))]
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        custom = call.get("custom") if isinstance(call, dict) else None
        if isinstance(custom, dict):  # a free-form call: its text is the one argument
            function = {
                "name": custom.get("name"),
                "arguments": {FREE_FORM_INPUT: custom.get("input")},
            }
        if not isinstance(function, dict):
            continue  # nothing to render; the model never saw a call here
        name = str(function.get("name") or UNKNOWN_TOOL_NAME)
        if isinstance(call.get("id"), str):
            call_names[call["id"]] = name
        arguments = _call_arguments(function.get("arguments"), budget)
        sections.append(protocol.render_call(name, arguments))
    rewritten = {
        key: value for key, value in message.items() if key not in {"tool_calls", "function_call"}
    }
    rewritten["content"] = PART_SEPARATOR.join(section for section in sections if section)
    return rewritten


def _call_arguments(arguments: Any, budget: RelaxedParseBudget) -> Any:
    """A call's arguments as an object; clients send (and re-serialise) a JSON string."""
    if not isinstance(arguments, str):
        return {} if arguments is None else arguments
    try:
        return parse_relaxed_json(arguments, budget=budget)
    except ValueError:  # not JSON, or past the budget
        return arguments  # rendered as written: the model sees what it once produced


def _results_message(
    results: Sequence[dict[str, Any]], call_names: dict[str, str], protocol: Protocol
) -> dict[str, Any]:
    """Consecutive tool results as one user message; their images kept as parts."""
    texts: list[str] = []
    media: list[Any] = []
    for result in results:
        call_id = result.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) else ""
        name = call_names.get(call_id) or result.get("name") or UNKNOWN_TOOL_NAME
        content = result.get("content")  # clients may leave out an empty result's content
        texts.append(protocol.render_result(str(name), call_id, content_text(content)))
        media.extend(_media_parts(content))
    text = PART_SEPARATOR.join(texts)
    if not media:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text}, *media]}


def _with_system_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """`text` appended to the first system (or developer) message, or a new one first."""
    for index, message in enumerate(messages):
        if message["role"] in SYSTEM_ROLES:
            own = content_text(message.get("content"))
            content = f"{own}{SECTION_SEPARATOR}{text}" if own else text
            return [*messages[:index], {**message, "content": content}, *messages[index + 1 :]]
    return [{"role": "system", "content": text}, *messages]


def _media_parts(content: Any) -> list[Any]:
    if not isinstance(content, list):
        return []
    return [
        part
        for part in content
        if not (isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES)
    ]
