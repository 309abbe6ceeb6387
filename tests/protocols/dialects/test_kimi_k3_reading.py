"""Kimi K3's section is read once it closes or the output ends, by patterns that look for
each call's (and argument's) close: they look only through the last close there is, so
openings that never close cost one look each, not a search through the rest of the text."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from parser_harness import check_contract, run

from protocols.dialects import kimi_k3

CALL = (
    '<|open|>call tool="read_file" index="1"<|sep|>'
    '<|open|>argument key="path" type="string"<|sep|>a.py<|close|>argument<|sep|>'
    "<|close|>call<|sep|>"
)
UNCLOSED = {
    "calls": '<|open|>call tool="read_file" index="2"<|sep|>',
    "arguments": '<|open|>argument key="path" type="string"<|sep|>',
}


class _CountingPattern:
    """A pattern whose `findall` and `finditer` add up the characters they were asked to
    look through."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._pattern = pattern
        self.searched = 0

    def findall(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        self.searched += min(endpos, len(text)) - pos
        return self._pattern.findall(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[Any]:
        self.searched += min(endpos, len(text)) - pos
        return self._pattern.finditer(text, pos, endpos)


@pytest.mark.parametrize("unclosed", UNCLOSED, ids=list(UNCLOSED))
def test_openings_past_the_last_close_are_not_searched(
    monkeypatch: pytest.MonkeyPatch, unclosed: str
) -> None:
    calls, arguments = _CountingPattern(kimi_k3._CALL), _CountingPattern(kimi_k3._ARGUMENT)
    monkeypatch.setattr(kimi_k3, "_CALL", calls)
    monkeypatch.setattr(kimi_k3, "_ARGUMENT", arguments)
    flood = UNCLOSED[unclosed] * 2_000
    result = run("json-mix", "<|open|>tools<|sep|>" + CALL + flood)
    check_contract(result)
    assert result.call_values == [("read_file", {"path": "a.py"})]
    assert calls.searched <= len(CALL)
    assert arguments.searched <= len(CALL)
