"""The per-response parse budget bounds what a model can make the proxy spend, never an
answer that is simply big: strict reading is charged by the parse, each call by itself, and
a flood of calls past the budget is text; a call already streaming is finished."""

from __future__ import annotations

from typing import Any

import pytest
from parser_harness import PROTOCOL_NAMES, check_contract, fragments, run

from protocols import ArgumentsMode, ErrorKind, get_protocol
from protocols.lenient.relaxed_json import CALL_CHARGE_CHARS, PARSE_CHARGE_CHARS

SOURCE_LINE = 'print("<b>\\n</b>", {"ok": True})  # a line of a generated module\n'
BIG_FILE_CHARS = 10_000_000
SMALL_CALLS = 20_000
# Whole, and in the pieces an upstream streams a big answer in.
READINGS = [
    pytest.param(ArgumentsMode.ATOMIC, None, id="whole"),
    pytest.param(ArgumentsMode.INCREMENTAL, 4096, id="streamed"),
]


def _calls_text(protocol: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    render = get_protocol(protocol).render_call
    return "".join(render(name, arguments) for name, arguments in calls)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize(("mode", "chunks"), READINGS)
def test_a_10_mb_file_write_comes_out_whole(
    protocol: str, mode: ArgumentsMode, chunks: int | None
) -> None:
    arguments = {"path": "big.py", "content": SOURCE_LINE * (BIG_FILE_CHARS // len(SOURCE_LINE))}
    result = run(
        protocol, _calls_text(protocol, [("write_file", arguments)]), chunks=chunks, mode=mode
    )
    assert result.call_values == [("write_file", arguments)]
    assert (result.text, result.errors) == ("", [])
    if mode is ArgumentsMode.INCREMENTAL:
        assert fragments(result.parts) == result.calls[0].arguments


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize(("mode", "chunks"), READINGS)
def test_20000_small_calls_come_out_whole(
    protocol: str, mode: ArgumentsMode, chunks: int | None
) -> None:
    calls = [("read_file", {"path": f"src/module_{index}.py"}) for index in range(SMALL_CALLS)]
    result = run(protocol, _calls_text(protocol, calls), chunks=chunks, mode=mode)
    assert result.call_values == calls
    assert (result.text, result.errors) == ("", [])


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", [None, 7])
def test_calls_past_the_budget_are_text_with_one_error(protocol: str, chunks: int | None) -> None:
    call = get_protocol(protocol).render_call("read_file", {"path": "a.py"})
    affordable = 10
    # Each call is charged for itself, a JSON body for its parse too (and an XML one not).
    budget = affordable * (CALL_CHARGE_CHARS + PARSE_CHARGE_CHARS * (protocol == "json-mix"))
    result = run(protocol, call * 1000, chunks=chunks, relaxed_parse_budget_chars=budget)
    assert result.call_values == [("read_file", {"path": "a.py"})] * affordable
    assert result.text == call * (1000 - affordable)
    assert result.error_kinds == [ErrorKind.PARSE_BUDGET]
    check_contract(result)


def test_a_call_streaming_when_the_budget_runs_out_is_finished() -> None:
    arguments = {"path": "big.py", "content": SOURCE_LINE * 100}  # streams: past 1 KiB
    call = get_protocol("json-mix").render_call("write_file", arguments)
    # Its tag is paid for; its final parse is not, and is made on credit.
    result = run("json-mix", call, chunks=64, relaxed_parse_budget_chars=CALL_CHARGE_CHARS)
    assert result.call_values == [("write_file", arguments)]
    assert fragments(result.parts) == result.calls[0].arguments
    assert result.errors == []
    check_contract(result)
