"""The one search the tag loop makes of a text for literal tokens: the first dialect marker
in it, or, at its end, the beginning of a token still being written (a marker, a think tag,
a protocol's literal open tag), which must be held back. One search costs what the search
for one token did: its alternatives begin with distinct characters, so the regex engine
skips to the few that can begin any. The call scanners hold back the ends of their own
tokens with the two smaller searches below it (`partial_token_start`,
`unclosed_tag_start`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence

from .trie_pattern import names_pattern


class MarkerScan:
    """`search(text, start[, end])` finds the first of: a complete marker (one of
    `markers`), or a suffix that could still grow into one of the markers or `tokens`.
    Before `end`, a suffix "at the end" is one cut there: such a hit means nothing."""

    __slots__ = ("markers", "search")

    def __init__(self, markers: Collection[str], tokens: Collection[str]) -> None:
        self.markers = frozenset(markers)
        everything = {*markers, *tokens}
        branches = []
        for first in sorted({token[0] for token in everything}):
            complete = [marker[1:] for marker in self.markers if marker[0] == first]
            begun = {
                token[1:end]
                for token in everything
                if token[0] == first
                for end in range(2, len(token))
            }
            # A suffix: the longest path along the trie, then the end (atomic: a shorter path
            # ends no nearer to it, so the engine need not try them all).
            at_end = (f"(?>{names_pattern(begun)})?" if begun else "") + r"\Z"
            alternatives = [names_pattern(complete), at_end] if complete else [at_end]
            branches.append(re.escape(first) + f"(?:{'|'.join(alternatives)})")
        # The compiled pattern's own method, called with no frame between.
        self.search = re.compile("|".join(branches)).search


@functools.lru_cache(maxsize=128)
def marker_scan(markers: frozenset[str], tokens: frozenset[str]) -> MarkerScan:
    return MarkerScan(markers, tokens)


def partial_token_start(text: str, tokens: Sequence[str]) -> int:
    """Where a suffix of `text` that could still grow into one of `tokens` begins
    (len(text) when there is none). Only that suffix has to be held back."""
    start = len(text)
    for token in tokens:
        # A partial token is shorter than the token and begins with its first character.
        index = text.find(token[0], max(0, len(text) - len(token) + 1))
        while index != -1 and index < start:
            if token.startswith(text[index:]):
                start = index
                break
            index = text.find(token[0], index + 1)
    return start


def unclosed_tag_start(text: str, window: int, start: int = 0) -> int:
    """Where the last `<` of `text[start:]` begins if no `>` follows it yet and it lies within
    the last `window` characters (a longer run is prose, not a tag); else len(text)."""
    bracket = text.rfind("<", max(start, len(text) - window))
    return bracket if bracket != -1 and ">" not in text[bracket:] else len(text)
