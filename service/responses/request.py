"""A client's `POST /v1/responses` body turned into the chat request the rest of the proxy
serves: `instructions` and input items become messages (calls and their outputs as assistant
`tool_calls` and `tool` messages), references are resolved from the response store, tools
become chat tools (`tools.py`). Anything it cannot serve is a 400 naming the field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..exchange import ChatRequest, checked_chat_request, decoded_body, invalid
from ..settings import HostedTools
from ..wire import ProxyError, json_value
from .connection import ConnectionMemory
from .store import Found, Item, ResponseStore
from .summary import COMPACTION, checked_compaction, summary_message
from .tools import CUSTOM, FUNCTION, TOOL_SEARCH, ResponsesTools, responses_tools

# Fields copied to the chat body under the same name.
SHARED_FIELDS = (
    "model",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "parallel_tool_calls",
    "user",
)
MESSAGE_ROLES = frozenset({"user", "system", "developer", "assistant"})
# Chat templates of text-only models know "system"; "developer" is the Responses name for it.
CHAT_ROLE = {"developer": "system"}
TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal"})
# The model's own reasoning is not sent back to it (nor its encrypted_content: a text model
# has none to read).
IGNORED_ITEMS = frozenset({"reasoning"})
# Each kind of call item, and the output item that answers it.
CALL_OUTPUTS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "tool_search_call": "tool_search_output",
}
# The outputs that must answer a call made before them (a client's tool search may load
# tools of its own accord).
CHECKED_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
# The fields each call or output item must hold as strings.
STRING_FIELDS = {
    "function_call": ("call_id", "name"),
    "custom_tool_call": ("call_id", "name", "input"),
    **{kind: ("call_id",) for kind in ("tool_search_call", *CALL_OUTPUTS.values())},
}
NOT_KEPT = (
    "is not in this proxy's response store (expired or evicted, stored by another worker or "
    "replica without a shared store, or not stored for this API key)"
)
STORE_OFF_HINT = (
    "send the whole item instead of a reference: with `store: false` (in the Vercel AI SDK "
    "`providerOptions: {openai: {store: false}}`) clients send every earlier item in full"
)


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """The client's body, the whole conversation as items, and the chat request serving it."""

    body: dict[str, Any]
    inputs: tuple[Item, ...]  # earlier responses' items, then this request's, resolved
    referenced: tuple[Item, ...]  # the proxy's earlier output items it named by reference
    chat: ChatRequest
    tools: ResponsesTools  # what the model is offered, and who its calls are for

    @property
    def store(self) -> bool:
        return self.body.get("store") is not False  # stored unless the client says not to


async def parse_responses_request(
    raw: bytes,
    store: ResponseStore,
    owner: str,
    max_bytes: int,
    hosted_tools: HostedTools = HostedTools.DROP,
    *,
    needs_model: bool = True,
    memory: ConnectionMemory | None = None,
) -> ResponsesRequest:
    """Decode and check a `POST /v1/responses` body, resolving what it names from `owner`'s
    entries in `store` (and, on a WebSocket, its connection's `memory` of its latest
    response); the request with what it names must stay within `max_bytes`. The body must
    name its `model` unless `needs_model` is false (counting input tokens).

    >>> asked = await parse_responses_request(b'{"model": "m", "input": "hi"}', store, owner, 99)
    >>> asked.chat.messages
    [{'role': 'user', 'content': 'hi'}]
    """
    body = decoded_body(raw)
    if needs_model:
        _check_model(body.get("model"))
    previous = _previous_id(body.get("previous_response_id"))
    given = _input_items(body.get("input"))
    named = [item["id"] for item in given if _is_reference(item)]
    found = await _found(store, memory, owner, previous, named)
    earlier = () if previous is None else _conversation(previous, found)
    resolved = [_resolved(item, found, f"input[{index}]") for index, item in enumerate(given)]
    _check_outputs_answer_calls(earlier, resolved)
    if len(raw) + found.size > max_bytes:
        raise ProxyError(
            413,
            f"the request with the earlier items it names comes to {len(raw) + found.size} "
            f"bytes, past the request limit of {max_bytes} bytes (MAX_REQUEST_BYTES); send "
            f"fewer or shorter items, or start a new conversation",
            code="request_too_large",
        )
    inputs = (*earlier, *resolved)
    referenced = tuple(
        item for item, asked in zip(resolved, given, strict=True) if asked is not item
    )  # what the references resolved to
    tools = responses_tools(body.get("tools"), hosted_tools, loaded=loaded_tools(inputs))
    messages = _instruction_messages(body.get("instructions")) + chat_messages(inputs, tools)
    chat: dict[str, Any] = {key: body[key] for key in SHARED_FIELDS if key in body}
    if not messages:
        raise invalid("'input' (or 'instructions') must hold something to answer", "input")
    chat["messages"] = messages
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    if tools.chat_tools:
        chat["tools"] = tools.chat_tools
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _chat_tool_choice(body["tool_choice"], tools)
    if (response_format := _response_format(body.get("text"))) is not None:
        chat["response_format"] = response_format
    if body.get("stream") is True:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}  # the response reports usage
    return ResponsesRequest(body, inputs, referenced, checked_chat_request(chat), tools)


def _check_model(model: Any) -> None:
    """A 400 unless `model` names one: the API requires it (and a route is picked by it),
    with OpenAI's code for a parameter left out."""
    if model is None:
        raise invalid("missing required parameter: 'model'", "model", "missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise invalid("'model' must be a model's name", "model")


def _previous_id(previous: Any) -> str | None:
    if previous is not None and not isinstance(previous, str):
        raise invalid("'previous_response_id' must be a string", "previous_response_id")
    return previous


async def _found(
    store: ResponseStore,
    memory: ConnectionMemory | None,
    owner: str,
    previous: str | None,
    named: list[str],
) -> Found:
    """The earlier conversation and the items a request names: the connection's latest
    response from its memory, anything else from the store."""
    remembered = None
    if memory is not None and previous is not None:
        remembered = memory.conversation(owner, previous)
    asked = None if remembered is not None else previous
    found = await store.lookup(owner, asked, named) if asked or named else Found()
    return found if remembered is None else Found(remembered, found.items)


def _check_outputs_answer_calls(earlier: Sequence[Item], given: Sequence[Item]) -> None:
    """A 400 for a call's output that answers no call before it in the conversation: the
    model would read a result of nothing it did (OpenAI refuses it alike)."""
    called: set[Any] = {item.get("call_id") for item in earlier if item.get("type") in CALL_OUTPUTS}
    for index, item in enumerate(given):
        kind = item.get("type")
        if kind in CALL_OUTPUTS:
            called.add(item["call_id"])
        elif kind in CHECKED_OUTPUTS and item["call_id"] not in called:
            raise invalid(
                f"no tool call found for the {kind} with call_id {item['call_id']!r}: send the "
                "call before its output, or name the response that made it "
                "(`previous_response_id`)",
                f"input[{index}]",
            )


def _conversation(previous: str, found: Found) -> tuple[Item, ...]:
    if found.conversation is None:
        raise ProxyError(
            400,
            f"response {previous!r} {NOT_KEPT}; {STORE_OFF_HINT}",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return tuple(json_value(found.conversation))


def _input_items(value: Any) -> list[Item]:
    """The input as checked items; references stay as they came, for `_resolved`."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise invalid("'input' must be a string or an array of items", "input")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise invalid("each input item must be an object", f"input[{index}]")
        if item.get("type") != "item_reference":
            _check_item(item, f"input[{index}]")
    return value


def _is_reference(item: Item) -> bool:
    return item.get("type") == "item_reference" and isinstance(item.get("id"), str)


def _resolved(item: Item, found: Found, param: str) -> Item:
    """An input item, or for a reference the stored item it names."""
    if item.get("type") != "item_reference":
        return item
    stored = found.items.get(item["id"]) if _is_reference(item) else None
    if stored is None:
        raise ProxyError(
            400,
            f"item {item.get('id')!r} {NOT_KEPT}; {STORE_OFF_HINT}",
            param=param,
            code="item_not_found",
        )
    resolved: Item = json_value(stored)
    return resolved


def _check_item(item: Item, param: str) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        if item.get("role") not in MESSAGE_ROLES:
            raise invalid(f"role must be one of {', '.join(sorted(MESSAGE_ROLES))}", param)
        for index, part in enumerate(_parts(item.get("content"), f"{param}.content")):
            _chat_part(part, f"{param}.content[{index}]")
    elif kind in STRING_FIELDS:
        if any(not isinstance(item.get(key), str) for key in STRING_FIELDS[kind]):
            raise invalid(f"a {kind} needs a string {' and '.join(STRING_FIELDS[kind])}", param)
        if not isinstance(item.get("namespace"), str | None):
            raise invalid(f"a {kind}'s namespace must be a string", param)
        if kind == "tool_search_output":
            if not isinstance(item.get("tools"), list):
                raise invalid("a tool_search_output needs an array of tools", param)
        elif kind in CALL_OUTPUTS.values() and not isinstance(output := item.get("output"), str):
            for index, part in enumerate(_parts(output, param)):
                _chat_part(part, f"{param}.output[{index}]")
    elif kind == COMPACTION:
        checked_compaction(item, param)
    elif kind not in IGNORED_ITEMS:
        raise invalid(f"input items of type {kind!r} are not supported", param, "unsupported")


def _parts(content: Any, param: str) -> list[Any]:
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        raise invalid("content must be a string or an array of parts", param)
    return content


def _instruction_messages(instructions: Any) -> list[dict[str, Any]]:
    if instructions is None or instructions == "":
        return []
    if not isinstance(instructions, str):
        raise invalid("'instructions' must be a string", "instructions")
    return [{"role": "system", "content": instructions}]


def chat_messages(items: Sequence[Item], tools: ResponsesTools) -> list[dict[str, Any]]:
    """Checked items as chat messages; a run of calls joins the assistant message before it.
    Calls name their tools as the model sees them (a namespace's tool may be renamed)."""
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(_message(item))
        elif kind in CALL_OUTPUTS:
            call = _chat_call(item, tools)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in CALL_OUTPUTS.values():
            content = _output_content(item, tools)
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": content})
        elif kind == COMPACTION:
            messages.append(summary_message(item))
    return messages


def loaded_tools(items: Sequence[Item]) -> list[Any]:
    """The tools the client's tool searches loaded: callable from then on, as on OpenAI."""
    return [
        tool
        for item in items
        if item.get("type") == "tool_search_output"
        for tool in item.get("tools") or ()
    ]


def _output_content(item: Item, tools: ResponsesTools) -> Any:
    """A call's result as a tool message's content; a tool search's, the tools it loaded
    (declared with the others, under the names the model sees)."""
    if item["type"] == "tool_search_output":
        loaded = responses_tools(item["tools"], HostedTools.DROP).called.values()
        names = [tools.model_name(tool.name, tool.namespace) for tool in loaded]
        return f"Tools loaded: {', '.join(names) or 'none'}."
    output = item.get("output")
    return output if isinstance(output, str) else _chat_content(output)


def _chat_call(item: Item, tools: ResponsesTools) -> dict[str, Any]:
    """A call item as an assistant message's tool call (a tool search is a function's)."""
    if item["type"] == "tool_search_call":
        function = {"name": tools.model_name(TOOL_SEARCH), "arguments": item.get("arguments")}
        return {"id": item["call_id"], "type": FUNCTION, FUNCTION: function}
    name = tools.model_name(item["name"], item.get("namespace"))
    if item["type"] == "custom_tool_call":
        return {
            "id": item["call_id"],
            "type": CUSTOM,
            CUSTOM: {"name": name, "input": item["input"]},
        }
    function = {"name": name, "arguments": item.get("arguments") or "{}"}
    return {"id": item["call_id"], "type": FUNCTION, FUNCTION: function}


def _message(item: Item) -> dict[str, Any]:
    role = item["role"]
    content = item.get("content")
    if isinstance(content, list):
        content = _chat_content(content)
        if role == "assistant":  # chat templates expect an assistant's text as one string
            content = "".join(part.get("text", "") for part in content)
    return {"role": CHAT_ROLE.get(role, role), "content": content}


def _chat_content(parts: Any) -> list[dict[str, Any]]:
    return [_chat_part(part, "input") for part in parts or ()]


def _chat_part(part: Any, param: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in TEXT_PARTS:
        return {"type": "text", "text": str(part.get("text") or part.get("refusal") or "")}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image = {"url": part["image_url"]}
        if isinstance(part.get("detail"), str):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    raise invalid(
        f"content parts of type {kind!r} are not supported (text, and images by URL, are)",
        param,
        "unsupported",
    )


def _response_format(text: Any) -> dict[str, Any] | None:
    """`text.format` as chat's `response_format`: the schema moves under `json_schema`."""
    fmt = text.get("format") if isinstance(text, dict) else None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema" and isinstance(fmt, dict):
        schema = {
            key: fmt[key] for key in ("name", "description", "schema", "strict") if key in fmt
        }
        return {"type": "json_schema", "json_schema": schema}
    raise invalid("'text.format' must be text, json_object or json_schema", "text.format")


def _chat_tool_choice(choice: Any, tools: ResponsesTools) -> Any:
    if isinstance(choice, str):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in (FUNCTION, CUSTOM) and isinstance(choice.get("name"), str):
        return {"type": kind, kind: {"name": tools.model_name(choice["name"])}}
    raise invalid(
        "'tool_choice' must be auto, none, required or"
        ' {"type": "function" or "custom", "name": ...}',
        "tool_choice",
    )
