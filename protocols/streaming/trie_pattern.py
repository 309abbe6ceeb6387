"""A regex that matches one of many literal strings (declared tool names, dialect markers),
written as a trie so that the engine's work at each position does not grow with their
number."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

# How deep `names_pattern` nests its trie; names that still share a path past it are listed
# flat. Real names part within a few levels, and the bound keeps a hostile list of names
# (`a`, `aa`, `aaa`...) from nesting the pattern deeper than the regex compiler recurses.
MAX_NAME_TRIE_DEPTH = 32


def names_pattern(names: Iterable[str]) -> str:
    """A regex matching one of `names`, written as a trie (`read(?:_file|_dir)?`): at each
    character the engine tries one branch per distinct next character, where an alternation
    of the names tries every name (3,000 declared tools made each `<` cost 3,000 tries).
    Longer names are tried first, as in an alternation sorted longest first."""
    return _trie_pattern(sorted(set(names)), MAX_NAME_TRIE_DEPTH)


def _trie_pattern(names: list[str], depth_left: int) -> str:
    """`names` (sorted, distinct, "" for a name that ends here) as one group."""
    ends_here = names[0] == ""
    rest = names[1:] if ends_here else names
    if depth_left == 0:
        branches = [re.escape(name) for name in sorted(rest, key=len, reverse=True)]
    else:
        branches = []
        for _, same_start in itertools.groupby(rest, key=lambda name: name[0]):
            group = list(same_start)
            shared = _shared_prefix(group[0], group[-1])  # sorted: the first and last differ most
            branch = _trie_pattern([name[len(shared) :] for name in group], depth_left - 1)
            branches.append(re.escape(shared) + branch)
    if not branches:
        return ""
    group_pattern = "(?:" + "|".join(branches) + ")"
    return group_pattern + "?" if ends_here else group_pattern  # greedy: longer names first


def _shared_prefix(first: str, last: str) -> str:
    for index, (a, b) in enumerate(zip(first, last, strict=False)):
        if a != b:
            return first[:index]
    return first[: min(len(first), len(last))]
