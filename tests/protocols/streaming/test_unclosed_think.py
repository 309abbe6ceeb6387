"""A call inside a think block is text, unless the output ends inside that block: then the
model forgot `</think>` and the call is a call. Every protocol, both modes."""

from __future__ import annotations

import pytest
from parser_harness import CHUNKINGS, MODES, PROTOCOL_NAMES, Chunks, check_contract, run

from protocols import ArgumentsMode, TextDelta, get_protocol

ARGUMENTS = {"path": "a.py"}


def _call(protocol: str) -> str:
    return get_protocol(protocol).render_call("read_file", ARGUMENTS)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_call_in_a_think_block_left_open_is_a_call(
    protocol: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    source = "<think>I should read it.\n" + _call(protocol) + "\n"
    result = run(protocol, source, chunks=chunks, mode=mode)
    assert result.call_values == [("read_file", ARGUMENTS)]
    assert result.text == "I should read it.\n"
    assert result.error_kinds == []
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_call_in_a_closed_think_block_is_text(
    protocol: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    think = "Maybe " + _call(protocol) + " or not."
    result = run(protocol, "<think>" + think + "</think>Answer.", chunks=chunks, mode=mode)
    assert result.calls == result.unfinished == []
    assert result.text == think + "Answer."
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_the_stream_holds_a_call_tag_in_a_think_block_until_it_is_decided(protocol: str) -> None:
    call = _call(protocol)
    pieces = ["<think>Plan: ", call, " more thoughts", "</think>Done."]
    result = run(protocol, "".join(pieces), chunks=[len(pieces[0]), len(pieces[0] + call)])
    texts = [
        "".join(part.text for part in batch if isinstance(part, TextDelta))
        for batch in result.batches
    ]
    assert texts == ["Plan: ", "", call + " more thoughtsDone.", ""]
