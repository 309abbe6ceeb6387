"""Calling the proxy's `/v1/messages` with the official Anthropic SDK, streamed or not, and
checking the Messages event sequence that clients assemble their answer from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx2
from servers import CLIENT_TLS, MODEL, TIME_TOOL, WEATHER_TOOL, Proxy
from waits import HUNG_AFTER_SECONDS

# Bounds, not synchronisation: a broken proxy fails its test instead of hanging it.
MAX_TOKENS = 1024
BLOCK_EVENTS = {"content_block_start", "content_block_delta", "content_block_stop"}
# The SDK's own events, derived from the raw ones as it accumulates them.
DERIVED_EVENTS = {"text", "input_json", "thinking", "signature", "citation", "compaction"}


def anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat tool as the Messages API declares it."""
    function = tool["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "input_schema": function["parameters"],
    }


WEATHER = anthropic_tool(WEATHER_TOOL)
TIME = anthropic_tool(TIME_TOOL)
QUESTION = {"role": "user", "content": "What is the weather in Paris?"}


@contextmanager
def anthropic_client(
    proxy: Proxy, api_key: str = "test", *, bearer: bool = False
) -> Iterator[anthropic.Anthropic]:
    """The SDK pointed at the proxy. It sends its `api_key` as `Authorization: Bearer`; by
    default the key goes as `x-api-key` instead, as Claude Code sends it."""
    client = anthropic.Anthropic(
        base_url=proxy.url,
        api_key=api_key if bearer else None,
        default_headers={} if bearer else {"x-api-key": api_key},
        max_retries=0,
        # The SDK's own httpx fork, with the shared TLS context (see `servers.CLIENT_TLS`).
        http_client=httpx2.Client(verify=CLIENT_TLS, timeout=HUNG_AFTER_SECONDS),
    )
    with client:
        yield client


def message_params(**params: Any) -> dict[str, Any]:
    params.setdefault("model", MODEL)
    params.setdefault("max_tokens", MAX_TOKENS)
    params.setdefault("messages", [QUESTION])
    return params


def create(proxy: Proxy, stream: bool, **params: Any) -> dict[str, Any]:
    """The finished message as a plain dict: from `messages.create`, or from `messages.stream`
    (its raw events checked on the way, and rebuilt into the message the SDK built)."""
    with anthropic_client(proxy) as client:
        if not stream:
            return client.messages.create(**message_params(**params)).model_dump()
        with client.messages.stream(**message_params(**params)) as events:
            raw = [event.model_dump() for event in events if event.type not in DERIVED_EVENTS]
            final = events.get_final_message().model_dump()
    assert message_from_events(raw) == final
    return final


def message_from_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The message a Messages event stream builds, asserting the rules clients rely on:
    message_start first and message_stop last, each block started before its deltas and
    stopped after them, one block open at a time, indexes dense from 0, a tool_use block's
    partial_json fragments adding up to its input, one message_delta before message_stop."""
    kinds = [event["type"] for event in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"], kinds
    assert set(kinds[1:-2]) <= BLOCK_EVENTS | {"ping"}, kinds
    message = events[0]["message"]
    assert message["content"] == [] and message["stop_reason"] is None
    blocks: list[dict[str, Any]] = []
    # Each block's deltas, joined at the end: adding each to the text so far would copy it at
    # every delta (a 50 MB call streams in about 800 of them).
    texts: list[list[str]] = []
    open_block = None
    for event in events[1:-2]:
        kind, index = event["type"], event.get("index")
        if kind == "content_block_start":
            assert open_block is None and index == len(blocks)
            blocks.append(event["content_block"])
            texts.append([])
            open_block = index
        elif kind == "content_block_delta":
            assert index == open_block
            delta = event["delta"]
            texts[index].append(
                {
                    "text_delta": lambda d: d["text"],
                    "input_json_delta": lambda d: d["partial_json"],
                    "thinking_delta": lambda d: d["thinking"],
                }[delta["type"]](delta)
            )
        elif kind == "content_block_stop":
            assert index == open_block
            open_block = None
    assert open_block is None
    for block, pieces in zip(blocks, texts, strict=True):
        text = "".join(pieces)
        if block["type"] == "tool_use":
            block["input"] = json.loads(text) if text else {}
        else:
            block[block["type"]] = text
    final = events[-2]
    usage = {**message["usage"], **{k: v for k, v in final["usage"].items() if v is not None}}
    return {**message, "content": blocks, **final["delta"], "usage": usage}


def text(message: dict[str, Any]) -> str:
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


def tool_uses(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (block["name"], block["input"])
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
