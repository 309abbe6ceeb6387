"""The commit policy every protocol shares (protocols/streaming/commit_policy.py): a small
call reaches the client only once decided, exactly as in a whole text; a large one streams
while it is written; a streamed call that then fails ends unfinished, never finished with
invented values."""

from __future__ import annotations

import json

import pytest
from parser_harness import CHUNKINGS, PROTOCOL_NAMES, Chunks, check_contract, run

from protocols import SMALL_CALL_CHARS, ArgumentsMode, ToolCallStart, get_protocol

SMALL_ARGUMENTS = {"path": "src/app.py", "content": "print('hi')\n"}
LARGE_ARGUMENTS = {"path": "src/app.py", "content": "x = 1\n" * SMALL_CALL_CHARS}


def _call(protocol: str, arguments: dict[str, str]) -> str:
    return get_protocol(protocol).render_call("write_file", arguments)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_small_call_starts_only_once_it_has_ended(protocol: str, chunks: Chunks) -> None:
    source = "Writing.\n" + _call(protocol, SMALL_ARGUMENTS)
    streamed = run(protocol, source, chunks=chunks)
    whole = run(protocol, source, mode=ArgumentsMode.ATOMIC)
    assert streamed.signature() == whole.signature()
    assert streamed.call_values == [("write_file", SMALL_ARGUMENTS)]
    started = [
        i
        for i, batch in enumerate(streamed.batches)
        for part in batch
        if isinstance(part, ToolCallStart)
    ]
    # Nothing of the call went out before the feed that held its end.
    assert started and all(i >= len(streamed.batches) - 2 for i in started)
    check_contract(streamed)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_large_call_streams_while_it_is_written(protocol: str) -> None:
    source = _call(protocol, LARGE_ARGUMENTS)
    result = run(protocol, source, chunks=64)
    [call] = result.calls
    assert call.input == LARGE_ARGUMENTS
    first_start = next(
        i
        for i, batch in enumerate(result.batches)
        if any(isinstance(part, ToolCallStart) for part in batch)
    )
    assert first_start < len(result.batches) // 2
    check_contract(result)


# A large call whose body turns out invalid after its start went out.
BROKEN_LARGE_CALLS = {
    "json-mix": '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "'
    + "x" * SMALL_CALL_CHARS
    + '", ]]] }}</tool_call>',
    "morph-xml": "<write_file><path>a</path><content>"
    + "x" * SMALL_CALL_CHARS
    + "</content><path>b</path></write_file>",
    "qwen3-coder": "<tool_call>\n<function=write_file>\n<parameter=content>\n"
    + "x" * SMALL_CALL_CHARS
    + "\n</parameter>\n<parameter=content>\ny\n</parameter>\n</function>\n</tool_call>",
}


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", [None, 7])
def test_a_streamed_call_that_fails_ends_unfinished_with_its_text_recorded(
    protocol: str, chunks: Chunks
) -> None:
    source = BROKEN_LARGE_CALLS[protocol]
    result = run(protocol, "Here.\n" + source, chunks=chunks)
    assert result.calls == []
    [unfinished] = result.unfinished
    assert unfinished.original == source
    [error] = result.errors
    assert error.original == source
    sent = "".join(result.deltas(unfinished.id))
    assert sent  # it did stream
    with pytest.raises(json.JSONDecodeError):
        json.loads(sent)
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize(
    ("template", "text"),
    [
        pytest.param("\n{call}\n", "", id="line-breaks-around-a-call"),
        pytest.param("\n \n{call}\n\n{call}  \n", "", id="between-and-after-calls"),
        pytest.param("Done:\n{call}\n", "Done:\n", id="text-then-call"),
        pytest.param("{call}\n\nAll written.", "\n\nAll written.", id="call-then-text"),
        # With no call anywhere there is no layout: the answer is its text.
        pytest.param(" \n\t", " \n\t", id="whitespace-only-answer"),
        # Next to a think block, not a call: text (the tags themselves are not in `text`).
        pytest.param("\n<think>\n</think>\n{call}", "\n\n\n", id="think"),
    ],
)
def test_whitespace_next_to_calls_is_layout_in_both_modes(
    protocol: str, chunks: Chunks, template: str, text: str
) -> None:
    source = template.replace("{call}", _call(protocol, SMALL_ARGUMENTS))
    streamed = run(protocol, source, chunks=chunks)
    whole = run(protocol, source, mode=ArgumentsMode.ATOMIC)
    assert streamed.signature() == whole.signature()
    assert streamed.text == text
    assert streamed.error_kinds == []
    check_contract(streamed)
    check_contract(whole)
