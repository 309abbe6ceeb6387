"""The per-response parse budget bounds what a model can make the proxy spend, never an
answer that is simply big: strict reading is charged by the parse, each call by itself, and
a flood of calls past the budget is text; a call already streaming is finished."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import pytest
from parser_harness import PROTOCOL_NAMES, check_contract, fragments, run

from protocols import ArgumentsMode, ErrorKind, TextDelta, ToolCallDelta, get_protocol
from protocols.lenient.relaxed_json import (
    ARGUMENT_CHARGE_CHARS,
    CALL_CHARGE_CHARS,
    FOLLOWING_FLOOR_CHARS,
    HOLD_CHARGE_CHARS,
    RELAXED_PARSE_BUDGET_CHARS,
    RelaxedParseBudget,
)

SOURCE_LINE = 'print("<b>\\n</b>", {"ok": True})  # a line of a generated module\n'
BIG_FILE_CHARS = 10_000_000
# The most small calls an honest answer holds; a tenth of them is read, under a tenth of the
# budget: each call is charged the same wherever it stands in the answer.
SMALL_CALLS = 20_000
SMALL_CALLS_READ = SMALL_CALLS // 10
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
def test_20000_small_calls_fit_the_budget(
    protocol: str, mode: ArgumentsMode, chunks: int | None
) -> None:
    # The last and longest of 20,000 (the service reads all of them through chat
    # completions: tests/service/test_big_answers.py).
    calls = [
        ("read_file", {"path": f"src/module_{index}.py"})
        for index in range(SMALL_CALLS - SMALL_CALLS_READ, SMALL_CALLS)
    ]
    budget = RELAXED_PARSE_BUDGET_CHARS * SMALL_CALLS_READ // SMALL_CALLS
    text = _calls_text(protocol, calls)
    result = run(protocol, text, chunks=chunks, mode=mode, relaxed_parse_budget_chars=budget)
    assert result.call_values == calls
    assert (result.text, result.errors) == ("", [])


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", [None, 7])
def test_calls_past_the_budget_are_text_with_one_error(protocol: str, chunks: int | None) -> None:
    call = get_protocol(protocol).render_call("read_file", {"path": "a.py"})
    budget = 10 * CALL_CHARGE_CHARS
    result = run(protocol, call * 1000, chunks=chunks, relaxed_parse_budget_chars=budget)
    made = len(result.calls)
    assert 0 < made <= budget // CALL_CHARGE_CHARS
    assert result.call_values == [("read_file", {"path": "a.py"})] * made
    assert result.text == call * (1000 - made)
    assert result.error_kinds == [ErrorKind.PARSE_BUDGET]
    check_contract(result)


def _lines_held(protocol: str, text: str, budget: int) -> tuple[int, list[ErrorKind]]:
    """The lines the part writer's holds took (the line breaks of the text each `_take`)
    while `text` was read under `budget`, and the error kinds recorded."""
    held = 0

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal held
        if event == "call" and frame.f_code.co_name == "_take":
            held += frame.f_locals["text"].count("\n")

    sys.setprofile(count)
    try:
        result = run(protocol, text, chunks=64, relaxed_parse_budget_chars=budget)
    finally:
        sys.setprofile(None)
    check_contract(result)
    assert result.text == text
    return held, result.error_kinds


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("line", ["`", "``", "~", "```\n"])
def test_lines_that_may_open_a_fence_are_held_only_while_the_budget_pays(
    protocol: str, line: str
) -> None:
    # Each line beginning with a backtick or a tilde may open a fence, so it is held until
    # it shows it does not, and the lines of an empty fence are held after it: each costs.
    budget, lines = 1000 * HOLD_CHARGE_CHARS, 20_000
    held, errors = _lines_held(protocol, f"\n{line}" * lines, budget)
    assert held <= budget // HOLD_CHARGE_CHARS + 1  # and the one it could not pay ends it
    assert errors == [ErrorKind.PARSE_BUDGET]


@pytest.mark.parametrize(
    ("protocol", "argument"),
    [
        ("json-mix", '"k": 1, '),
        ("morph-xml", "<path>a.py</path>"),
        ("qwen3-coder", "<parameter=path>\na.py\n</parameter>\n"),
    ],
)
@pytest.mark.parametrize("chunks", [None, 16])
def test_a_flood_of_arguments_in_one_call_stops_costing_at_the_budget(
    protocol: str, argument: str, chunks: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 MB of such arguments in one call took 0.6 to 2.5 s to read, 64 MB thirty times that:
    # each argument is read on its own, and charged. What the budget pays for is read; the
    # rest costs what reading text does (JSON-mix hands it to `json.loads` whole).
    charges: list[int] = []
    spend, follow = RelaxedParseBudget._spend, RelaxedParseBudget.spend_following

    def counted_spend(budget: RelaxedParseBudget, chars: int, what: str) -> None:
        charges.append(chars)
        spend(budget, chars, what)

    def counted_follow(budget: RelaxedParseBudget) -> bool:
        charges.append(ARGUMENT_CHARGE_CHARS)
        return follow(budget)

    monkeypatch.setattr(RelaxedParseBudget, "_spend", counted_spend)
    monkeypatch.setattr(RelaxedParseBudget, "spend_following", counted_follow)
    call = get_protocol(protocol).render_call("read_file", {"path": "a.py"})
    at = call.index("a.py") - len('"path": "') * (protocol == "json-mix")
    work = []
    for count in (2_000, 8_000):
        flood = call[:at] + argument * count + call[at:]
        result = run(protocol, flood, chunks=chunks, relaxed_parse_budget_chars=2_000)
        check_contract(result)
        work.append(len(charges))
        charges.clear()
    assert work[1] == work[0] < 2_000 // ARGUMENT_CHARGE_CHARS


def test_a_call_streaming_when_the_budget_runs_out_is_finished() -> None:
    # Its tag is paid for, and its arguments but the last few, which are read on credit.
    arguments = {f"key_{index}": f"value {index} " * 20 for index in range(15)}
    call = get_protocol("qwen3-coder").render_call("write_file", arguments)
    budget = CALL_CHARGE_CHARS + FOLLOWING_FLOOR_CHARS
    assert 15 * ARGUMENT_CHARGE_CHARS > FOLLOWING_FLOOR_CHARS
    result = run("qwen3-coder", call, chunks=64, relaxed_parse_budget_chars=budget)
    assert result.call_values == [("write_file", arguments)]
    assert fragments(result.parts) == result.calls[0].arguments
    assert result.errors == []
    check_contract(result)


def _fenced_calls_answer(protocol: str, count: int) -> str:
    call = get_protocol(protocol).render_call("read_file", {"path": "a.py"})
    return f"Let me read the files.\n```\n{call * count}```\n" + "Then I explain them. " * 100


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("chunks", [None, 7])
def test_a_fence_of_calls_held_past_the_budget_is_text_whole(
    protocol: str, chunks: int | None
) -> None:
    # The calls of a fence are held until the fence shows it holds calls alone; past the
    # budget its rest is not read, so that is never shown and the fence, calls paid for
    # included, stays text as written (a false call is worse than a missed one).
    answer = _fenced_calls_answer(protocol, 30)
    paid = run(protocol, answer, chunks=chunks)
    assert len(paid.calls) == 30
    result = run(protocol, answer, chunks=chunks, relaxed_parse_budget_chars=10 * CALL_CHARGE_CHARS)
    check_contract(result)
    assert (result.calls, result.text) == ([], answer)
    assert result.error_kinds == [ErrorKind.PARSE_BUDGET]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_held_calls_read_whole_leave_one_part_per_text_block_and_call(protocol: str) -> None:
    # Read in 512-character pieces, the held text and calls still come out coalesced: one
    # text delta a block, and a held call streamed as its start, one fragment, the call.
    answer = _fenced_calls_answer(protocol, 3) + "More. " * 200
    result = run(protocol, answer, mode=ArgumentsMode.INCREMENTAL)
    check_contract(result)
    assert len(result.calls) == 3
    parts = result.batches[0]
    blocks = {part.id for part in parts if isinstance(part, TextDelta)}
    assert len([part for part in parts if isinstance(part, TextDelta)]) == len(blocks) == 2
    deltas = [part for part in parts if isinstance(part, ToolCallDelta)]
    assert [delta.arguments for delta in deltas] == [call.arguments for call in result.calls]
