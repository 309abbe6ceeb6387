"""The answer's structure decides, at every front door: a call form quoted from a log, a
transcript, a diff or a comment, or introduced as an example, is text, and its twin written
to act (a call after a noun that looks like an example word, after a fence of code, after
acting words, after an element closed mid-line) is a call. The cases are the precision
corpus's (`tests/protocols/precision_corpus/structure.txt`), answered through chat
completions, Responses, Messages and Gemini, streamed and whole."""

from __future__ import annotations

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


def _chat(proxy: Proxy, stream: bool) -> Answered:
    completion = proxy.chat(chat_body(*TOOLS, stream=stream))
    return completion.content, completion.calls


def _responses(proxy: Proxy, stream: bool) -> Answered:
    response = respond(proxy, stream, input="Go on.", tools=[flat_function(t) for t in TOOLS])
    return response_text(response), response_calls(response)


def _messages(proxy: Proxy, stream: bool) -> Answered:
    message = create(proxy, stream, tools=[anthropic_tool(t) for t in TOOLS])
    return message_text(message), tool_uses(message)


def _gemini(proxy: Proxy, stream: bool) -> Answered:
    declared = [types.Tool(function_declarations=[declaration(t) for t in TOOLS])]
    answer = generate(proxy, stream, tools=declared)
    return answer.text, [(name or "", args) for name, args in answer.called]


DOORS: dict[str, Callable[[Proxy, bool], Answered]] = {
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

    text, called = DOORS[door](proxy, stream)

    expected = [(name, arguments) for name, arguments in case.expected["calls"]]
    assert called == expected
    if not expected:
        assert text == output  # a quoted form is the answer's text, every byte
