"""The dialect corpus (`dialect_corpus/`): outputs in the formats models write on their own,
each run through every protocol's parser, in both argument modes and four chunkings. Each
case's calls, error kinds and text are what its header says, alike for every chunking and
mode (a stream and a whole answer never disagree), and the parser contract holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_cases import Case, check_alike, corpus
from parser_harness import PROTOCOL_NAMES, check_contract, run

from protocols import ArgumentsMode, TextDelta
from protocols.streaming.dialect_forms import dialect_names

CASES = corpus(Path(__file__).parent / "dialect_corpus")


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_dialect_output_parses_alike_in_every_protocol_mode_and_chunking(
    case: Case, protocol: str
) -> None:
    check_alike(case, protocol)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_dialect_call_streamed_from_its_start_has_the_arguments_of_the_whole(
    case: Case, protocol: str
) -> None:
    # Every call streams (as a large one does): its fragments rebuild its final arguments.
    streamed = run(
        protocol, case.output, chunks=3, mode=ArgumentsMode.INCREMENTAL, small_call_chars=0
    )
    check_contract(streamed)
    assert streamed.call_values == [tuple(call) for call in case.expects("calls", protocol)]


def test_every_dialect_has_at_least_three_cases_and_one_that_stays_text() -> None:
    for dialect in dialect_names():
        cases = [case for case in CASES if case.group == dialect]
        assert len(cases) >= 3, dialect
        assert any(not case.expects("calls", "morph-xml") for case in cases), dialect


# Dialect tags that never end, or blanks that never stop, fed one character at a time after
# some prose: a stream may hold back only what could still be one tag, so the text keeps
# flowing. (JSON-mix reads a `<tool_call>` as its own call whatever follows: not there.)
NEVER_ENDING = {
    "mistral-name": ("[TOOL_CALLS]" + "a" * 3000, ()),
    "deepseek-name": ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + "get_weather" * 300, ()),
    "harmony-recipient": ("<|channel|>commentary to=functions." + "x" * 3000, ()),
    "kimi-id": ("<|tool_call_begin|>functions." + "x" * 3000, ()),
    "glm-name": ("<tool_call>" + "get" * 1000, ("json-mix",)),
    "hermes-blanks": ("<tool_call>" + " " * 3000 + "x", ("json-mix",)),
    "invoke-name": ('<invoke name="' + "a" * 3000, ()),
    "marker-storm": ("[TOOL_CALLS]<|python_tag|>```tool_code<|channel|>" * 100, ()),
}
# Longer than any open tag a stream holds back, with its blanks.
MAX_HELD_CHARS = 600


@pytest.mark.parametrize(
    ("protocol", "source"),
    [
        pytest.param(protocol, source, id=f"{name}-{protocol}")
        for name, (source, not_in) in NEVER_ENDING.items()
        for protocol in PROTOCOL_NAMES
        if protocol not in not_in
    ],
)
def test_a_dialect_tag_that_never_ends_holds_back_a_bounded_suffix(
    protocol: str, source: str
) -> None:
    result = run(protocol, "Let me see. " + source, chunks=1)
    check_contract(result)
    released = 0
    for fed, batch in enumerate(result.batches[:-1], start=1):
        released += sum(len(part.text) for part in batch if isinstance(part, TextDelta))
        assert fed - released <= MAX_HELD_CHARS, fed
