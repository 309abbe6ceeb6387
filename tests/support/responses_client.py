"""Calling the proxy's `/v1/responses` with the official SDK, streamed or not, and checking
the Responses event sequence that clients assemble their answer from."""

from __future__ import annotations

import json
from typing import Any

from servers import MODEL, PATCH_GRAMMAR, PATCH_TOOL, TIME_TOOL, WEATHER_TOOL, Proxy


def flat_function(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat tool as the Responses API declares it: the function's fields at the top."""
    return {"type": "function", **tool["function"], "strict": False}


WEATHER_FUNCTION = flat_function(WEATHER_TOOL)
TIME_FUNCTION = flat_function(TIME_TOOL)
# The free-form apply_patch as the Responses API declares it: the grammar's fields in `format`.
PATCH_CUSTOM = {
    "type": "custom",
    "name": "apply_patch",
    "description": PATCH_TOOL["custom"]["description"],  # type: ignore[index]
    "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR},
}
ENDINGS = {"response.completed", "response.incomplete", "response.failed"}


def respond(proxy: Proxy, stream: bool, **params: Any) -> dict[str, Any]:
    """The finished response as a plain dict: from `responses.create`, or rebuilt from the
    streamed events (which are checked on the way) and compared with the final event's."""
    params.setdefault("model", MODEL)
    if not stream:
        return proxy.client.responses.create(**params).model_dump()
    with proxy.client.responses.create(stream=True, **params) as events:
        return response_from_events([event.model_dump() for event in events])


def response_from_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The final response of a Responses event stream, asserting the rules clients rely on:
    dense sequence numbers, created and in_progress first, each item added before its deltas
    and done after them, deltas adding up to the done values, one ending event last."""
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"], kinds
    assert kinds[-1] in ENDINGS and not ENDINGS & set(kinds[:-1]), kinds
    items: dict[int, dict[str, Any]] = {}
    # Each item's deltas, joined when the done events are checked: adding each to the text so
    # far would copy it at every delta (a 50 MB call streams in about 800 of them).
    deltas: dict[int, list[str]] = {}
    done: set[int] = set()
    for event in events[2:-1]:
        kind, index = event["type"], event.get("output_index")
        if kind == "response.output_item.added":
            assert index == len(items) and index not in done
            items[index], deltas[index] = event["item"], []
        elif kind.endswith(".delta"):
            assert index in items and index not in done, kind
            assert event.get("item_id") == items[index]["id"]
            deltas[index].append(event["delta"])
        elif kind in {"response.output_text.done", "response.reasoning_text.done"}:
            assert event["text"] == "".join(deltas[index])
        elif kind == "response.function_call_arguments.done":
            assert event["arguments"] == "".join(deltas[index])
        elif kind == "response.custom_tool_call_input.done":
            assert event["input"] == "".join(deltas[index])
        elif kind == "response.output_item.done":
            done.add(index)
            assert event["item"]["id"] == items[index]["id"]
            items[index] = event["item"]
        elif kind == "error":
            assert kinds[-1] == "response.failed"
    final: dict[str, Any] = events[-1]["response"]
    if final["status"] != "failed":  # a failed response holds its items as they were
        assert done == set(items), "every item is done before the response ends"
        assert final["output"] == [items[index] for index in sorted(items)]
    return final


def calls(response: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each function_call item's name and parsed arguments, in order."""
    return [
        (item["name"], json.loads(item["arguments"]))
        for item in response["output"]
        if item["type"] == "function_call"
    ]


def custom_calls(response: dict[str, Any]) -> list[tuple[str, str]]:
    """Each custom_tool_call item's name and input, in order."""
    return [
        (item["name"], item["input"])
        for item in response["output"]
        if item["type"] == "custom_tool_call"
    ]


def text(response: dict[str, Any]) -> str:
    return "".join(
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


# Every field the Responses API reference requires of a Response object, and what it may hold.
RESPONSE_FIELDS = {
    "id": lambda value: isinstance(value, str),
    "object": lambda value: value == "response",
    "created_at": _whole,
    "completed_at": lambda value: value is None or _whole(value),
    "status": lambda value: value in {"in_progress", "completed", "incomplete", "failed"},
    "incomplete_details": lambda value: value is None or isinstance(value.get("reason"), str),
    "model": lambda value: isinstance(value, str),
    "previous_response_id": _string_or_null,
    "instructions": _string_or_null,
    "output": lambda value: isinstance(value, list),
    "error": lambda value: (
        value is None
        or (isinstance(value.get("code"), str) and isinstance(value.get("message"), str))
    ),
    "tools": lambda value: isinstance(value, list),
    "tool_choice": lambda value: value in {"auto", "none", "required"} or isinstance(value, dict),
    "truncation": lambda value: value in {"auto", "disabled"},
    "parallel_tool_calls": lambda value: isinstance(value, bool),
    "text": lambda value: isinstance(value, dict) and isinstance(value.get("format"), dict),
    "top_p": _number,
    "presence_penalty": _number,
    "frequency_penalty": _number,
    "top_logprobs": _whole,
    "temperature": _number,
    "reasoning": lambda value: value is None or {"effort", "summary"} <= set(value),
    "usage": lambda value: (
        value is None
        or all(_whole(value[key]) for key in ("input_tokens", "output_tokens", "total_tokens"))
    ),
    "max_output_tokens": lambda value: value is None or _whole(value),
    "max_tool_calls": lambda value: value is None or _whole(value),
    "store": lambda value: isinstance(value, bool),
    "background": lambda value: isinstance(value, bool),
    "service_tier": lambda value: isinstance(value, str),
    "metadata": lambda value: isinstance(value, dict),
    "safety_identifier": _string_or_null,
    "prompt_cache_key": _string_or_null,
}
# What a function tool echoed in `tools` must hold.
FUNCTION_TOOL_FIELDS = {
    "name": lambda value: isinstance(value, str),
    "description": _string_or_null,
    "parameters": lambda value: value is None or isinstance(value, dict),
    "strict": lambda value: value is None or isinstance(value, bool),
}


def assert_response_object(response: dict[str, Any]) -> None:
    """`response` holds every field of a Response object, each of its type; its function
    tools every field of theirs; its `output_text` parts their annotations and logprobs."""
    wrong = {key for key, valid in RESPONSE_FIELDS.items() if not _holds(response, key, valid)}
    assert not wrong, {key: response.get(key, "<missing>") for key in wrong}
    for tool in response["tools"]:
        if tool["type"] == "function":
            assert all(_holds(tool, key, valid) for key, valid in FUNCTION_TOOL_FIELDS.items())
    for item in response["output"]:
        if item["type"] == "message":
            assert item["status"] in {"in_progress", "completed", "incomplete"}
            for part in item["content"]:
                assert part["annotations"] == [] and part["logprobs"] == [], part


def _holds(fields: dict[str, Any], key: str, valid: Any) -> bool:
    return key in fields and bool(valid(fields[key]))
