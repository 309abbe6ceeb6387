"""Several JSON values in one text, as models write calls one after another (`{..}{..}`, one
per line, comma- or `;`-separated): cut apart at the top level and each read relaxed
(`relaxed_json`), whole, or followed as the text streams (`TopLevelReader`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .relaxed_json import (
    MAX_NESTING_DEPTH,
    NotStrict,
    RelaxedJSONError,
    RelaxedParseBudget,
    parse_relaxed_json,
    strict_value,
    strip_code_fence,
    walk_tokens,
)

_WORD = re.compile(r"[^\s,;]+")  # a value written as code, between separators (`;`: Llama's)


class TopLevelReader:
    """`_split_values`' view of a text as it streams: the tokens of `walk_tokens` that lie
    between top-level values, as (kind, text) with kind a token's group name. An `open` token
    starts a value; what lies inside values is not reported; a string or comment is reported
    at its start, by its opening characters alone. Each character is looked at once, so
    following a stream costs linear time. Raises RelaxedJSONError past MAX_NESTING_DEPTH, as
    `walk_tokens` does.
    """

    __slots__ = ("_comment_end", "_depth", "_escaped", "_quote", "_slash", "_star")

    def __init__(self) -> None:
        self._depth = 0  # brackets open
        self._quote: str | None = None  # inside a string this quote ends
        self._escaped = False  # that string's last character so far was a backslash
        self._comment_end: str | None = None  # inside a comment this ends ("\n" or "*/")
        self._star = False  # that block comment's last character so far was a `*`
        self._slash = False  # the text so far ended with a `/` that may begin a comment

    def feed(self, text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        if self._slash:
            text, self._slash = "/" + text, False
        position = 0
        while position < len(text):
            if self._quote is not None:
                position = self._in_string(text, position)
            elif self._comment_end is not None:
                position = self._in_comment(text, position)
            else:
                position = self._in_code(text, position, tokens)
        return tokens

    def _in_string(self, text: str, position: int) -> int:
        if self._escaped:
            self._escaped = False
            return position + 1
        run = _STRING_RUN[self._quote or '"'].match(text, position)
        assert run is not None  # the pattern matches the empty string
        position = run.end()
        if position == len(text):
            return position
        if text[position] == "\\":  # it escapes the next character, whatever that is
            if position + 1 == len(text):
                self._escaped = True
                return len(text)
            return position + 2
        self._quote = None
        return position + 1

    def _in_comment(self, text: str, position: int) -> int:
        end_mark = self._comment_end or ""
        if end_mark == "\n":  # a line comment ends before its line break, which is code
            end = text.find("\n", position)
            if end == -1:
                return len(text)
            self._comment_end = None
            return end
        if self._star and text.startswith("/", position):
            end = position
        else:
            end = text.find(end_mark, position)
            if end == -1:
                self._star = text.endswith("*")
                return len(text)
            end += 1
        self._comment_end, self._star = None, False
        return end + 1

    def _in_code(self, text: str, position: int, tokens: list[tuple[str, str]]) -> int:
        top = self._depth == 0
        run = _CODE_RUN.match(text, position)
        assert run is not None  # the pattern matches the empty string
        if run.end() > position:
            if top:
                tokens.append(("code", run.group()))
            return run.end()
        char = text[position]
        if char in "\"'":
            self._quote = char
            kind = "string"
        elif char == "/":
            follower = text[position + 1 : position + 2]
            if not follower:
                self._slash = True
                return position + 1
            if follower in "/*":
                self._comment_end = "\n" if follower == "/" else "*/"
                char += follower
                kind = "comment"
            else:
                kind = "code"
        elif char in "[{":
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise RelaxedJSONError(f"nested deeper than {MAX_NESTING_DEPTH} levels")
            kind = "open"
        elif self._depth:
            self._depth -= 1
            return position + 1
        else:
            kind = "close"  # a stray closer: a value of its own, for the parser to reject
        if top:
            tokens.append((kind, char))
        return position + len(char)


# The runs `TopLevelReader` takes in one step: code up to a token's first character, and a
# string's characters up to its quote or a backslash.
_CODE_RUN = re.compile(r"""[^"'/\[\]{}]*""")
_STRING_RUN = {quote: re.compile(rf"[^{quote}\\]*") for quote in "\"'"}


def _split_values(text: str) -> Iterator[str]:
    """The source of each top-level value, cut at whitespace, commas and comments between."""
    value_start: int | None = None  # where the open bracket of the current value is
    for token, owed in walk_tokens(text):
        kind = token.lastgroup
        if value_start is not None:
            if not owed:
                yield text[value_start : token.end()]
                value_start = None
        elif kind == "open":
            value_start = token.start()
        elif kind == "code":
            # One by one: the parses stop at the budget, the words need not all be cut first.
            yield from (word[0] for word in _WORD.finditer(token[0]))
        elif kind != "comment":
            yield token[0]  # a string, or a stray closer for the parser to reject
    if value_start is not None:
        yield text[value_start:]  # cut off; parse_relaxed_json closes it unless complete_only


def parse_json_values(
    text: str, *, complete_only: bool = False, budget: RelaxedParseBudget | None = None
) -> list[Any]:
    """Every JSON value in `text` (`{..}{..}`, one per line, comma-separated), each relaxed.

    Raises RelaxedJSONError when any part fails to parse (with `complete_only`, when the last
    one is cut off) or there is no value at all. All the parses are charged to one budget.
    """
    budget = budget or RelaxedParseBudget()
    text = strip_code_fence(text)
    whole = strict_value(text, budget)  # the common case, one value, read in one step
    if not isinstance(whole, NotStrict):
        return [whole]
    values = [
        parse_relaxed_json(source, complete_only=complete_only, budget=budget)
        for source in _split_values(text)
    ]
    if not values:
        raise RelaxedJSONError("no JSON value in the text")
    return values
