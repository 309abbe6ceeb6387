"""The precision corpus (`precision_corpus/`): answers that mention tools or call syntax
without calling anything (a format shown as an example, in inline code, inside a document
the user asked for, in quoted tool output), and answers whose calls must stay calls (the
protocol's own format where a message would begin, the fenced calls models really write).
Each case runs under the protocols its header names (every protocol when it names none),
with the tools it names, in both argument modes and four chunkings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_cases import Case, check_alike, corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_harness import MODES, PROTOCOL_NAMES, TOOLS, check_contract, run

from protocols import ArgumentsMode, ToolSpec

CASES = corpus(Path(__file__).parent / "precision_corpus")


def _object(required: list[str] | None = None, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or []}


_STRING = {"type": "string"}
TOOL_SETS: dict[str, tuple[ToolSpec, ...]] = {
    "default": TOOLS,
    # Roo Code's read_file as it was: several files, each with optional line ranges.
    "files": (
        ToolSpec(
            "read_file",
            "Read one or more files.",
            _object(
                ["files"],
                files={
                    "type": "array",
                    "items": _object(
                        ["path"], path=_STRING, line_ranges={"type": "array", "items": _STRING}
                    ),
                },
            ),
        ),
        ToolSpec("execute_command", "Run a shell command.", _object(["command"], command=_STRING)),
    ),
    # The real-model benchmark's tools (bench/real_model_calls.py), for its answers.
    "bench": (
        ToolSpec(
            "get_weather",
            "Current weather for a city.",
            _object(
                ["city"], city=_STRING, unit={"type": "string", "enum": ["celsius", "fahrenheit"]}
            ),
        ),
        ToolSpec("read_file", "Read a file.", _object(["path"], path=_STRING)),
        ToolSpec(
            "write_file",
            "Write a file.",
            _object(["path", "content"], path=_STRING, content=_STRING),
        ),
        ToolSpec(
            "search",
            "Search the web.",
            _object(["query"], query=_STRING, limit={"type": "integer"}),
        ),
        ToolSpec(
            "get_stock_price", "Latest price of a stock.", _object(["symbol"], symbol=_STRING)
        ),
    ),
    # A coding agent's tools as Pi declares them: one required string makes a bare value.
    "agent": (
        ToolSpec(
            "bash",
            "Run a shell command.",
            _object(["command"], command=_STRING, timeout={"type": "number"}),
        ),
        ToolSpec("read", "Read a file.", _object(["path"], path=_STRING)),
        ToolSpec(
            "write", "Write a file.", _object(["path", "content"], path=_STRING, content=_STRING)
        ),
    ),
    # BFCL's route planner, whose arguments a 1.5B model closed with each other's tags.
    "route": (
        ToolSpec(
            "plan_route",
            "A driving route.",
            _object(
                ["start_location", "end_location"],
                start_location=_STRING,
                end_location=_STRING,
                avoid_tolls={"type": "boolean"},
            ),
        ),
    ),
}


def _params() -> list[Any]:
    return [
        pytest.param(case, protocol, id=f"{case.id}-{protocol}")
        for case in CASES
        for protocol in case.expected.get("protocols", PROTOCOL_NAMES)
    ]


@pytest.mark.parametrize(("case", "protocol"), _params())
def test_a_call_is_only_what_the_model_meant_as_one(case: Case, protocol: str) -> None:
    result = check_alike(case, protocol, TOOL_SETS[case.expected.get("tools", "default")])
    if not case.expects("calls", protocol):
        assert result.reconstructed == case.output  # a mention is the answer, every byte


def test_the_corpus_tests_positives_as_hard_as_negatives() -> None:
    negatives = [case for case in CASES if not case.expected["calls"]]
    positives = [case for case in CASES if case.expected["calls"]]
    assert len(positives) >= 20 and len(negatives) >= 20, (len(positives), len(negatives))
    for case in CASES:
        assert set(case.expected.get("protocols", PROTOCOL_NAMES)) <= set(PROTOCOL_NAMES)
        assert case.expected.get("tools", "default") in TOOL_SETS, case.id


@st.composite
def _case_with_cuts(draw: st.DrawFn) -> tuple[Case, str, list[int]]:
    case = draw(st.sampled_from(CASES))
    protocol = draw(st.sampled_from(case.expected.get("protocols", PROTOCOL_NAMES)))
    cuts = draw(st.lists(st.integers(0, len(case.output)), max_size=16))
    return case, protocol, cuts


@settings(max_examples=150, deadline=None)
@given(drawn=_case_with_cuts(), mode=st.sampled_from(MODES))
def test_any_chunking_of_the_corpus_reads_it_alike(
    drawn: tuple[Case, str, list[int]], mode: ArgumentsMode
) -> None:
    # What decides a held call may arrive in any piece: a stream reads the text as a whole does.
    case, protocol, cuts = drawn
    tools = TOOL_SETS[case.expected.get("tools", "default")]
    chunked = run(protocol, case.output, chunks=cuts, mode=mode, tools=tools)
    check_contract(chunked)
    assert chunked.signature() == run(protocol, case.output, mode=mode, tools=tools).signature()
