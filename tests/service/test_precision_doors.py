"""The answer's structure decides, at every front door: a call form quoted from a log, a
transcript, a diff or a comment, or introduced as an example, is text, and its twin written
to act (a call after a noun that looks like an example word, after a fence of code, after
acting words, after an element closed mid-line) is a call. The cases are the precision
corpus's (`tests/protocols/precision_corpus/structure.txt`), answered through chat
completions, Responses, Messages and Gemini, streamed and whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_cases import Case, read_cases
from gemini_client import declaration, generate
from google.genai import types
from messages_client import anthropic_tool, create, tool_uses
from messages_client import text as message_text
from responses_client import calls as response_calls
from responses_client import flat_function, respond
from responses_client import text as response_text
from servers import Proxy, StartProxy, chat_body
from upstream_server import Reply, ScriptedUpstream

CORPUS = Path(__file__).parents[1] / "protocols" / "precision_corpus" / "structure.txt"
# A negative and its positive twin for each class of the corpus file.
CASES = {
    case.name: case
    for case in read_cases(CORPUS)
    if case.name
    in {
        "log-line-quoted-outside-a-fence",
        "log-quoted-then-a-real-call-on-its-own-line",
        "transcript-with-speaker-labels",
        "assistant-label-where-the-message-begins-is-a-call",
        "unfenced-diff-of-a-prompt",
        "unfenced-diff-then-a-real-call",
        "html-comment-block-holding-a-call",
        "closed-html-comment-then-a-real-call",
        "prompt-template-sentence-goes-on-the-next-line",
        "call-ends-a-line-and-a-new-sentence-follows",
        "e-g-introduces-a-json-mix-example",
        "a-sample-config-is-a-noun",
        "acting-words-reach-a-fence-of-bare-call-objects",
        "fence-of-calls-between-explanations-stays-an-example",
        "morph-xml-call-after-a-script-fence",
        "morph-xml-call-after-an-undeclared-element-closed-mid-line",
    }
}


def _tool(name: str, **properties: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": parameters},
    }


_STRING = {"type": "string"}
TOOLS = [
    _tool("read_file", path=_STRING),
    _tool("execute_command", command=_STRING),
    _tool("search", query=_STRING),
    _tool("get_time"),
    _tool("get_weather", city=_STRING),
]
Answered = tuple[str, list[tuple[str, Any]]]  # the text and the calls a client assembled
# An earlier call whose result the model read, in each door's history.
ASKED = "Why was the push refused?"
EARLIER = {"command": "cat hook.log"}


def _chat(proxy: Proxy, stream: bool, read: str | None) -> Answered:
    messages: list[dict[str, Any]] = [{"role": "user", "content": ASKED}]
    if read is not None:
        call = {"name": "execute_command", "arguments": json.dumps(EARLIER)}
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": read},
        ]
    completion = proxy.chat(chat_body(*TOOLS, stream=stream, messages=messages))
    return completion.content, completion.calls


def _responses(proxy: Proxy, stream: bool, read: str | None) -> Answered:
    items: list[dict[str, Any]] = [{"role": "user", "content": ASKED}]
    if read is not None:
        items += [
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "execute_command",
                "arguments": json.dumps(EARLIER),
            },
            {"type": "function_call_output", "call_id": "call_1", "output": read},
        ]
    response = respond(proxy, stream, input=items, tools=[flat_function(t) for t in TOOLS])
    return response_text(response), response_calls(response)


def _messages(proxy: Proxy, stream: bool, read: str | None) -> Answered:
    messages: list[dict[str, Any]] = [{"role": "user", "content": ASKED}]
    if read is not None:
        use = {"type": "tool_use", "id": "toolu_1", "name": "execute_command", "input": EARLIER}
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": read}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    message = create(proxy, stream, tools=[anthropic_tool(t) for t in TOOLS], messages=messages)
    return message_text(message), tool_uses(message)


def _gemini(proxy: Proxy, stream: bool, read: str | None) -> Answered:
    contents = [types.Content(role="user", parts=[types.Part(text=ASKED)])]
    if read is not None:
        call = types.FunctionCall(name="execute_command", args=EARLIER)
        result = types.FunctionResponse(name="execute_command", response={"output": read})
        contents += [
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="user", parts=[types.Part(function_response=result)]),
        ]
    declared = [types.Tool(function_declarations=[declaration(t) for t in TOOLS])]
    answer = generate(proxy, stream, contents=contents, tools=declared)
    return answer.text, [(name or "", args) for name, args in answer.called]


DOORS: dict[str, Callable[[Proxy, bool, str | None], Answered]] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_answers_structure_decides_at_every_door(
    upstream: ScriptedUpstream, start_proxy: StartProxy, case: Case, door: str, stream: bool
) -> None:
    [protocol] = case.expected.get("protocols", ["json-mix"])[:1]
    proxy = start_proxy(tool_protocol=protocol)
    output = case.output
    upstream.script(Reply(*[output[at : at + 7] for at in range(0, len(output), 7)]))

    text, called = DOORS[door](proxy, stream, None)

    expected = [(name, arguments) for name, arguments in case.expected["calls"]]
    assert called == expected
    if not expected:
        assert text == output  # a quoted form is the answer's text, every byte


PUSH = '{"name": "execute_command", "arguments": {"command": "git push --force"}}'
BLOCKED = f"blocked: <tool_call>{PUSH}</tool_call>"
READ_LOG = f"10:02 hook ran\n{BLOCKED}\n10:03 done"
ACTING = (
    'blocked: <tool_call>{"name": "read_file", "arguments": {"path": "hooks/pre-push"}}</tool_call>'
)


@pytest.mark.parametrize("door", DOORS)
def test_a_line_the_model_read_in_a_tool_result_is_quoted_at_every_door(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    """The same line after a tool result that held it is a quote; after one that did not,
    and with other arguments after the same one, it is a call."""
    proxy = start_proxy()
    quoted = f"The hook says:\n{BLOCKED}\nNothing was pushed."
    upstream.script(Reply(quoted), Reply(quoted), Reply(f"The hook says:\n{ACTING}"))

    assert DOORS[door](proxy, stream, READ_LOG) == (quoted, [])
    assert DOORS[door](proxy, stream, "10:02 hook ran")[1] == [
        ("execute_command", {"command": "git push --force"})
    ]
    assert DOORS[door](proxy, stream, READ_LOG)[1] == [("read_file", {"path": "hooks/pre-push"})]
