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
from parser_harness import PROTOCOL_NAMES, TOOLS

from protocols import ToolSpec

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
