"""Reading stays linear however the model writes: floods of every dialect's tags (a call's
opening repeated, one of its tags repeated after it, whole calls repeated), read as a whole
answer and as a stream, cost four times the work for four times the text.

Work is counted, not timed: the characters of text handed over where the parser's pieces
meet (each reader's `feed`, each call scanner's `consume`, the text the tag loop looks for
tags in). Handing the rest of the text on at every tag, as reading a whole answer at once
did, counts the square of the text."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from corpus_cases import corpus
from parser_harness import PROTOCOL_NAMES, TOOLS

import protocols
from protocols import get_protocol
from protocols.streaming.think_tags import THINK_TAGS

PROTOCOLS = str(Path(protocols.__file__).parent)
# The functions a text is handed to whole, each under the parameter name `text`.
SEAMS = frozenset({"feed", "consume", "_locate"})
# What a flood grows by between the two readings compared, and how much more work than
# that linear reading may take (piece boundaries fall differently; a square would be 16x).
GROWTH = 4
MAX_WORK_RATIO = 6.0
SMALL_FLOOD_CHARS = 2_000
# The tags of the corpus's calls: markup, bracket tokens, special tokens, a JSON body's start.
_TAG = re.compile(r"<[^<>\n]{1,48}>|\[[A-Z_]{3,20}\]|<｜[^｜]{1,32}｜>|\{")
CASES = corpus(Path(__file__).parent / "dialects" / "dialect_corpus")


def _floods() -> Iterator[tuple[str, str, str]]:
    """(id, the text repeated, what comes before it) for each dialect's first call."""
    seen: set[tuple[str, str]] = set()
    dialects: set[str] = set()
    for case in CASES:
        if not case.expects("calls", "morph-xml") or case.group in dialects:
            continue
        dialects.add(case.group)
        shapes = [(case.output, "")]
        for tag in _TAG.finditer(case.output):
            shapes.append((case.output[: tag.end()], ""))  # the call's opening, repeated
            shapes.append((tag.group(), case.output[: tag.start()]))  # one tag, repeated
        for unit, before in shapes:
            if (unit, before) not in seen:
                seen.add((unit, before))
                yield f"{case.group}-{len(seen)}", unit, before


def _think_floods() -> Iterator[tuple[str, str, str]]:
    """(id, the text repeated, what comes before it) for each think tag pair: openings, a
    block closed and opened again, and call openings inside a block left open."""
    for at, (opening, closing) in enumerate(THINK_TAGS.items()):
        yield f"think-{at}-opening", opening, ""
        yield f"think-{at}-closed-and-opened", closing + opening + "x", ""
        yield f"think-{at}-call-openings-inside", "<tool_call>{", opening
        yield f"think-{at}-opening-and-call-opening", opening + "<tool_call>{", ""


FLOODS = [*_floods(), *_think_floods()]


def text_work(protocol: str, text: str, step: int) -> int:
    """Characters of text handed over at the SEAMS while reading `text` fed in
    `step`-character deltas."""
    total = 0

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal total
        code = frame.f_code
        if event == "call" and code.co_name in SEAMS and code.co_filename.startswith(PROTOCOLS):
            text = frame.f_locals.get("text")
            total += len(text) if isinstance(text, str) else 0

    parser = get_protocol(protocol).stream_parser(TOOLS)
    sys.setprofile(count)
    try:
        for start in range(0, len(text), step):
            parser.feed(text[start : start + step])
        parser.finish()
    finally:
        sys.setprofile(None)
    return total


def _flood(unit: str, before: str, size: int) -> str:
    return before + unit * (size // len(unit) + 1)


@pytest.mark.parametrize("step", [None, 16], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize(("unit", "before"), [f[1:] for f in FLOODS], ids=[f[0] for f in FLOODS])
def test_a_flood_costs_linear_work(protocol: str, unit: str, before: str, step: int | None) -> None:
    small = _flood(unit, before, SMALL_FLOOD_CHARS)
    large = _flood(unit, before, SMALL_FLOOD_CHARS * GROWTH)
    small_work = text_work(protocol, small, step or len(small))
    assert text_work(protocol, large, step or len(large)) < small_work * MAX_WORK_RATIO
