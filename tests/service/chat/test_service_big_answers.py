"""Big honest answers come out whole and exact, streamed and not: a 50 MB file write (its
arguments were cut past ~8 MB when strict reading was charged by the character) and 20,000
small calls (7,812 of them came out, the rest as 12 MB of text)."""

from __future__ import annotations

import json
from typing import Any

from servers import Proxy, chat_body
from upstream_server import Reply, ScriptedUpstream

from protocols import SMALL_CALL_CHARS, get_protocol

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
}
# Source code as models write files: quotes, backslashes, markup, a line break per line.
SOURCE_LINE = 'print("<b>\\n</b>", {"ok": True})  # a line of a generated module\n'
BIG_FILE_CHARS = 50_000_000
SMALL_CALLS = 20_000
# The model's text reaches the proxy in chunks of this size.
UPSTREAM_CHUNK_CHARS = 1 << 20


def _chunked(text: str) -> list[str]:
    return [
        text[at : at + UPSTREAM_CHUNK_CHARS] for at in range(0, len(text), UPSTREAM_CHUNK_CHARS)
    ]


def test_a_50_mb_file_write_comes_out_whole_and_exact(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    content = SOURCE_LINE * (BIG_FILE_CHARS // len(SOURCE_LINE))
    arguments = {"path": "big.py", "content": content}
    call = get_protocol("json-mix").render_call("write_file", arguments)
    upstream.script(Reply(*_chunked(call)))

    answer = proxy.chat(chat_body(WRITE_TOOL, stream=stream))

    assert answer.calls == [("write_file", arguments)]
    assert (answer.content, answer.finish_reason) == ("", "tool_calls")


def test_20000_small_calls_come_out_whole_and_exact(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    render = get_protocol("json-mix").render_call
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": f"src/module_{index}.py", "content": SOURCE_LINE * 12})
        for index in range(SMALL_CALLS)
    ]
    texts = [render(name, arguments) for name, arguments in calls]
    assert 800 < len(json.dumps(calls[-1][1])) < SMALL_CALL_CHARS  # sent once it ends
    upstream.script(Reply(*texts))

    answer = proxy.chat(chat_body(WRITE_TOOL, stream=stream))

    assert answer.calls == calls
    assert (answer.content, answer.finish_reason) == ("", "tool_calls")
    assert all(
        json.loads(call.arguments) == arguments
        for call, (_, arguments) in zip(answer.tool_calls, calls, strict=True)
    )
