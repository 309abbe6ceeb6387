"""Corpora of model outputs kept as text files (`tests/protocols/*_corpus/`): a case is a
header, then the output verbatim up to the next case (its last line break is not part of it):

    === case: a-name-saying-what-it-shows
    === calls: [["get_weather", {"city": "Paris"}]]
    === text: "Text the answer keeps, as JSON"
    the model's output...

Every header but `case` holds JSON. `calls` (name and arguments of every complete call, in
order) is required; `errors` (parse error kinds) and `text` are checked when given;
`tool_results` (strings) are what the request's tool results said; a corpus may add
headers of its own. `calls@json-mix:` (and the like for the other headers)
overrides one for one protocol.

`check_alike` runs a case through a protocol's parser in both argument modes and four
chunkings, and asserts what the case says, alike for every chunking and mode."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parser_harness import MODES, TOOLS, Chunks, Result, check_contract, run

from protocols import ToolSpec

HEADER = "=== "


@dataclass(frozen=True)
class Case:
    group: str  # the file it comes from, without its suffix
    name: str
    output: str
    expected: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.group}-{self.name}"

    def expects(self, key: str, protocol: str) -> Any:
        return self.expected.get(f"{key}@{protocol}", self.expected.get(key))


def read_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    name, expected, lines = "", {}, list[str]()
    for line in [*path.read_text(encoding="utf-8").split("\n"), f"{HEADER}case: "]:
        if not line.startswith(HEADER):
            lines.append(line)
            continue
        key, _, value = line[len(HEADER) :].partition(": ")
        if key != "case":
            expected[key] = json.loads(value)
            continue
        if name:
            output = "\n".join(lines).removesuffix("\n")
            cases.append(Case(path.stem, name, output, expected))
        name, expected, lines = value, {}, []
    return cases


def corpus(directory: Path) -> list[Case]:
    """Every case of every `*.txt` file in `directory`, files in name order."""
    return [case for path in sorted(directory.glob("*.txt")) for case in read_cases(path)]


def chunkings(case: Case, protocol: str) -> list[Chunks]:
    """One character, seven, and cuts at random places (the same on every run)."""
    draw = random.Random(f"{case.group}/{case.name}/{protocol}")
    cuts = sorted(draw.sample(range(1, len(case.output)), min(12, len(case.output) - 1)))
    return [1, 7, cuts]


def check_alike(
    case: Case, protocol: str, tools: Sequence[ToolSpec] = TOOLS, dialects: tuple[type, ...] = ()
) -> Result:
    """Assert the case's calls, errors and text under `protocol`, in both modes, whole and in
    every chunking (a stream and a whole answer never disagree), with a route's own
    `dialects`. Returns the whole run."""
    calls = [tuple(call) for call in case.expects("calls", protocol)]
    signatures = []
    whole: Result | None = None
    read = case.expected.get("tool_results", [])
    for mode in MODES:
        whole = run(
            protocol, case.output, mode=mode, tools=tools, tool_results=read, dialects=dialects
        )
        check_contract(whole)
        assert whole.call_values == calls, (mode, whole.text)
        if case.expects("errors", protocol) is not None:
            assert whole.error_kinds == case.expects("errors", protocol), mode
        if case.expects("text", protocol) is not None:
            assert whole.text == case.expects("text", protocol), mode
        signatures.append(whole.signature())
        for chunks in chunkings(case, protocol):
            chunked = run(
                protocol,
                case.output,
                chunks=chunks,
                mode=mode,
                tools=tools,
                tool_results=read,
                dialects=dialects,
            )
            check_contract(chunked)
            assert chunked.signature() == whole.signature(), (mode, chunks)
    assert signatures[0] == signatures[1]  # incremental and atomic: the same calls and text
    assert whole is not None
    return whole
