"""The lines of the tool results a request holds, as the model read them: a call form whose
line the model writes again verbatim is the model quoting what it read (a log, a file, a
prompt template), not acting. Only lines that hold where a call form may begin (`<`, `[`)
are kept, with the text before each such place and the tag there, so that a call form
whose line begins like one (the same text before it, the same tag) is held until its line
shows whether it is that line; any other call streams as before.

>>> lines = QuotedLines.of(['INFO run <read_file><path>a</path></read_file>'])
>>> lines.may_quote("INFO run ", "<read_file>")
True
>>> lines.quotes("INFO run <read_file><path>a</path></read_file>")
True"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# A tool result's lines past these bounds are not kept: a 10 MiB result of short lines must
# not cost more than a glance, and a call form is rarely far into a long line.
MAX_QUOTED_LINES = 20_000
MAX_QUOTED_LINE_CHARS = 4_096
# The places per line where a call form may begin that are remembered.
MAX_OPENINGS_PER_LINE = 4
_OPENING_CHARS = ("<", "[")
# Found by one search from line to line: the lines holding neither are never looked at one
# by one (10 MiB of plain lines took 0.25 s of CPU split into lines and tested each).
_OPENING = re.compile(r"[<\[]")
# The tag a call form begins with, as far as any format's first token goes: `<tool_call>`,
# `<read_file>`, `[TOOL_CALLS]`, `<|tool_call>`.
_TAG = re.compile(r"<[^<>\s]{0,64}>?|\[[^\[\]\s]{0,64}\]?")


@dataclass(frozen=True, slots=True)
class QuotedLines:
    """Lines read in tool results, stripped, and the stripped text before each place in them
    where a call form may begin."""

    lines: frozenset[str] = field(default_factory=frozenset)
    prefixes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, results: Iterable[str]) -> QuotedLines:
        lines: set[str] = set()
        prefixes: set[str] = set()
        for result in results:
            for line in _lines_with_an_opening(result):
                if len(lines) >= MAX_QUOTED_LINES:
                    return cls(frozenset(lines), frozenset(prefixes))
                stripped = line.strip()
                if len(stripped) <= MAX_QUOTED_LINE_CHARS:
                    lines.add(stripped)
                    prefixes.update(_prefixes(stripped))
        return cls(frozenset(lines), frozenset(prefixes))

    def may_quote(self, before: str, opening: str) -> bool:
        """Whether a call form opened by `opening` after `before` (its line so far) may
        stand on a line read."""
        return bool(self.prefixes) and _key(before.strip(), opening) in self.prefixes

    def quotes(self, line: str) -> bool:
        """Whether `line` is one read in a tool result."""
        return line.strip() in self.lines


NO_QUOTED_LINES = QuotedLines()


def _lines_with_an_opening(text: str) -> Iterator[str]:
    """The lines of `text` (split at line feeds) that hold `<` or `[`."""
    at = 0
    while (found := _OPENING.search(text, at)) is not None:
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.start())
        end = len(text) if end == -1 else end
        yield text[start:end]
        at = end + 1


def _prefixes(line: str) -> Iterable[str]:
    found = 0
    for at, char in enumerate(line):
        if char in _OPENING_CHARS:
            yield _key(line[:at].rstrip(), line[at:])
            found += 1
            if found == MAX_OPENINGS_PER_LINE:
                return


def _key(before: str, opening: str) -> str:
    tag = _TAG.match(opening)
    return f"{before}\0{tag.group() if tag else opening[:1]}"
