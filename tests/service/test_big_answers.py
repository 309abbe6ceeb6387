"""Big honest answers come out whole and exact through every front door, streamed and not:
a 16 MB file write (a 50 MB one had its arguments cut past ~8 MB when strict reading was
charged by the character) and thousands of small calls (of 20,000, 7,812 came out, the rest
as 12 MB of text).

Reading the calls costs each door the same (one parser, whose budget
`tests/protocols/test_parse_budget.py` holds to 20,000 calls in every protocol); what differs
is how each door writes them. So a streamed chat completion gets all 20,000, read the way
that charges each call most (its arguments followed as they stream), and every other door
and form 10,000 of about a kilobyte each, past where the calls used to stop."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from messages_client import anthropic_tool, message_from_events, message_params, tool_uses
from messages_client import text as message_text
from responses_client import calls as response_calls
from responses_client import flat_function, response_from_events
from responses_client import text as response_text
from servers import MODEL, Proxy, chat_body, read_events
from upstream_server import Reply, ScriptedUpstream

from protocols import SMALL_CALL_CHARS, get_protocol

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
}
# Source code as models write files: quotes, a backslash, markup, a line break per line.
SOURCE_LINE = 'print("<b>\\n</b>", {"ok": True})  # a line of a generated module\n'
BIG_FILE_CHARS = 16_000_000
SMALL_CALLS = 20_000
# Through each door and form but a streamed chat completion (see above).
SMALL_CALLS_ELSEWHERE = 10_000
# The model's text reaches the proxy in chunks of this size.
UPSTREAM_CHUNK_CHARS = 1 << 20

Calls = list[tuple[str, Any]]


def _sse(proxy: Proxy, path: str, body: dict[str, Any], **params: str) -> list[Any]:
    with proxy.http.stream("POST", path, json=body, params=params) as response:
        assert response.status_code == 200, response.read()
        return [event for event in read_events(response.iter_lines()) if event != "[DONE]"]


def _posted(proxy: Proxy, path: str, body: dict[str, Any]) -> Any:
    response = proxy.http.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _chat(proxy: Proxy, stream: bool) -> tuple[Calls, str]:
    answer = proxy.chat(chat_body(WRITE_TOOL, stream=stream))
    assert answer.finish_reason == "tool_calls"
    return answer.calls, answer.content


def _responses(proxy: Proxy, stream: bool) -> tuple[Calls, str]:
    body = {"model": MODEL, "input": "Write it.", "tools": [flat_function(WRITE_TOOL)]}
    if stream:
        response = response_from_events(_sse(proxy, "/v1/responses", {**body, "stream": True}))
    else:
        response = _posted(proxy, "/v1/responses", body)
    assert response["status"] == "completed"
    return response_calls(response), response_text(response)


def _messages(proxy: Proxy, stream: bool) -> tuple[Calls, str]:
    body = message_params(tools=[anthropic_tool(WRITE_TOOL)])
    if stream:
        message = message_from_events(_sse(proxy, "/v1/messages", {**body, "stream": True}))
    else:
        message = _posted(proxy, "/v1/messages", body)
    assert message["stop_reason"] == "tool_use"
    return tool_uses(message), message_text(message)


def _gemini(proxy: Proxy, stream: bool) -> tuple[Calls, str]:
    function = WRITE_TOOL["function"]
    declaration = {
        "name": function["name"],
        "description": function["description"],
        "parametersJsonSchema": function["parameters"],
    }
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Write it."}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }
    path = f"/v1beta/models/{MODEL}"
    if stream:
        answers = _sse(proxy, f"{path}:streamGenerateContent", body, alt="sse")
    else:
        answers = [_posted(proxy, f"{path}:generateContent", body)]
    parts = [part for answer in answers for part in answer["candidates"][0]["content"]["parts"]]
    calls = [
        (part["functionCall"]["name"], part["functionCall"]["args"])
        for part in parts
        if "functionCall" in part
    ]
    return calls, "".join(part.get("text", "") for part in parts)


DOORS: dict[str, Callable[[Proxy, bool], tuple[Calls, str]]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}


@pytest.mark.parametrize("door", DOORS)
def test_a_16_mb_file_write_comes_out_whole_and_exact(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, door: str
) -> None:
    arguments = {"path": "big.py", "content": SOURCE_LINE * (BIG_FILE_CHARS // len(SOURCE_LINE))}
    call = get_protocol("json-mix").render_call("write_file", arguments)
    chunks = [
        call[at : at + UPSTREAM_CHUNK_CHARS] for at in range(0, len(call), UPSTREAM_CHUNK_CHARS)
    ]
    upstream.script(Reply(*chunks))

    assert DOORS[door](proxy, stream) == ([("write_file", arguments)], "")


@pytest.mark.parametrize("door", DOORS)
def test_thousands_of_small_calls_come_out_whole_and_exact(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, door: str
) -> None:
    render = get_protocol("json-mix").render_call
    count = SMALL_CALLS if (door, stream) == ("chat", True) else SMALL_CALLS_ELSEWHERE
    calls: Calls = [
        ("write_file", {"path": f"src/module_{index}.py", "content": SOURCE_LINE * 12})
        for index in range(count)
    ]
    assert 800 < len(json.dumps(calls[-1][1])) < SMALL_CALL_CHARS  # each sent once it ends
    upstream.script(Reply(*(render(name, arguments) for name, arguments in calls)))

    assert DOORS[door](proxy, stream) == (calls, "")
