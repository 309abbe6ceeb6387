"""Reading stays linear however the model writes: floods of every dialect's tags (a call's
opening repeated, one of its tags repeated after it, whole calls repeated), read as a whole
answer and as a stream, cost four times the work for four times the text.

Work is counted, not timed: the characters of text handed over where the parser's pieces
meet (each reader's `feed`, each call scanner's `consume`, the text the tag loop looks for
tags in). Handing the rest of the text on at every tag, as reading a whole answer at once
did, counts the square of the text."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus_cases import Case, corpus
from parser_harness import GROWTH, MAX_WORK_RATIO, PROTOCOL_NAMES, TOOLS, text_handed_over

from protocols import (
    ParserOptions,
    described_dialect,
    get_protocol,
    schema_dialect,
    template_dialect,
)
from protocols.streaming.dialect_forms import Dialect, dialect_names
from protocols.streaming.think_tags import THINK_TAGS

# Three of the longest units (338 characters); the square of text handed on at every tag or
# held text scanned again at every 16-character delta outweighs linear reading tens of times
# over at this size already.
SMALL_FLOOD_CHARS = 1_000
# The tags of the corpus's calls: markup, bracket tokens, special tokens, a JSON body's start.
_TAG = re.compile(r"<[^<>\n]{1,48}>|\[[A-Z_]{3,20}\]|<｜[^｜]{1,32}｜>|\{")
DIALECTS = Path(__file__).parent / "dialects"
CASES = corpus(DIALECTS / "dialect_corpus")
# Formats given as data to a route (`described_format`, `response_schema`,
# `response_template`): their corpora,
# and the dialects they are read with.
DESCRIBED = (
    {
        name: described_dialect(name, description)
        for name, description in tomllib.loads(
            (DIALECTS / "described_corpus" / "formats.toml").read_text("utf-8")
        )["formats"].items()
    }
    | {
        path.stem: schema_dialect(path.stem, json.loads(path.read_text("utf-8")))
        for path in (DIALECTS / "schema_corpus").glob("*.json")
    }
    | {
        path.stem: template_dialect(path.stem, json.loads(path.read_text("utf-8")))
        for path in (DIALECTS / "template_corpus").glob("*.json")
    }
)
DESCRIBED_CASES = [
    *corpus(DIALECTS / "described_corpus"),
    *corpus(DIALECTS / "schema_corpus"),
    *corpus(DIALECTS / "template_corpus"),
]


def _opening_marker(case: Case) -> str:
    """The first of its dialect's markers the case's output holds ("" when none does)."""
    dialect = DESCRIBED.get(case.group) or Dialect.registered.get(case.group)
    found = [
        (at, form.marker)
        for form in (dialect.forms if dialect is not None else ())
        if (at := case.output.find(form.marker)) != -1
    ]
    return min(found)[1] if found else ""


def _floods() -> Iterator[tuple[str, str, str, str]]:
    """(id, the text repeated, what comes before it, the route's own format or "") for each
    dialect's first call opened by each of its markers."""
    seen: set[tuple[str, str]] = set()
    openings: set[tuple[str, str]] = set()
    dialect_names()  # registers the dialects
    for case in [*CASES, *DESCRIBED_CASES]:
        marker = _opening_marker(case)
        if not case.expects("calls", "morph-xml") or (case.group, marker) in openings:
            continue
        openings.add((case.group, marker))
        shapes = [(case.output, "")]
        if marker:
            shapes.append((marker, ""))  # the marker alone, repeated
        for tag in _TAG.finditer(case.output):
            shapes.append((case.output[: tag.end()], ""))  # the call's opening, repeated
            shapes.append((tag.group(), case.output[: tag.start()]))  # one tag, repeated
        for unit, before in shapes:
            if (unit, before) not in seen:
                seen.add((unit, before))
                own = case.group if case.group in DESCRIBED else ""
                yield f"{case.group}-{len(seen)}", unit, before, own


def _think_floods() -> Iterator[tuple[str, str, str, str]]:
    """(id, the text repeated, what comes before it) for each think tag pair: openings, a
    block closed and opened again, and call openings inside a block left open."""
    for at, (opening, closing) in enumerate(THINK_TAGS.items()):
        yield f"think-{at}-opening", opening, "", ""
        yield f"think-{at}-closed-and-opened", closing + opening + "x", "", ""
        yield f"think-{at}-call-openings-inside", "<tool_call>{", opening, ""
        yield f"think-{at}-opening-and-call-opening", opening + "<tool_call>{", "", ""


FLOODS = [*_floods(), *_think_floods()]


def text_work(protocol: str, text: str, step: int, own: str = "") -> int:
    """Characters of text handed over at the parser's seams while reading `text` fed in
    `step`-character deltas (see `text_handed_over`)."""
    with text_handed_over() as handed:
        options = ParserOptions(dialects=(DESCRIBED[own],) if own else ())
        parser = get_protocol(protocol).stream_parser(TOOLS, options=options)
        for start in range(0, len(text), step):
            parser.feed(text[start : start + step])
        parser.finish()
        return handed()


def _flood(unit: str, before: str, size: int) -> str:
    return before + unit * (size // len(unit) + 1)


@pytest.mark.parametrize("step", [None, 16], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize(
    ("unit", "before", "own"), [f[1:] for f in FLOODS], ids=[f[0] for f in FLOODS]
)
def test_a_flood_costs_linear_work(
    protocol: str, unit: str, before: str, own: str, step: int | None
) -> None:
    small = _flood(unit, before, SMALL_FLOOD_CHARS)
    large = _flood(unit, before, SMALL_FLOOD_CHARS * GROWTH)
    small_work = text_work(protocol, small, step or len(small), own)
    assert text_work(protocol, large, step or len(large), own) < small_work * MAX_WORK_RATIO
