"""Free-form tools (OpenAI `custom` tools): offered as a tool with one string argument whose
prompt shows the grammar, written and parsed as any other call in every protocol, and read
back as the text they carry, whole or as their argument fragments stream."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from parser_harness import MODES, PROTOCOL_NAMES, TOOLS, check_contract, protocol_of, run

from protocols import (
    FreeFormInputStream,
    ToolCallDelta,
    free_form_input,
    free_form_tool,
    get_protocol,
)
from protocols.formats.qwen3_coder import FUNCTION_END, PARAMETER_END, PARAMETER_START

GRAMMAR = 'start: "*** Begin Patch" LF hunk+ "*** End Patch"'
PATCH = free_form_tool("apply_patch", "Edit files with a patch.", syntax="lark", grammar=GRAMMAR)
TOOLS_WITH_PATCH = (*TOOLS, PATCH)
PATCH_TEXT = '*** Begin Patch\n*** Add File: a.py\n+print("<div>")\n+\tx = "a\\\\b"\n*** End Patch'


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_the_prompt_declares_the_free_form_tool_with_its_grammar(protocol: str) -> None:
    prompt = get_protocol(protocol).render_tools([PATCH])

    assert "Edit files with a patch." in prompt
    assert "free-form text, not JSON" in prompt and "`input`" in prompt
    assert "Lark grammar" in prompt and '\\"*** Begin Patch\\" LF hunk+' in prompt


def test_a_tool_without_a_grammar_takes_any_text() -> None:
    tool = free_form_tool("note", "")

    assert tool.free_form and "grammar" not in tool.description
    assert tool.parameters["required"] == ["input"]


@settings(max_examples=100, deadline=None)
@given(
    text=st.one_of(st.just(PATCH_TEXT), st.text(max_size=80)),
    protocol=st.sampled_from(PROTOCOL_NAMES),
    cuts=st.lists(st.integers(0, 300), max_size=12),
)
def test_a_free_form_call_streams_its_text_as_the_whole_parse_reads_it(
    text: str, protocol: str, cuts: list[int]
) -> None:
    # The documented qwen3-coder limit: values are never escaped, so they cannot hold these.
    qwen_tags = (PARAMETER_END, PARAMETER_START, FUNCTION_END)
    assume(protocol != "qwen3-coder" or not any(tag in text for tag in qwen_tags))
    source = "Patching. " + protocol_of(protocol).render_call("apply_patch", {"input": text})

    # small_call_chars=0: streamed from its first fragment, as a large patch streams.
    streamed = run(protocol, source, chunks=cuts, tools=TOOLS_WITH_PATCH, small_call_chars=0)
    whole = run(protocol, source, tools=TOOLS_WITH_PATCH, mode=MODES[1])

    check_contract(streamed)
    [call] = streamed.calls
    reader = FreeFormInputStream()
    pieces = [
        reader.feed(part.arguments) for part in streamed.parts if isinstance(part, ToolCallDelta)
    ]
    assert "".join(pieces) == free_form_input(call.input) == text
    assert reader.sent_chars == len(text)
    assert [free_form_input(c.input) for c in whole.calls] == [text]


@pytest.mark.parametrize(
    ("fragments", "texts"),
    [
        pytest.param(['{"input": "a\\', 'nb"}'], ["a", "\nb"], id="escape-split"),
        pytest.param(['{"inp', 'ut": "\\u00', '1f"}'], ["", "", "\x1f"], id="start-split"),
        pytest.param(['{"input": "a", ', '"x": "b"}'], ["a", ""], id="text-ends-at-its-quote"),
        pytest.param(['{"path": "a", "input": "b"}'], [""], id="input-not-first"),
        pytest.param(['{"input": 5}'], [""], id="input-not-a-string"),
    ],
)
def test_the_stream_reads_only_a_leading_input_string(
    fragments: list[str], texts: list[str]
) -> None:
    reader = FreeFormInputStream()

    assert [reader.feed(fragment) for fragment in fragments] == texts


@pytest.mark.parametrize(
    ("arguments", "text"),
    [({"input": "x"}, "x"), ({"input": 5}, '{"input": 5}'), ({"patch": "x"}, '{"patch": "x"}')],
)
def test_a_call_without_an_input_string_carries_its_arguments_as_written(
    arguments: dict[str, object], text: str
) -> None:
    assert free_form_input(arguments) == text


def test_a_200kb_text_fed_one_character_at_a_time_is_read_in_linear_time() -> None:
    text = '+ a line of the file, "quoted" \\ and\ttabbed\n' * 4_500
    arguments = json.dumps({"input": text}, ensure_ascii=False)
    reader = FreeFormInputStream()

    assert "".join(reader.feed(char) for char in arguments) == text
