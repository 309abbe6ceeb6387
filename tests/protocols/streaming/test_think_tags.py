"""Every reasoning block the tag loop knows (`THINK_TAGS`: `<think>`, Seed-OSS's `<seed:think>`,
Kimi K3's think channel) is read as `<think>` is: never parsed for calls while it is open,
its markers carrying the literal tags, closed only by its own close tag, and a call in one
the output never closes is a call. Every protocol, both modes, whole and split at every
character."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from parser_harness import CHUNKINGS, MODES, PROTOCOL_NAMES, Chunks, check_contract, run

from protocols import ArgumentsMode, ThinkEnd, ThinkStart, get_protocol
from protocols.streaming.think_tags import THINK_TAGS

Test = TypeVar("Test", bound=Callable[..., Any])
ARGUMENTS = {"path": "a.py"}
PAIRS = [pytest.param(open_tag, close, id=open_tag) for open_tag, close in THINK_TAGS.items()]
SEED_CALL = (
    "<seed:tool_call>\n<function=read_file>\n<parameter=path>a.py</parameter>\n"
    "</function>\n</seed:tool_call>"
)


def every_pair_protocol_and_chunking(test: Test) -> Test:
    for name, values in (
        (("open_tag", "close"), PAIRS),
        ("protocol", PROTOCOL_NAMES),
        ("chunks", CHUNKINGS),
    ):
        test = pytest.mark.parametrize(name, values)(test)
    return test


def _call(protocol: str) -> str:
    return get_protocol(protocol).render_call("read_file", ARGUMENTS)


def _markers(parts: list[object]) -> list[object]:
    return [part for part in parts if isinstance(part, ThinkStart | ThinkEnd)]


@every_pair_protocol_and_chunking
@pytest.mark.parametrize("mode", MODES)
def test_a_call_in_a_closed_block_is_reasoning_and_the_one_after_it_a_call(
    open_tag: str, close: str, protocol: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    call = _call(protocol)
    thought = f"I could write {call} here.\n"
    result = run(protocol, f"{open_tag}{thought}{close}\n{call}", chunks=chunks, mode=mode)
    assert result.call_values == [("read_file", ARGUMENTS)]
    assert result.text == thought + "\n"
    assert _markers(result.parts) == [ThinkStart(open_tag), ThinkEnd(close)]
    assert result.error_kinds == []
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_seed_oss_reasoning_about_its_call_yields_only_the_call_after_it(
    protocol: str, chunks: Chunks
) -> None:
    thought = f"\nThe call would be {SEED_CALL}\n"
    source = f"<seed:think>{thought}</seed:think>\n{SEED_CALL}"
    result = run(protocol, source, chunks=chunks)
    assert result.call_values == [("read_file", ARGUMENTS)]
    assert result.text == thought + "\n"
    assert _markers(result.parts) == [ThinkStart("<seed:think>"), ThinkEnd("</seed:think>")]
    check_contract(result)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_a_block_closes_only_with_its_own_close_tag(protocol: str, chunks: Chunks) -> None:
    call = _call(protocol)
    thought = f"Not yet </think> {call} <|close|>think<|sep|> still thinking."
    result = run(protocol, f"<seed:think>{thought}</seed:think>Done.", chunks=chunks)
    assert result.calls == result.unfinished == []
    assert result.text == thought + "Done."
    assert _markers(result.parts) == [ThinkStart("<seed:think>"), ThinkEnd("</seed:think>")]
    check_contract(result)


@every_pair_protocol_and_chunking
def test_a_call_in_a_block_left_open_is_a_call(
    open_tag: str, close: str, protocol: str, chunks: Chunks
) -> None:
    result = run(protocol, f"{open_tag}I should read it.\n{_call(protocol)}\n", chunks=chunks)
    assert result.call_values == [("read_file", ARGUMENTS)]
    assert result.text == "I should read it.\n"
    assert _markers(result.parts) == [ThinkStart(open_tag), ThinkEnd("")]
    check_contract(result)


@every_pair_protocol_and_chunking
def test_a_block_left_open_with_no_call_ends_with_an_empty_think_end(
    open_tag: str, close: str, protocol: str, chunks: Chunks
) -> None:
    partial = close[:-1]  # its close tag all but written: text at the end
    result = run(protocol, f"{open_tag}still thinking {partial}", chunks=chunks)
    assert result.calls == []
    assert result.text == f"still thinking {partial}"
    assert _markers(result.parts) == [ThinkStart(open_tag), ThinkEnd("")]
    check_contract(result)
