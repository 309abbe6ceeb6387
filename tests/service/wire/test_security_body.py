"""A request body nested deeper than the proxy reads is a 400 like any invalid JSON, in each
door's error shape: past the JSON decoder, and past MAX_REQUEST_NESTING, below which the
tools and the history are rendered without reaching Python's recursion limit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers import Proxy
from upstream_server import Reply, ScriptedUpstream

from service.exchange.request import MAX_REQUEST_NESTING


def test_deeply_nested_body_is_a_400(proxy: Proxy) -> None:
    response = proxy.http.post(
        "/v1/chat/completions",
        content=b"[" * 200_000,
        headers={"content-type": "application/json"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert response.headers.get("connection") != "close"


def _schema(levels: int) -> dict[str, Any]:
    """A tool's parameters nested `levels` JSON levels deep (two a property)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels // 2):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _bodies(schema: dict[str, Any] | str) -> dict[str, dict[str, Any]]:
    said = [{"role": "user", "content": "hi"}]
    return {
        "/v1/chat/completions": {
            "model": "m",
            "messages": said,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}],
        },
        "/v1/responses": {
            "model": "m",
            "input": "hi",
            "tools": [{"type": "function", "name": "f", "parameters": schema}],
        },
        "/v1/messages": {
            "model": "m",
            "max_tokens": 64,
            "messages": said,
            "tools": [{"name": "f", "input_schema": schema}],
            "stream": True,
        },
        "/v1/messages/count_tokens": {
            "model": "m",
            "messages": said,
            "tools": [{"name": "f", "input_schema": schema}],
        },
        "/v1beta/models/m:generateContent": {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": schema}]}],
        },
    }


def _openai_message(body: dict[str, Any]) -> str:
    return str(body["error"]["message"])


def _anthropic_message(body: dict[str, Any]) -> str:
    assert body["type"] == "error"
    return str(body["error"]["message"])


def _google_message(body: dict[str, Any]) -> str:
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    return str(body["error"]["message"])


# Each door's error message, read as its clients read its error shape.
ERRORS = {
    "/v1/chat/completions": _openai_message,
    "/v1/responses": _openai_message,
    "/v1/messages": _anthropic_message,
    "/v1/messages/count_tokens": _anthropic_message,
    "/v1beta/models/m:generateContent": _google_message,
}


SCHEMA_HERE = "the schema goes here"


def _deep_body(path: str, levels: int) -> bytes:
    """The body for `path` with a tool schema `levels` JSON levels deep, written as text: a
    JSON encoder would recurse once a level and reach the recursion limit on a deep stack (a
    test run by a pytest-xdist worker is called from about 40 frames further down)."""
    schema = '{"type": "object", "properties": {"a": ' * (levels // 2)
    schema += '{"type": "string"}' + "}}" * (levels // 2)
    return json.dumps(_bodies(SCHEMA_HERE)[path]).replace(json.dumps(SCHEMA_HERE), schema).encode()


@pytest.mark.parametrize("path", list(ERRORS))
def test_a_body_nested_past_the_bound_but_not_past_the_decoder_is_a_400(
    upstream: ScriptedUpstream, proxy: Proxy, path: str
) -> None:
    # ~940 levels: the decoder took it, and rendering its tools raised RecursionError (a 500).
    body = _deep_body(path, 940)

    response = proxy.http.post(path, content=body, headers={"content-type": "application/json"})

    assert response.status_code == 400, response.text
    assert "nests deeper" in ERRORS[path](response.json())
    assert upstream.requests == []


@pytest.mark.parametrize("path", list(ERRORS))
def test_a_body_nested_within_the_bound_is_answered(
    upstream: ScriptedUpstream, proxy: Proxy, path: str
) -> None:
    upstream.script(Reply("Hello."))
    body = _bodies(_schema(MAX_REQUEST_NESTING - 10))[path]

    response = proxy.http.post(path, json=body)

    assert response.status_code == 200, response.text
