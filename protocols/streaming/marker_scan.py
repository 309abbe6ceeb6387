"""The one search the tag loop makes of a text for literal tokens: the first dialect marker
in it, or, at its end, the beginning of a token still being written (a marker, a think tag,
a protocol's literal open tag), which must be held back. One search costs what the search
for one token did: its alternatives begin with distinct characters, so the regex engine
skips to the few that can begin any."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

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
